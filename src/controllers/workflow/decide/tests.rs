//! Tables of cases for the workflow decisions, and step-by-step simulations of whole workflows.

use crate::api::condition::ConditionStatus;
use crate::api::workflow::Error;
use crate::api::{Action, WorkflowType};
use crate::controllers::work::state::WorksState;
use crate::controllers::workflow::decide::*;

const T: i64 = 1_000_000;

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|name| name.to_string()).collect()
}

/// A finished or active configure run; builder methods adjust it.
fn run(seq: i64, name: &str, index: usize, hash: &str, phase: RunPhase) -> RunRecord {
    RunRecord {
        sequence: seq,
        pipeline_name: name.to_string(),
        pipeline_index: index,
        action: Action::Configure,
        hash: hash.to_string(),
        phase,
        completion_time_ms: (!phase.is_active()).then_some(T + seq * 1_000),
        suspend: None,
        progress: None,
        attempt: 0,
    }
}

fn ok(seq: i64, name: &str, index: usize, hash: &str) -> RunRecord {
    run(seq, name, index, hash, RunPhase::Succeeded)
}

fn failed(seq: i64, name: &str, index: usize, hash: &str) -> RunRecord {
    run(seq, name, index, hash, RunPhase::Failed)
}

fn running(seq: i64, name: &str, index: usize, hash: &str) -> RunRecord {
    run(seq, name, index, hash, RunPhase::Running)
}

fn pending(seq: i64, name: &str, index: usize, hash: &str) -> RunRecord {
    run(seq, name, index, hash, RunPhase::Pending)
}

/// A succeeded run whose workflow-control.yaml suspended the workflow.
fn suspended(
    seq: i64,
    name: &str,
    index: usize,
    hash: &str,
    retry_after_ms: Option<i64>,
) -> RunRecord {
    RunRecord {
        suspend: Some(Suspension {
            retry_after_ms,
            message: format!("waiting for {name}"),
        }),
        ..ok(seq, name, index, hash)
    }
}

fn completed_at(seq: i64) -> i64 {
    T + seq * 1_000
}

trait RunExt {
    fn delete(self) -> Self;
    fn no_completion_time(self) -> Self;
}

impl RunExt for RunRecord {
    fn delete(self) -> Self {
        RunRecord {
            action: Action::Delete,
            ..self
        }
    }
    fn no_completion_time(self) -> Self {
        RunRecord {
            completion_time_ms: None,
            ..self
        }
    }
}

fn start(index: usize, reason: StartReason) -> Step {
    Step::Start { index, reason }
}

struct Case {
    name: &'static str,
    action: Action,
    pipelines: &'static [&'static str],
    hash: &'static str,
    runs: Vec<RunRecord>,
    manual: bool,
    retry: bool,
    now: i64,
    expected: Step,
}

/// A configure case with no manual reconciliation, observed long after every run finished
/// unless `now` says otherwise.
fn case(
    name: &'static str,
    pipelines: &'static [&'static str],
    hash: &'static str,
    runs: Vec<RunRecord>,
    expected: Step,
) -> Case {
    Case {
        name,
        action: Action::Configure,
        pipelines,
        hash,
        runs,
        manual: false,
        retry: true,
        now: i64::MAX / 2,
        expected,
    }
}

impl Case {
    fn manual(self) -> Self {
        Case {
            manual: true,
            ..self
        }
    }
    fn at(self, now: i64) -> Self {
        Case { now, ..self }
    }
    /// `reconcileAfterFailure: false`: failed pipelines are not retried.
    fn no_retry(self) -> Self {
        Case {
            retry: false,
            ..self
        }
    }
    fn delete(self) -> Self {
        Case {
            action: Action::Delete,
            ..self
        }
    }
}

const ABC: &[&str] = &["a", "b", "c"];
const DELETE: &[&str] = &["d1", "d2"];

