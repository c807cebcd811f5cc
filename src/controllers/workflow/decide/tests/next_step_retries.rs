//! Cases of the next step: manual reconciliation, failures and retries, suspension by
//! `workflow-control.yaml`, and the delete workflow.

use crate::controllers::workflow::decide::tests::*;

pub(super) fn cases() -> Vec<Case> {
    vec![
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
            "plain suspend: the label removed resumes at b",
            ABC,
            "h1",
            vec![ok(1, "a", 0, "h1"), suspended(2, "b", 1, "h1", None)],
            start(1, StartReason::Resume),
        )
        .resumed(2),
        case(
            "suspended with retryAfter: the label removed resumes at b before it passed",
            ABC,
            "h1",
            vec![
                ok(1, "a", 0, "h1"),
                suspended(2, "b", 1, "h1", Some(60_000)),
            ],
            start(1, StartReason::Resume),
        )
        .at(completed_at(2))
        .resumed(2),
        case(
            "plain suspend: a removal for an earlier suspension resumes nothing",
            ABC,
            "h1",
            vec![
                ok(1, "a", 0, "h1"),
                suspended(2, "b", 1, "h1", Some(10)),
                suspended(3, "b", 1, "h1", None),
            ],
            Step::Suspended {
                index: 1,
                retry_at_ms: None,
                message: "waiting for b".into(),
            },
        )
        .resumed(2),
        case(
            "plain suspend: the label removed on a spec change restarts at 0",
            ABC,
            "h2",
            vec![ok(1, "a", 0, "h1"), suspended(2, "b", 1, "h1", None)],
            start(0, StartReason::SpecChanged),
        )
        .resumed(2),
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
            "delete: a suspended delete pipeline resumed by removing the label",
            DELETE,
            "h1",
            vec![
                ok(1, "a", 0, "h1"),
                suspended(2, "d1", 0, "h1", None).delete(),
            ],
            start(0, StartReason::Resume),
        )
        .delete()
        .resumed(2),
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
