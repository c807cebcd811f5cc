//! A Git server that accepts connections and then never answers: operations fail as
//! unreachable after the handle's timeout instead of hanging, later ones fail at once while
//! the stuck one still waits, and the handle works again once that one ends.

use std::time::Duration;

use statestores::error_chain::ErrorChain;
use statestores::{Change, Error, Git, GitOptions, Key, StateStore, WriteInfo};
use testkit::SilentServer;

/// Only guards against a hang (the bug this file is about): far longer than any timeout here.
const HANG_GUARD: Duration = Duration::from_secs(120);

async fn write_one(git: &Git) -> statestores::Result<statestores::WriteOutcome> {
    let changes = vec![Change::Put(
        Key::parse("worker/a.yaml").expect("key"),
        "a: 1\n".into(),
    )];
    let info = WriteInfo {
        message: "Update from: test".into(),
        author_name: "kratix".into(),
        author_email: String::new(),
    };
    tokio::time::timeout(HANG_GUARD, git.write(&changes, &info))
        .await
        .expect("the write returned instead of hanging")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_never_answers_fails_writes_as_unreachable_instead_of_hanging() {
    let server = SilentServer::start();
    let mut options = GitOptions::new(format!("git://127.0.0.1:{}/state.git", server.port), "main");
    options.timeout = Duration::from_secs(2);
    let git = Git::open(options).expect("open");

    let first = write_one(&git).await.expect_err("nothing answers");
    assert!(matches!(first, Error::Unreachable { .. }), "{first:?}");
    let text = ErrorChain(&first).to_string();
    assert!(text.contains("did not answer within 2s"), "{text}");
    assert!(
        text.contains(&format!("127.0.0.1:{}", server.port)),
        "{text}"
    );

    // The first one still waits on the server: the next fails at once, saying so.
    let second = git.check_access();
    let second = tokio::time::timeout(HANG_GUARD, second)
        .await
        .expect("returned")
        .expect_err("still stuck");
    assert!(matches!(second, Error::Unreachable { .. }), "{second:?}");
    assert!(
        ErrorChain(&second)
            .to_string()
            .contains("an earlier operation is still waiting"),
        "{}",
        ErrorChain(&second)
    );

    // Once the server hangs up, the stuck operation ends and the handle is usable again: the
    // next failure is the plain one of a server that is gone.
    server.hang_up();
    let third = tokio::time::timeout(HANG_GUARD, async {
        loop {
            let err = git.check_access().await.expect_err("no server");
            if !ErrorChain(&err)
                .to_string()
                .contains("an earlier operation")
            {
                return err;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the stuck operation ended");
    assert!(matches!(third, Error::Unreachable { .. }), "{third:?}");
}

/// A working server is unaffected by the timeout, and a handle's writes still land.
#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_answers_is_written_within_the_timeout() {
    let daemon = testkit::GitDaemon::start().expect("git daemon");
    let bare = daemon.bare_repo("state.git").expect("bare repository");
    let mut options = GitOptions::new(daemon.url("state.git"), "main");
    options.timeout = Duration::from_secs(30);
    let git = Git::open(options).expect("open");
    let outcome = write_one(&git).await.expect("written");
    assert!(outcome.version.is_some());
    assert_eq!(
        testkit::git(&["show", "main:worker/a.yaml"], &bare),
        "a: 1\n"
    );
}
