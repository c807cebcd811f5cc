//! One run, one executor: rounds of `reconcile`, `apply` and `wait`, each raced by a second CLI
//! process, with and without `serve`. Every command succeeds, no run of one object overlaps
//! another (read from the PipelineRuns' stored start and completion times), and nothing claims
//! that a run was interrupted when nothing was.
//!
//! `KRATIX_LONG_TESTS=1` runs 200 rounds per case instead of 50.

mod support;

use std::process::Child;
use std::time::Duration;

use support::things::{self, assert_never_overlapped, reconciled, runs, RunInfo, KIND};
use support::{eventually, git_destination_yaml, Kratix};

fn rounds() -> usize {
    if std::env::var_os("KRATIX_LONG_TESTS").is_some() {
        200
    } else {
        50
    }
}

/// What the first process of round `round` does to request `x`, and what the racing second one
/// does (to `y`, or to `x` too).
fn round_commands(round: usize) -> [(Vec<String>, Option<String>); 2] {
    let size = i64::try_from(round).expect("small round") + 2;
    let reconcile = |name: &str| (strings(&["reconcile", KIND, name]), None);
    let apply = |name: &str| {
        (
            strings(&["apply", "-f", "-", "--timeout", "120"]),
            Some(things::request(name, size)),
        )
    };
    let wait = |name: &str| {
        (
            strings(&[
                "wait",
                KIND,
                name,
                "--for",
                "condition=Reconciled",
                "--timeout",
                "120",
            ]),
            None,
        )
    };
    match round % 3 {
        0 => [reconcile("x"), apply("y")],
        1 => [apply("x"), reconcile("y")],
        _ => [wait("x"), reconcile("x")],
    }
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(std::string::ToString::to_string).collect()
}

fn race_rounds(with_serve: bool) {
    let mut k = Kratix::new();
    if with_serve {
        k.start_serve();
    }
    k.apply_yaml(
        &git_destination_yaml("state-store.git", "worker-1", "{env: dev}"),
        &["--timeout", "60"],
    )
    .assert_ok();
    k.apply_yaml(&things::promise(&["a", "b", "c"]), &["--timeout", "60"])
        .assert_ok();
    for name in ["x", "y"] {
        k.apply_yaml(&things::request(name, 1), &["--timeout", "60"])
            .assert_ok();
    }

    let mut commands_run = 0;
    for round in 0..rounds() {
        let children: Vec<(String, Child)> = round_commands(round)
            .into_iter()
            .map(|(args, stdin)| {
                let shown = args.join(" ");
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                (
                    shown,
                    k.spawn_with_stdin(&args, stdin.as_deref().unwrap_or_default()),
                )
            })
            .collect();
        for (shown, child) in children {
            let out = child.wait_with_output().expect("kratix-rs runs");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                out.status.success(),
                "round {round}: `{shown}` failed ({}):\n{stderr}",
                out.status
            );
            assert!(
                !stderr.contains("interrupted"),
                "round {round}: `{shown}` says a run was interrupted:\n{stderr}"
            );
            commands_run += 1;
        }
    }

    for name in ["x", "y"] {
        eventually(
            &format!("{name} to settle"),
            Duration::from_secs(60),
            || reconciled(&k, name),
        );
        let runs = runs(&k, name);
        assert!(runs.len() >= 3, "{name} ran its pipelines: {runs:#?}");
        assert_never_overlapped(&runs);
    }
    if with_serve {
        let log = k.serve_log();
        assert!(
            !log.contains("interrupted"),
            "serve says a run was interrupted:\n{log}"
        );
    }
    eprintln!(
        "{} rounds, {commands_run} commands, with serve: {with_serve}",
        rounds()
    );
}

#[test]
fn racing_commands_without_serve_never_run_one_run_twice() {
    race_rounds(false);
}

#[test]
fn racing_commands_beside_serve_never_run_one_run_twice() {
    race_rounds(true);
}

/// `serve` stopped with SIGTERM mid-run gives the run back; the next `serve` runs it from the start
/// without calling it interrupted, and it runs once to completion.
#[test]
fn a_stopping_serve_gives_its_runs_back() {
    let mut k = Kratix::new().with_env("KRATIX_SHUTDOWN_GRACE", "0");
    k.start_serve();
    k.apply_yaml(
        &git_destination_yaml("state-store.git", "worker-1", "{env: dev}"),
        &["--timeout", "60"],
    )
    .assert_ok();
    let marker_dir = support::sandbox_visible_dir();
    let marker = marker_dir.path().join("go");
    // The pipeline renders its file only once the test lets it.
    let waits = format!(
        "while [ ! -e {} ]; do sleep 0.05; done; exec {}",
        marker.display(),
        things::step_command().join(" ")
    );
    let promise = things::promise_with(&[("a", vec!["sh".into(), "-c".into(), waits])]);
    k.apply_yaml(&promise, &["--timeout", "60"]).assert_ok();
    k.apply_yaml(&things::request("x", 1), &["--no-wait"])
        .assert_ok();
    eventually("a to run", Duration::from_secs(60), || {
        runs(&k, "x").into_iter().find(|r| r.phase == "Running")
    });
    k.stop_serve();
    let after_stop = runs(&k, "x");
    assert!(
        after_stop.iter().all(|r| r.phase == "Pending"),
        "the run was given back: {after_stop:#?}"
    );
    std::fs::write(&marker, "go").expect("marker");
    k.start_serve();
    eventually("x to settle", Duration::from_secs(60), || {
        reconciled(&k, "x")
    });
    let runs = runs(&k, "x");
    assert_eq!(runs.len(), 1, "{runs:#?}");
    assert_never_overlapped(&runs);
    let log = k.serve_log();
    assert!(log.contains("stopped before the run finished"), "{log}");
    assert!(!log.contains("interrupted"), "{log}");
}

