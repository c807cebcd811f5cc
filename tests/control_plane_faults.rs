//! The control plane failing under `serve`: another process holds the home database's write lock
//! for longer than `serve` waits for it, so every write `serve` makes fails for a while. `serve`
//! keeps running, retries, and the workflow completes once the database answers again, its runs
//! one at a time.

mod support;

use std::time::Duration;

use support::things::{self, assert_never_overlapped, reconciled, runs};
use support::{eventually, git_destination_yaml, Kratix};

#[test]
fn serve_outlives_a_control_plane_that_refuses_writes_for_a_while() {
    let mut k = Kratix::new();
    k.start_serve();
    k.apply_yaml(
        &git_destination_yaml("state-store.git", "worker-1", "{env: dev}"),
        &["--timeout", "60"],
    )
    .assert_ok();
    k.apply_yaml(&things::promise(&["a", "b", "c"]), &["--timeout", "60"])
        .assert_ok();
    k.apply_yaml(&things::request("x", 1), &["--no-wait"])
        .assert_ok();

    // Longer than the 5 s a writer waits for the lock, twice over.
    let db = rusqlite::Connection::open(k.home().join("state.db")).expect("open the database");
    db.execute_batch("BEGIN IMMEDIATE")
        .expect("take the write lock");
    std::thread::sleep(Duration::from_secs(12));
    db.execute_batch("ROLLBACK")
        .expect("let go of the write lock");
    drop(db);

    let settled = eventually("x to settle", Duration::from_secs(120), || {
        reconciled(&k, "x")
    });
    assert_eq!(settled["spec"]["size"], 1);
    assert!(
        k.serve_child()
            .is_some_and(|child| matches!(child.try_wait(), Ok(None))),
        "serve is still running:\n{}",
        k.serve_log()
    );
    let log = k.serve_log();
    assert!(
        log.contains("retrying"),
        "serve said it retried failed writes:\n{log}"
    );
    let runs = runs(&k, "x");
    assert_eq!(runs.len(), 3, "{runs:#?}");
    assert_never_overlapped(&runs);
}