fn next_step_cases() -> Vec<Case> {
    vec![
        // --- no pipelines
        case(
            "configure without pipelines",
            &[],
            "h1",
            vec![],
            Step::NothingToRun,
        ),
        case(
            "no pipelines but a run still running: its output must land first",
            &[],
            "h1",
            vec![ok(1, "a", 0, "h0"), running(2, "b", 1, "h0")],
            Step::Wait,
        ),
        case(
            "delete without pipelines",
            &[],
            "h1",
            vec![ok(1, "a", 0, "h1")],
            Step::NothingToRun,
        )
        .delete(),
        // --- first run and strict order
        case(
            "first run",
            ABC,
            "h1",
            vec![],
            start(0, StartReason::FirstRun),
        ),
        case(
            "first run with manual reconciliation",
            ABC,
            "h1",
            vec![],
            start(0, StartReason::Manual),
        )
        .manual(),
        case(
            "pending run waits",
            ABC,
            "h1",
            vec![pending(1, "a", 0, "h1")],
            Step::Wait,
        ),
        case(
            "running run waits",
            ABC,
            "h1",
            vec![running(1, "a", 0, "h1")],
            Step::Wait,
        ),
        case(
            "a succeeded: b next",
            ABC,
            "h1",
            vec![ok(1, "a", 0, "h1")],
            start(1, StartReason::Next),
        ),
        case(
            "a, b succeeded: c next",
            ABC,
            "h1",
            vec![ok(1, "a", 0, "h1"), ok(2, "b", 1, "h1")],
            start(2, StartReason::Next),
        ),
        case(
            "all succeeded: completed at the last run",
            ABC,
            "h1",
            vec![
                ok(1, "a", 0, "h1"),
                ok(2, "b", 1, "h1"),
                ok(3, "c", 2, "h1"),
            ],
            Step::Completed {
                last_run_sequence: 3,
            },
        ),
        case(
            "order comes from sequence, not from the slice order",
            ABC,
            "h1",
            vec![
                ok(3, "c", 2, "h1"),
                ok(1, "a", 0, "h1"),
                ok(2, "b", 1, "h1"),
            ],
            Step::Completed {
                last_run_sequence: 3,
            },
        ),
        case(
            "order comes from sequence: b is newest",
            ABC,
            "h1",
            vec![ok(12, "b", 1, "h1"), ok(11, "a", 0, "h1")],
            start(2, StartReason::Next),
        ),
        case(
            "single pipeline completes",
            &["a"],
            "h1",
            vec![ok(7, "a", 0, "h1")],
            Step::Completed {
                last_run_sequence: 7,
            },
        ),
        case(
            "an older attempt's successes don't count: restarted a ok ⇒ b next",
            ABC,
            "h1",
            vec![
                ok(1, "a", 0, "h1"),
                ok(2, "b", 1, "h1"),
                ok(3, "c", 2, "h1"),
                ok(4, "a", 0, "h1"),
            ],
            start(1, StartReason::Next),
        ),
        case(
            "completed after earlier retries in the attempt",
            ABC,
            "h1",
            vec![
                ok(1, "a", 0, "h1"),
                failed(2, "b", 1, "h1"),
                ok(3, "b", 1, "h1"),
                ok(4, "c", 2, "h1"),
            ],
            Step::Completed {
                last_run_sequence: 4,
            },
        ),
        // --- never two at once
        case(
            "spec changed while b runs: wait",
            ABC,
            "h2",
            vec![ok(1, "a", 0, "h1"), running(2, "b", 1, "h1")],
            Step::Wait,
        ),
        case(
            "manual reconciliation while b runs: wait",
            ABC,
            "h1",
            vec![ok(1, "a", 0, "h1"), running(2, "b", 1, "h1")],
            Step::Wait,
        )
        .manual(),
        case(
            "an older run still active: wait even though the newest finished",
            ABC,
            "h1",
            vec![running(1, "a", 0, "h1"), ok(2, "a", 0, "h1")],
            Step::Wait,
        ),
        case(
            "a running delete run blocks configure",
            ABC,
            "h1",
            vec![ok(1, "a", 0, "h1"), running(2, "d1", 0, "h1").delete()],
            Step::Wait,
        ),
        // --- spec changes
        case(
            "spec changed after b finished: restart at 0, c never runs for h1",
            ABC,
            "h2",
            vec![ok(1, "a", 0, "h1"), ok(2, "b", 1, "h1")],
            start(0, StartReason::SpecChanged),
        ),
        case(
            "spec changed after completion",
            ABC,
            "h2",
            vec![
                ok(1, "a", 0, "h1"),
                ok(2, "b", 1, "h1"),
                ok(3, "c", 2, "h1"),
            ],
            start(0, StartReason::SpecChanged),
        ),
        case(
            "new hash's a succeeded: b next, old runs ignored",
            ABC,
            "h2",
            vec![
                ok(1, "a", 0, "h1"),
                ok(2, "b", 1, "h1"),
                ok(3, "a", 0, "h2"),
            ],
            start(1, StartReason::Next),
        ),
        case(
            "spec changed and back while b ran: b's success at h1 still counts",
            ABC,
            "h1",
            vec![ok(1, "a", 0, "h1"), ok(2, "b", 1, "h1")],
            start(2, StartReason::Next),
        ),
        case(
            "spec changed back after the new attempt started: restart again",
            ABC,
            "h1",
            vec![
                ok(1, "a", 0, "h1"),
                ok(2, "b", 1, "h1"),
                ok(3, "a", 0, "h2"),
            ],
            start(0, StartReason::SpecChanged),
        ),
        case(
            "earlier pipeline of the attempt at another hash",
            ABC,
            "h2",
            vec![ok(1, "a", 0, "h1"), ok(2, "b", 1, "h2")],
            start(0, StartReason::SpecChanged),
        ),
        // --- pipelines changed with an equal hash
        case(
            "renamed pipeline at the newest run's index",
            &["a", "x"],
            "h1",
            vec![ok(1, "a", 0, "h1"), ok(2, "b", 1, "h1")],
            start(0, StartReason::PipelinesChanged),
        ),
        case(
            "swapped pipelines",
            &["b", "a"],
            "h1",
            vec![ok(1, "a", 0, "h1"), ok(2, "b", 1, "h1")],
            start(0, StartReason::PipelinesChanged),
        ),
        case(
            "reordered before the newest run's index",
            &["b", "a", "c"],
            "h1",
            vec![
                ok(1, "a", 0, "h1"),
                ok(2, "b", 1, "h1"),
                ok(3, "c", 2, "h1"),
            ],
            start(0, StartReason::PipelinesChanged),
        ),
        case(
            "renamed first pipeline",
            &["x", "b", "c"],
            "h1",
            vec![ok(1, "a", 0, "h1"), ok(2, "b", 1, "h1")],
            start(0, StartReason::PipelinesChanged),
        ),
        case(
            "last pipeline removed",
            &["a", "b"],
            "h1",
            vec![
                ok(1, "a", 0, "h1"),
                ok(2, "b", 1, "h1"),
                ok(3, "c", 2, "h1"),
            ],
            start(0, StartReason::PipelinesChanged),
        ),
        case(
            "pipeline appended with the same hash: continue with it",
            ABC,
            "h1",
            vec![ok(1, "a", 0, "h1"), ok(2, "b", 1, "h1")],
            start(2, StartReason::Next),
        ),
        case(
            "success of an earlier pipeline is missing: restart",
            ABC,
            "h1",
            vec![ok(5, "b", 1, "h1")],
            start(0, StartReason::HistoryMissing),
        ),
        case(
            "runs between are missing: restart",
            ABC,
            "h1",
            vec![ok(1, "a", 0, "h1"), ok(3, "c", 2, "h1")],
            start(0, StartReason::HistoryMissing),
        ),
        case(
            "earlier pipeline only failed in this attempt: restart",
            ABC,
            "h1",
            vec![failed(1, "a", 0, "h1"), ok(2, "b", 1, "h1")],
            start(0, StartReason::HistoryMissing),
        ),
        // --- manual reconciliation
        case(
            "manual after completion restarts at 0",
            ABC,
            "h1",
            vec![
                ok(1, "a", 0, "h1"),
                ok(2, "b", 1, "h1"),
                ok(3, "c", 2, "h1"),
            ],
            start(0, StartReason::Manual),
        )
        .manual(),
        case(
            "manual between pipelines restarts at 0",
            ABC,
            "h1",
            vec![ok(1, "a", 0, "h1")],
            start(0, StartReason::Manual),
        )
        .manual(),
        // --- failure and retry
        case(
            "b failed: failed until its backoff passes",
            ABC,
            "h1",
            vec![ok(1, "a", 0, "h1"), failed(2, "b", 1, "h1")],
            Step::Failed {
                index: 1,
                pipeline: "b".into(),
                attempts: 1,
                retry_at_ms: Some(completed_at(2) + 5_000),
            },
        )
        .at(completed_at(2) + 4_999),
        case(
            "b failed: retried once its backoff passed",
            ABC,
            "h1",
            vec![ok(1, "a", 0, "h1"), failed(2, "b", 1, "h1")],
            start(1, StartReason::Retry),
        )
        .at(completed_at(2) + 5_000),
        case(
            "three failures in a row: attempts 3, backoff 20 s",
            ABC,
            "h1",
            vec![
                ok(1, "a", 0, "h1"),
                failed(2, "b", 1, "h1"),
                failed(3, "b", 1, "h1"),
                failed(4, "b", 1, "h1"),
            ],
            Step::Failed {
                index: 1,
                pipeline: "b".into(),
                attempts: 3,
                retry_at_ms: Some(completed_at(4) + 20_000),
            },
        )
        .at(completed_at(4)),
        case(
            "only failures at the tail count",
            ABC,
            "h1",
            vec![
                ok(1, "a", 0, "h1"),
                failed(2, "b", 1, "h1"),
                suspended(3, "b", 1, "h1", Some(1)),
                failed(4, "b", 1, "h1"),
            ],
            Step::Failed {
                index: 1,
                pipeline: "b".into(),
                attempts: 1,
                retry_at_ms: Some(completed_at(4) + 5_000),
            },
        )
        .at(completed_at(4)),
        case(
            "failures of an earlier attempt don't count",
            ABC,
            "h1",
            vec![
                ok(1, "a", 0, "h1"),
                failed(2, "b", 1, "h1"),
                ok(3, "a", 0, "h1"),
                failed(4, "b", 1, "h1"),
            ],
            Step::Failed {
                index: 1,
                pipeline: "b".into(),
                attempts: 1,
                retry_at_ms: Some(completed_at(4) + 5_000),
            },
        )
        .at(completed_at(4)),
        case(
            "first pipeline failed",
            ABC,
            "h1",
            vec![failed(1, "a", 0, "h1")],
            Step::Failed {
                index: 0,
                pipeline: "a".into(),
                attempts: 1,
                retry_at_ms: Some(completed_at(1) + 5_000),
            },
        )
        .at(completed_at(1)),
        case(
            "first pipeline failed twice",
            ABC,
            "h1",
            vec![failed(1, "a", 0, "h1"), failed(2, "a", 0, "h1")],
            Step::Failed {
                index: 0,
                pipeline: "a".into(),
                attempts: 2,
                retry_at_ms: Some(completed_at(2) + 10_000),
            },
        )
        .at(completed_at(2)),
        // --- reconcileAfterFailure: false
        case(
            "no retry: b failed stays failed long after its backoff",
            ABC,
            "h1",
            vec![ok(1, "a", 0, "h1"), failed(2, "b", 1, "h1")],
            Step::Failed {
                index: 1,
                pipeline: "b".into(),
                attempts: 1,
                retry_at_ms: None,
            },
        )
        .no_retry(),
        case(
            "no retry: a retried failure counts its attempts, no retry time",
            ABC,
            "h1",
            vec![failed(1, "a", 0, "h1"), failed(2, "a", 0, "h1")],
            Step::Failed {
                index: 0,
                pipeline: "a".into(),
                attempts: 2,
                retry_at_ms: None,
            },
        )
        .no_retry(),
        case(
            "no retry: a spec change starts over",
            ABC,
            "h2",
            vec![ok(1, "a", 0, "h1"), failed(2, "b", 1, "h1")],
            start(0, StartReason::SpecChanged),
        )
        .no_retry(),
        case(
            "no retry: manual reconciliation starts over",
            ABC,
            "h1",
            vec![ok(1, "a", 0, "h1"), failed(2, "b", 1, "h1")],
            start(0, StartReason::Manual),
        )
        .manual()
        .no_retry(),
        case(
            "no retry: a run in progress still waits",
            ABC,
            "h1",
            vec![failed(1, "a", 0, "h1"), running(2, "a", 0, "h1")],
            Step::Wait,
        )
        .no_retry(),
        case(
            "no retry: a failed delete pipeline is retried all the same",
            DELETE,
            "h1",
            vec![ok(1, "a", 0, "h1"), failed(2, "d1", 0, "h1").delete()],
            start(0, StartReason::Retry),
        )
        .delete()
        .no_retry(),
        case(
            "retried b succeeded: c next",
            ABC,
            "h1",
            vec![
                ok(1, "a", 0, "h1"),
                failed(2, "b", 1, "h1"),
                ok(3, "b", 1, "h1"),
            ],
            start(2, StartReason::Next),
        ),
        case(
            "spec change after a failure restarts at once",
            ABC,
            "h2",
            vec![ok(1, "a", 0, "h1"), failed(2, "b", 1, "h1")],
            start(0, StartReason::SpecChanged),
        )
        .at(completed_at(2)),
        case(
            "manual after a failure restarts at once",
            ABC,
            "h1",
            vec![ok(1, "a", 0, "h1"), failed(2, "b", 1, "h1")],
            start(0, StartReason::Manual),
        )
        .at(completed_at(2))
        .manual(),
        case(
            "failed run without completion time: its backoff counts from 0",
            ABC,
            "h1",
            vec![failed(1, "a", 0, "h1").no_completion_time()],
            start(0, StartReason::Retry),
        )
        .at(5_000),
        case(
            "new hash's first pipeline failed",
            ABC,
            "h2",
            vec![
                ok(1, "a", 0, "h1"),
                ok(2, "b", 1, "h1"),
                failed(3, "a", 0, "h2"),
            ],
            Step::Failed {
                index: 0,
                pipeline: "a".into(),
                attempts: 1,
                retry_at_ms: Some(completed_at(3) + 5_000),
            },
        )
        .at(completed_at(3)),
        // --- workflow-control.yaml suspension
        case(
            "b suspended with retryAfter: suspended until then",
            ABC,
            "h1",
            vec![
                ok(1, "a", 0, "h1"),
                suspended(2, "b", 1, "h1", Some(60_000)),
            ],
            Step::Suspended {
                index: 1,
                retry_at_ms: Some(completed_at(2) + 60_000),
                message: "waiting for b".into(),
            },
        )
        .at(completed_at(2) + 59_999),
        case(
            "b suspended with retryAfter: resumed at b once it passed",
            ABC,
            "h1",
            vec![
                ok(1, "a", 0, "h1"),
                suspended(2, "b", 1, "h1", Some(60_000)),
            ],
            start(1, StartReason::Resume),
        )
        .at(completed_at(2) + 60_000),
        case(
            "resumed b succeeded: c next",
            ABC,
            "h1",
            vec![
                ok(1, "a", 0, "h1"),
                suspended(2, "b", 1, "h1", Some(60_000)),
                ok(3, "b", 1, "h1"),
            ],
            start(2, StartReason::Next),
        ),
        case(
            "plain suspend stays suspended",
            ABC,
            "h1",
            vec![ok(1, "a", 0, "h1"), suspended(2, "b", 1, "h1", None)],
            Step::Suspended {
                index: 1,
                retry_at_ms: None,
                message: "waiting for b".into(),
            },
        ),
        case(
            "plain suspend: spec change restarts at 0",
            ABC,
            "h2",
            vec![ok(1, "a", 0, "h1"), suspended(2, "b", 1, "h1", None)],
            start(0, StartReason::SpecChanged),
        ),
        case(
            "plain suspend: manual restarts at 0",
            ABC,
            "h1",
            vec![ok(1, "a", 0, "h1"), suspended(2, "b", 1, "h1", None)],
            start(0, StartReason::Manual),
        )
        .manual(),
        case(
            "suspended last pipeline is not completed",
            ABC,
            "h1",
            vec![
                ok(1, "a", 0, "h1"),
                ok(2, "b", 1, "h1"),
                suspended(3, "c", 2, "h1", None),
            ],
            Step::Suspended {
                index: 2,
                retry_at_ms: None,
                message: "waiting for c".into(),
            },
        ),
        case(
            "suspended again after a resume",
            ABC,
            "h1",
            vec![
                ok(1, "a", 0, "h1"),
                suspended(2, "b", 1, "h1", Some(10)),
                suspended(3, "b", 1, "h1", Some(10)),
            ],
            Step::Suspended {
                index: 1,
                retry_at_ms: Some(completed_at(3) + 10),
                message: "waiting for b".into(),
            },
        )
        .at(completed_at(3)),
        // --- delete workflow
        case(
            "delete: first delete pipeline; configure runs don't count",
            DELETE,
            "h1",
            vec![
                ok(1, "a", 0, "h1"),
                ok(2, "b", 1, "h1"),
                ok(3, "c", 2, "h1"),
            ],
            start(0, StartReason::FirstRun),
        )
        .delete(),
        case(
            "delete: waits for a running configure run",
            DELETE,
            "h1",
            vec![ok(1, "a", 0, "h1"), running(2, "b", 1, "h1")],
            Step::Wait,
        )
        .delete(),
        case(
            "delete: every delete pipeline runs, in order",
            DELETE,
            "h1",
            vec![ok(1, "a", 0, "h1"), ok(2, "d1", 0, "h1").delete()],
            start(1, StartReason::Next),
        )
        .delete(),
        case(
            "delete: completed",
            DELETE,
            "h1",
            vec![
                ok(1, "a", 0, "h1"),
                ok(2, "d1", 0, "h1").delete(),
                ok(3, "d2", 1, "h1").delete(),
            ],
            Step::Completed {
                last_run_sequence: 3,
            },
        )
        .delete(),
        case(
            "delete: failed delete pipeline",
            DELETE,
            "h1",
            vec![
                ok(2, "d1", 0, "h1").delete(),
                failed(3, "d2", 1, "h1").delete(),
            ],
            Step::Failed {
                index: 1,
                pipeline: "d2".into(),
                attempts: 1,
                retry_at_ms: Some(completed_at(3) + 5_000),
            },
        )
        .delete()
        .at(completed_at(3)),
        case(
            "delete: a configure success with the delete pipeline's name doesn't count",
            &["a"],
            "h1",
            vec![ok(1, "a", 0, "h1")],
            start(0, StartReason::FirstRun),
        )
        .delete(),
        case(
            "configure: a delete success with a configure pipeline's name doesn't count",
            &["a", "b"],
            "h1",
            vec![ok(1, "a", 0, "h1"), ok(2, "b", 1, "h1").delete()],
            start(1, StartReason::Next),
        ),
    ]
}