/// Many requests in one `apply`, with three pipelines each that take a moment: runs of different
/// requests run at once, never more than `KRATIX_MAX_PARALLEL`, and the runs of one request
/// still one after another.
#[test]
fn many_objects_run_concurrently_up_to_the_limit_and_each_in_sequence() {
    const LIMIT: usize = 3;
    let k = Kratix::new().with_env("KRATIX_MAX_PARALLEL", &LIMIT.to_string());
    k.apply_yaml(
        &git_destination_yaml("state-store.git", "worker-1", "{env: dev}"),
        &["--timeout", "60"],
    )
    .assert_ok();
    let slow = format!("sleep 0.2; exec {}", things::step_command().join(" "));
    let command = vec!["sh".to_string(), "-c".to_string(), slow];
    let promise = things::promise_with(&[
        ("a", command.clone()),
        ("b", command.clone()),
        ("c", command),
    ]);
    k.apply_yaml(&promise, &["--timeout", "60"]).assert_ok();
    let names: Vec<String> = (0..12).map(|i| format!("r{i}")).collect();
    let requests: Vec<String> = names.iter().map(|name| things::request(name, 1)).collect();
    k.apply_yaml(&requests.join("\n---\n"), &["--timeout", "300"])
        .assert_ok();

    let mut all = Vec::new();
    for name in &names {
        assert!(reconciled(&k, name).is_some(), "{name} settled");
        let runs = runs(&k, name);
        assert_eq!(runs.len(), 3, "{name} ran each pipeline once: {runs:#?}");
        assert_never_overlapped(&runs);
        all.extend(runs);
    }
    let most = most_at_once(&all);
    assert!(
        (2..=LIMIT).contains(&most),
        "between 2 and {LIMIT} runs at once, not {most}: {all:#?}"
    );
}

/// Many requests reconciled by many workers of a `serve` at once, then all changed again while
/// their first runs are going: each request's pipelines ran once per spec, in the Promise's
/// order, never two at once, and every request settled on its newest spec.
#[test]
fn many_workers_keep_each_objects_pipelines_in_order_and_apart() {
    let mut k = Kratix::new()
        .with_env("KRATIX_WORKERS", "8")
        .with_env("KRATIX_MAX_PARALLEL", "4");
    k.start_serve();
    k.apply_yaml(
        &git_destination_yaml("state-store.git", "worker-1", "{env: dev}"),
        &["--timeout", "60"],
    )
    .assert_ok();
    let slow = format!("sleep 0.05; exec {}", things::step_command().join(" "));
    let command = vec!["sh".to_string(), "-c".to_string(), slow];
    let promise = things::promise_with(&[
        ("a", command.clone()),
        ("b", command.clone()),
        ("c", command),
    ]);
    k.apply_yaml(&promise, &["--timeout", "60"]).assert_ok();
    let names: Vec<String> = (0..30).map(|i| format!("w{i}")).collect();
    let requests = |size: i64| -> String {
        names
            .iter()
            .map(|name| things::request(name, size))
            .collect::<Vec<_>>()
            .join("\n---\n")
    };
    k.apply_yaml(&requests(1), &["--no-wait"]).assert_ok();
    std::thread::sleep(Duration::from_millis(500));
    k.apply_yaml(&requests(2), &["--timeout", "300"])
        .assert_ok();

    for name in &names {
        let obj = reconciled(&k, name).unwrap_or_else(|| panic!("{name} settled"));
        assert_eq!(obj["spec"]["size"], 2, "{name} settled on its newest spec");
        let runs = runs(&k, name);
        assert_never_overlapped(&runs);
        let mut hashes: Vec<&str> = runs.iter().map(|r| r.hash.as_str()).collect();
        hashes.dedup();
        for hash in hashes {
            let pipelines: Vec<&str> = runs
                .iter()
                .filter(|r| r.hash == hash)
                .map(|r| r.pipeline.as_str())
                .collect();
            // The first spec's workflow may have been cut short by the second; never reordered.
            assert!(
                ["a", "b", "c"].starts_with(&pipelines) && !pipelines.is_empty(),
                "{name}: pipelines of one spec ran in order, once each: {runs:#?}"
            );
        }
        let newest: Vec<&RunInfo> = runs
            .iter()
            .filter(|r| r.hash == runs[runs.len() - 1].hash)
            .collect();
        assert_eq!(
            newest.len(),
            3,
            "{name} ran every pipeline for its newest spec: {runs:#?}"
        );
        assert!(newest.iter().all(|r| r.phase == "Succeeded"), "{runs:#?}");
    }
}

/// The most runs that were running at one instant (a run ending as another starts does not
/// count as both).
fn most_at_once(runs: &[things::RunInfo]) -> usize {
    let mut events: Vec<(jiff::Timestamp, i32)> = Vec::new();
    for run in runs {
        let (Some(start), Some(end)) = (run.start, run.completion) else {
            continue;
        };
        events.push((start, 1));
        events.push((end, -1));
    }
    // Ends before starts at the same instant.
    events.sort();
    let (mut now, mut most) = (0i32, 0i32);
    for (_, step) in events {
        now += step;
        most = most.max(now);
    }
    usize::try_from(most).unwrap_or(0)
}
