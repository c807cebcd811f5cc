//! Whole workflows played step by step against the decisions.

use crate::controllers::workflow::decide::tests::*;

#[test]
fn update_while_running_drops_the_rest_of_the_old_run() {
    let mut world = World::new(ABC, "h1");
    world.start(0, StartReason::FirstRun);
    world.succeed();
    world.start(1, StartReason::Next);

    // The request is updated while b runs: nothing starts in parallel.
    world.hash = "h2".into();
    assert_eq!(world.step(), Step::Wait);
    assert_eq!(
        pipeline_statuses(Action::Configure, &world.pipelines, &world.runs, "h2", true)
            .iter()
            .map(|s| s.phase)
            .collect::<Vec<_>>(),
        vec![PipelinePhase::Pending; 3],
        "the new attempt has not started"
    );

    // b finishes: c never runs for the old spec; the new one starts from a.
    world.succeed();
    world.start(0, StartReason::SpecChanged);
    world.succeed();
    world.start(1, StartReason::Next);
    world.succeed();
    world.start(2, StartReason::Next);
    world.succeed();
    let last = world
        .runs
        .last()
        .map(|r| r.sequence)
        .expect("runs were started");
    assert_eq!(
        world.step(),
        Step::Completed {
            last_run_sequence: last
        }
    );
    assert_eq!(
        world.started(),
        [
            "a@h1:configure",
            "b@h1:configure",
            "a@h2:configure",
            "b@h2:configure",
            "c@h2:configure"
        ]
    );
    assert_eq!(
        pipeline_statuses(Action::Configure, &world.pipelines, &world.runs, "h2", true)
            .iter()
            .map(|s| s.phase)
            .collect::<Vec<_>>(),
        vec![PipelinePhase::Succeeded; 3]
    );
}

#[test]
fn failure_is_retried_with_backoff_then_the_workflow_continues() {
    let mut world = World::new(ABC, "h1");
    world.start(0, StartReason::FirstRun);
    world.succeed();
    world.start(1, StartReason::Next);
    world.finish(RunPhase::Failed, None);
    let first_failure = world.now;
    assert_eq!(
        world.step(),
        Step::Failed {
            index: 1,
            pipeline: "b".into(),
            attempts: 1,
            retry_at_ms: Some(first_failure + 5_000)
        }
    );

    world.now = first_failure + 5_000;
    world.start(1, StartReason::Retry);
    world.finish(RunPhase::Failed, None);
    let second_failure = world.now;
    assert_eq!(
        world.step(),
        Step::Failed {
            index: 1,
            pipeline: "b".into(),
            attempts: 2,
            retry_at_ms: Some(second_failure + 10_000)
        }
    );

    world.now = second_failure + 10_000;
    world.start(1, StartReason::Retry);
    world.succeed();
    world.start(2, StartReason::Next);
    world.succeed();
    assert!(matches!(world.step(), Step::Completed { .. }));
    assert_eq!(
        world.started(),
        [
            "a@h1:configure",
            "b@h1:configure",
            "b@h1:configure",
            "b@h1:configure",
            "c@h1:configure"
        ],
        "a is not re-run by retries"
    );
}

#[test]
fn suspension_resumes_at_the_suspended_pipeline() {
    let mut world = World::new(ABC, "h1");
    world.start(0, StartReason::FirstRun);
    world.succeed();
    world.start(1, StartReason::Next);
    world.finish(
        RunPhase::Succeeded,
        Some(Suspension {
            retry_after_ms: Some(30_000),
            message: "later".into(),
        }),
    );
    let suspended_at = world.now;
    assert_eq!(
        world.step(),
        Step::Suspended {
            index: 1,
            retry_at_ms: Some(suspended_at + 30_000),
            message: "later".into()
        }
    );
    world.now = suspended_at + 30_000;
    world.start(1, StartReason::Resume);
    world.succeed();
    world.start(2, StartReason::Next);
    world.succeed();
    assert!(matches!(world.step(), Step::Completed { .. }));
}

#[test]
fn manual_reconciliation_reruns_a_completed_workflow_once() {
    let mut world = World::new(&["a", "b"], "h1");
    world.start(0, StartReason::FirstRun);
    world.succeed();
    world.start(1, StartReason::Next);
    world.succeed();
    assert!(matches!(world.step(), Step::Completed { .. }));

    world.manual = true;
    world.start(0, StartReason::Manual);
    world.succeed();
    world.start(1, StartReason::Next);
    world.succeed();
    let last = world
        .runs
        .last()
        .map(|r| r.sequence)
        .expect("runs were started");
    assert_eq!(
        world.step(),
        Step::Completed {
            last_run_sequence: last
        }
    );
    assert_eq!(world.runs.len(), 4);
}

#[test]
fn delete_workflow_waits_for_configure_then_runs_every_delete_pipeline() {
    let mut world = World::new(ABC, "h1");
    world.start(0, StartReason::FirstRun);
    // The object is deleted while its first configure pipeline runs.
    world.action = Action::Delete;
    world.pipelines = names(DELETE);
    assert_eq!(world.step(), Step::Wait);
    world.succeed();
    world.start(0, StartReason::FirstRun);
    world.succeed();
    world.start(1, StartReason::Next);
    world.succeed();
    assert!(matches!(world.step(), Step::Completed { .. }));
    assert_eq!(
        world.started(),
        ["a@h1:configure", "d1@h1:delete", "d2@h1:delete"]
    );
}

