//! "What runs next": the sequencing decision for one object's workflow.

use crate::controllers::workflow::decide::history::read_history;
use crate::controllers::workflow::decide::history::runs_so_far;
use crate::controllers::workflow::decide::history::History;
use crate::controllers::workflow::decide::history::Staleness;
use crate::controllers::workflow::decide::model::retries_failures;
use crate::controllers::workflow::decide::model::Observed;
use crate::controllers::workflow::decide::model::RunPhase;
use crate::controllers::workflow::decide::model::StartReason;
use crate::controllers::workflow::decide::model::Step;

/// Decides what the controller does next for one object's workflow.
///
/// Precedence, highest first:
/// 1. any pending or running run of the object (any action, pipeline or hash) ⇒ [`Step::Wait`]:
///    never two runs at once, even for a spec change, a manual reconciliation, or a workflow
///    whose pipelines were all removed (the in-flight run's output must land before cleanup);
/// 2. no pipelines ⇒ [`Step::NothingToRun`];
/// 3. manual reconciliation ⇒ start pipeline 0;
/// 4. otherwise the newest run of this action decides (a suspension is resumed once its
///    `retryAfter` has passed, or once a person removed its `kratix.io/workflow-suspended`
///    label), provided it continues an attempt for the
///    current hash whose earlier pipelines all succeeded in order (see `history`); if not,
///    the workflow starts again from pipeline 0. A failed newest run is retried after its
///    backoff only when `retry_failures` is set; otherwise it stays [`Step::Failed`] until
///    the hash changes or a manual reconciliation.
///
/// Pipelines appended with an unchanged hash (impossible in practice: the Promise spec is part of
/// every hash) continue the attempt: the new pipeline runs after the old last one, since every
/// pipeline before it has succeeded, in order, for this hash. Removed, renamed or reordered
/// pipelines restart from 0.
pub(crate) fn next_step(o: &Observed) -> Step {
    if o.runs.iter().any(|run| run.phase.is_active()) {
        return Step::Wait;
    }
    if o.pipelines.is_empty() {
        return Step::NothingToRun;
    }
    if o.manual_reconcile {
        return start_over(StartReason::Manual);
    }
    let attempt = match read_history(o.action, o.pipelines, o.hash, o.runs) {
        History::Empty => return start_over(StartReason::FirstRun),
        History::Stale(staleness) => return start_over(restart_reason(staleness)),
        History::Current(attempt) => attempt,
    };

    let latest = attempt.latest();
    let index = attempt.index();
    match latest.phase {
        RunPhase::Succeeded => match &latest.suspend {
            None if index + 1 < o.pipelines.len() => Step::Start {
                index: index + 1,
                reason: StartReason::Next,
            },
            None => Step::Completed {
                last_run_sequence: latest.sequence,
            },
            Some(suspension) => {
                let retry_at_ms = latest.resume_at_ms();
                let resumed_by_hand = o.resumed_run == Some(latest.sequence);
                match retry_at_ms {
                    _ if resumed_by_hand => Step::Start {
                        index,
                        reason: StartReason::Resume,
                    },
                    Some(at) if o.now_ms >= at => Step::Start {
                        index,
                        reason: StartReason::Resume,
                    },
                    _ => Step::Suspended {
                        index,
                        retry_at_ms,
                        message: suspension.message.clone(),
                    },
                }
            }
        },
        RunPhase::Failed => {
            let attempts = attempt.tail_failures();
            let retry_at_ms =
                retries_failures(o.action, o.retry_failures).then(|| latest.retry_at_ms(attempts));
            match retry_at_ms {
                Some(at) if o.now_ms >= at => Step::Start {
                    index,
                    reason: StartReason::Retry,
                },
                _ => Step::Failed {
                    index,
                    pipeline: latest.pipeline_name.clone(),
                    attempts,
                    retry_at_ms,
                },
            }
        }
        // Unreachable after the active check above; waiting is the safe answer regardless.
        RunPhase::Pending | RunPhase::Running => Step::Wait,
    }
}

/// The number of the run `step` starts, among its pipeline's runs in the current attempt (see
/// [`crate::controllers::workflow::decide::RunRecord::attempt`]): one more than the pipeline has had in the attempt for a retry
/// or a resume, else 1. Not a start: 0.
pub(crate) fn run_attempt(o: &Observed, step: &Step) -> u32 {
    let Step::Start { index, reason } = step else {
        return 0;
    };
    if !matches!(reason, StartReason::Retry | StartReason::Resume) {
        return 1;
    }
    match read_history(o.action, o.pipelines, o.hash, o.runs) {
        History::Current(attempt) => runs_so_far(attempt.runs_of(*index)).saturating_add(1),
        History::Empty | History::Stale(_) => 1,
    }
}

fn start_over(reason: StartReason) -> Step {
    Step::Start { index: 0, reason }
}

fn restart_reason(staleness: Staleness) -> StartReason {
    match staleness {
        Staleness::SpecChanged => StartReason::SpecChanged,
        Staleness::PipelinesChanged => StartReason::PipelinesChanged,
        Staleness::HistoryMissing => StartReason::HistoryMissing,
    }
}
