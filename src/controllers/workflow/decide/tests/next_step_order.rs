//! Cases of the next step: no pipelines, strict order, never two at once, spec and pipeline
//! changes.

use crate::controllers::workflow::decide::tests::*;

pub(super) fn cases() -> Vec<Case> {
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
    ]
}