#[test]
fn pipeline_statuses_show_the_current_attempt() {
    let pipelines = names(ABC);
    let status = |runs: &[RunRecord], hash: &str| {
        pipeline_statuses(Action::Configure, &pipelines, runs, hash, true)
    };
    let phases =
        |statuses: Vec<PipelineStatus>| statuses.iter().map(|s| s.phase).collect::<Vec<_>>();
    use PipelinePhase::*;

    let cases: Vec<(&str, Vec<RunRecord>, &str, Vec<PipelinePhase>)> = vec![
        ("no runs", vec![], "h1", vec![Pending, Pending, Pending]),
        (
            "b running",
            vec![ok(1, "a", 0, "h1"), running(2, "b", 1, "h1")],
            "h1",
            vec![Succeeded, Running, Pending],
        ),
        (
            "a pending",
            vec![pending(1, "a", 0, "h1")],
            "h1",
            vec![Running, Pending, Pending],
        ),
        (
            "b failed",
            vec![ok(1, "a", 0, "h1"), failed(2, "b", 1, "h1")],
            "h1",
            vec![Succeeded, Failed, Pending],
        ),
        (
            "b suspended",
            vec![ok(1, "a", 0, "h1"), suspended(2, "b", 1, "h1", None)],
            "h1",
            vec![Succeeded, Suspended, Pending],
        ),
        (
            "completed",
            vec![
                ok(1, "a", 0, "h1"),
                ok(2, "b", 1, "h1"),
                ok(3, "c", 2, "h1"),
            ],
            "h1",
            vec![Succeeded, Succeeded, Succeeded],
        ),
        (
            "restarted attempt forgets older successes",
            vec![
                ok(1, "a", 0, "h1"),
                ok(2, "b", 1, "h1"),
                ok(3, "c", 2, "h1"),
                running(4, "a", 0, "h1"),
            ],
            "h1",
            vec![Running, Pending, Pending],
        ),
        (
            "old hash's runs are not the current attempt",
            vec![ok(1, "a", 0, "h1"), ok(2, "b", 1, "h1")],
            "h2",
            vec![Pending, Pending, Pending],
        ),
        (
            "delete runs are not configure progress",
            vec![ok(1, "a", 0, "h1").delete()],
            "h1",
            vec![Pending, Pending, Pending],
        ),
    ];
    for (name, runs, hash, expected) in cases {
        assert_eq!(phases(status(&runs, hash)), expected, "{name}");
    }

    let retried = status(
        &[
            ok(1, "a", 0, "h1"),
            failed(2, "b", 1, "h1"),
            failed(3, "b", 1, "h1"),
        ],
        "h1",
    );
    assert_eq!(
        retried[1],
        PipelineStatus {
            name: "b".into(),
            phase: Failed,
            attempts: 2,
            last_run_sequence: Some(3),
            message: None,
            next_retry_at_ms: Some(completed_at(3) + 10_000)
        }
    );
    assert_eq!(retried[0].attempts, 1);
    // What a running run says it does is its pipeline's message.
    let pulling = status(
        &[RunRecord {
            progress: Some("pulling image x:1".into()),
            ..running(1, "a", 0, "h1")
        }],
        "h1",
    );
    assert_eq!(
        (pulling[0].phase, pulling[0].message.as_deref()),
        (Running, Some("pulling image x:1"))
    );
    // reconcileAfterFailure: false: still failed with its attempts, but no retry time; a
    // delete workflow's failure is retried whatever the setting.
    let retried_runs = [
        ok(1, "a", 0, "h1"),
        failed(2, "b", 1, "h1"),
        failed(3, "b", 1, "h1"),
    ];
    let no_retry = pipeline_statuses(Action::Configure, &pipelines, &retried_runs, "h1", false);
    assert_eq!(
        (
            no_retry[1].phase,
            no_retry[1].attempts,
            no_retry[1].next_retry_at_ms
        ),
        (Failed, 2, None)
    );
    let delete_runs = [failed(4, "d1", 0, "h1").delete()];
    let delete = pipeline_statuses(Action::Delete, &names(DELETE), &delete_runs, "h1", false);
    assert_eq!(delete[0].next_retry_at_ms, Some(completed_at(4) + 5_000));
    assert_eq!(
        retried[2],
        PipelineStatus {
            name: "c".into(),
            phase: Pending,
            attempts: 0,
            last_run_sequence: None,
            message: None,
            next_retry_at_ms: None
        }
    );

    let paused = status(
        &[ok(1, "a", 0, "h1"), suspended(2, "b", 1, "h1", Some(500))],
        "h1",
    );
    assert_eq!(
        paused[1],
        PipelineStatus {
            name: "b".into(),
            phase: Suspended,
            attempts: 1,
            last_run_sequence: Some(2),
            message: Some("waiting for b".into()),
            next_retry_at_ms: Some(completed_at(2) + 500)
        }
    );

    let resumed = status(
        &[
            ok(1, "a", 0, "h1"),
            suspended(2, "b", 1, "h1", Some(500)),
            ok(3, "b", 1, "h1"),
        ],
        "h1",
    );
    assert_eq!(
        (
            resumed[1].phase,
            resumed[1].attempts,
            resumed[1].message.clone()
        ),
        (Succeeded, 2, None)
    );
}