#[test]
fn next_step_table() {
    let mut failures = Vec::new();
    for case in next_step_cases() {
        let pipelines = names(case.pipelines);
        let observed = Observed {
            action: case.action,
            pipelines: &pipelines,
            hash: case.hash,
            runs: &case.runs,
            manual_reconcile: case.manual,
            retry_failures: case.retry,
            now_ms: case.now,
        };
        let got = next_step(&observed);
        if got != case.expected {
            failures.push(format!(
                "{}: expected {:?}, got {:?}",
                case.name, case.expected, got
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} case(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn retry_backoff_doubles_up_to_five_minutes() {
    let cases = [
        (0, 5_000),
        (1, 5_000),
        (2, 10_000),
        (3, 20_000),
        (4, 40_000),
        (5, 80_000),
        (6, 160_000),
        (7, 300_000),
        (8, 300_000),
        (64, 300_000),
        (u32::MAX, 300_000),
    ];
    for (attempts, expected) in cases {
        assert_eq!(retry_backoff_ms(attempts), expected, "attempts {attempts}");
    }
}

#[test]
fn wake_at_is_the_retry_or_resume_time() {
    let cases = [
        (Step::Wait, None),
        (Step::NothingToRun, None),
        (start(0, StartReason::FirstRun), None),
        (
            Step::Completed {
                last_run_sequence: 1,
            },
            None,
        ),
        (
            Step::Failed {
                index: 0,
                pipeline: "a".into(),
                attempts: 1,
                retry_at_ms: Some(42),
            },
            Some(42),
        ),
        (
            Step::Suspended {
                index: 0,
                retry_at_ms: Some(7),
                message: String::new(),
            },
            Some(7),
        ),
        (
            Step::Suspended {
                index: 0,
                retry_at_ms: None,
                message: String::new(),
            },
            None,
        ),
    ];
    for (step, expected) in cases {
        assert_eq!(step.wake_at_ms(), expected, "{step:?}");
    }
}

/// Plays the controller and the pipeline runtime: runs appended as the engine asks for them.
struct World {
    action: Action,
    pipelines: Vec<String>,
    hash: String,
    runs: Vec<RunRecord>,
    manual: bool,
    now: i64,
    next_sequence: i64,
}

impl World {
    fn new(pipelines: &[&str], hash: &str) -> Self {
        World {
            action: Action::Configure,
            pipelines: names(pipelines),
            hash: hash.to_string(),
            runs: Vec::new(),
            manual: false,
            now: T,
            next_sequence: 1,
        }
    }

    fn observed(&self) -> Observed<'_> {
        Observed {
            action: self.action,
            pipelines: &self.pipelines,
            hash: &self.hash,
            runs: &self.runs,
            manual_reconcile: self.manual,
            retry_failures: true,
            now_ms: self.now,
        }
    }

    fn step(&self) -> Step {
        next_step(&self.observed())
    }

    /// Acts on a `Start` the way the controller does: create the run, clear the manual label.
    fn start(&mut self, expected_index: usize, expected_reason: StartReason) {
        let step = self.step();
        assert_eq!(
            step,
            start(expected_index, expected_reason),
            "runs so far: {:?}",
            self.started()
        );
        let record = RunRecord {
            sequence: self.next_sequence,
            pipeline_name: self.pipelines[expected_index].clone(),
            pipeline_index: expected_index,
            action: self.action,
            hash: self.hash.clone(),
            phase: RunPhase::Running,
            completion_time_ms: None,
            suspend: None,
            progress: None,
            attempt: run_attempt(&self.observed(), &step),
        };
        self.next_sequence += 1;
        self.runs.push(record);
        self.manual = false;
        assert_eq!(
            self.step(),
            Step::Wait,
            "a started run must block everything"
        );
    }

    fn finish(&mut self, phase: RunPhase, suspend: Option<Suspension>) {
        self.now += 1_000;
        let now = self.now;
        let active = self
            .runs
            .iter_mut()
            .find(|run| run.phase.is_active())
            .expect("finish is only called while a run is active");
        active.phase = phase;
        active.completion_time_ms = Some(now);
        active.suspend = suspend;
    }

    fn succeed(&mut self) {
        self.finish(RunPhase::Succeeded, None);
    }

    fn started(&self) -> Vec<String> {
        self.runs
            .iter()
            .map(|run| format!("{}@{}:{}", run.pipeline_name, run.hash, run.action))
            .collect()
    }
}

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

#[test]
fn configure_conditions_table() {
    let failed = Step::Failed {
        index: 1,
        pipeline: "b".into(),
        attempts: 1,
        retry_at_ms: Some(0),
    };
    let suspended = Step::Suspended {
        index: 1,
        retry_at_ms: None,
        message: "hold".into(),
    };
    let done = Step::Completed {
        last_run_sequence: 3,
    };
    use ConditionStatus::*;
    type Expected = (
        Option<(ConditionStatus, &'static str, &'static str)>,
        (ConditionStatus, &'static str, &'static str),
    );
    let cases: Vec<(&str, Step, &str, WorksState, Expected)> = vec![
        (
            "waiting",
            Step::Wait,
            "",
            WorksState::Ready,
            (
                Some((
                    False,
                    "PipelinesInProgress",
                    "Pipelines are still in progress",
                )),
                (Unknown, "WorkflowPending", "Pending"),
            ),
        ),
        (
            "starting",
            start(0, StartReason::FirstRun),
            "",
            WorksState::Ready,
            (
                Some((
                    False,
                    "PipelinesInProgress",
                    "Pipelines are still in progress",
                )),
                (Unknown, "WorkflowPending", "Pending"),
            ),
        ),
        (
            "failed with exit reason",
            failed.clone(),
            "exit code 3",
            WorksState::Ready,
            (
                Some((
                    False,
                    "ConfigureWorkflowFailed",
                    "A Configure Pipeline has failed: b (exit code 3)",
                )),
                (False, "ConfigureWorkflowFailed", "Failing"),
            ),
        ),
        (
            "failed without exit reason",
            failed,
            "",
            WorksState::Ready,
            (
                Some((
                    False,
                    "ConfigureWorkflowFailed",
                    "A Configure Pipeline has failed: b",
                )),
                (False, "ConfigureWorkflowFailed", "Failing"),
            ),
        ),
        (
            "suspended",
            suspended,
            "",
            WorksState::Ready,
            (
                Some((
                    False,
                    "PipelinesInProgress",
                    "Pipelines are still in progress",
                )),
                (Unknown, "WorkflowSuspended", "Suspended"),
            ),
        ),
        (
            "completed, works ready",
            done.clone(),
            "",
            WorksState::Ready,
            (
                Some((True, "PipelinesExecutedSuccessfully", "Pipelines completed")),
                (True, "Reconciled", "Reconciled"),
            ),
        ),
        (
            "completed, works pending",
            done.clone(),
            "",
            WorksState::Pending,
            (
                Some((True, "PipelinesExecutedSuccessfully", "Pipelines completed")),
                (Unknown, "WorksPending", "Pending"),
            ),
        ),
        (
            "completed, works failing",
            done,
            "",
            WorksState::Failing,
            (
                Some((True, "PipelinesExecutedSuccessfully", "Pipelines completed")),
                (False, "WorksFailing", "Failing"),
            ),
        ),
        (
            "no pipelines",
            Step::NothingToRun,
            "",
            WorksState::NoWorks,
            (None, (True, "Reconciled", "Reconciled")),
        ),
    ];
    for (name, step, exit_reason, works, (cwc, rec)) in cases {
        let got = configure_conditions(&step, exit_reason, works);
        let summary: Vec<(&str, ConditionStatus, &str, &str)> = got
            .iter()
            .map(|c| {
                (
                    c.type_.as_str(),
                    c.status,
                    c.reason.as_str(),
                    c.message.as_str(),
                )
            })
            .collect();
        let mut expected = Vec::new();
        if let Some((status, reason, message)) = cwc {
            expected.push((CONFIGURE_WORKFLOW_COMPLETED, status, reason, message));
        }
        expected.push((RECONCILED, rec.0, rec.1, rec.2));
        assert_eq!(summary, expected, "{name}");
    }
}

#[test]
fn reconciled_precedence_table() {
    use ConditionStatus::*;
    let cases = [
        (
            false,
            WorksState::Ready,
            Unknown,
            "WorkflowPending",
            "Pending",
        ),
        (
            false,
            WorksState::Failing,
            Unknown,
            "WorkflowPending",
            "Pending",
        ),
        (
            true,
            WorksState::Pending,
            Unknown,
            "WorksPending",
            "Pending",
        ),
        (true, WorksState::Failing, False, "WorksFailing", "Failing"),
        (
            true,
            WorksState::Misplaced,
            False,
            "WorksFailing",
            "Failing",
        ),
        (true, WorksState::Ready, True, "Reconciled", "Reconciled"),
        (true, WorksState::NoWorks, True, "Reconciled", "Reconciled"),
    ];
    for (configure_done, works, status, reason, message) in cases {
        let got = reconciled(configure_done, works);
        assert_eq!(
            (
                got.type_.as_str(),
                got.status,
                got.reason.as_str(),
                got.message.as_str()
            ),
            (RECONCILED, status, reason, message),
            "configure_done={configure_done} works={works:?}"
        );
    }
}

#[test]
fn delete_condition_table() {
    use ConditionStatus::*;
    let cases = [
        (
            Step::Wait,
            "",
            False,
            "PipelinesInProgress",
            "Delete pipelines are still in progress",
        ),
        (
            start(1, StartReason::Next),
            "",
            False,
            "PipelinesInProgress",
            "Delete pipelines are still in progress",
        ),
        (
            Step::NothingToRun,
            "",
            True,
            "PipelinesExecutedSuccessfully",
            "Delete pipelines completed",
        ),
        (
            Step::Completed {
                last_run_sequence: 1,
            },
            "",
            True,
            "PipelinesExecutedSuccessfully",
            "Delete pipelines completed",
        ),
        (
            Step::Failed {
                index: 0,
                pipeline: "d1".into(),
                attempts: 2,
                retry_at_ms: Some(0),
            },
            "exit code 1",
            False,
            "DeleteWorkflowFailed",
            "A Delete Pipeline has failed: d1 (exit code 1)",
        ),
        (
            Step::Suspended {
                index: 0,
                retry_at_ms: None,
                message: "hold".into(),
            },
            "",
            False,
            "DeleteWorkflowSuspended",
            "The delete workflow is suspended",
        ),
    ];
    for (step, exit_reason, status, reason, message) in cases {
        let got = delete_condition(&step, exit_reason);
        assert_eq!(
            (
                got.type_.as_str(),
                got.status,
                got.reason.as_str(),
                got.message.as_str()
            ),
            (DELETE_WORKFLOW_COMPLETED, status, reason, message),
            "{step:?}"
        );
    }
}

#[test]
fn obsolete_pipelines_table() {
    let cases: [(&[&str], &[&str], &[&str]); 6] = [
        (&[], &["a"], &[]),
        (&["a", "b"], &["a", "b"], &[]),
        (&["a", "b", "c"], &["a", "c"], &["b"]),
        (&["a", "old"], &["a", "new"], &["old"]),
        (&["x", "y", "x"], &[], &["x", "y"]),
        (&["b", "a"], &["c"], &["b", "a"]),
    ];
    for (works, current, expected) in cases {
        assert_eq!(
            obsolete_pipelines(&names(works), &names(current)),
            names(expected),
            "works {works:?} current {current:?}"
        );
    }
}

#[test]
fn labels_round_trip_and_unknown_values_are_refused() {
    for action in [Action::Configure, Action::Delete] {
        assert_eq!(action.as_str().parse::<Action>().ok(), Some(action));
    }
    for workflow_type in [WorkflowType::Promise, WorkflowType::Resource] {
        assert_eq!(
            workflow_type.as_str().parse::<WorkflowType>().ok(),
            Some(workflow_type)
        );
    }
    assert!(matches!(
        "Configure".parse::<Action>(),
        Err(Error::UnknownAction { .. })
    ));
    assert!(matches!(
        "cluster".parse::<WorkflowType>(),
        Err(Error::UnknownWorkflowType { .. })
    ));
    assert_eq!(
        RunPhase::from(crate::api::PipelineRunPhase::Running),
        RunPhase::Running
    );
}

mod attempts;
mod keyed;
mod prune;
