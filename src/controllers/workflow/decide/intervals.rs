//! Reconciliation intervals: configure workflows run again periodically although nothing
//! changed, as in Kratix (<https://github.com/syntasso/kratix/blob/ae170e22e974e45bb7cfda00986057e01b3ccfde/internal/controller/dynamic_resource_request_controller.go>,
//! `shouldForcePipelineRun`): once the interval has passed since the workflow completed (or
//! failed, with `reconcileAfterFailure`), the object is labelled for manual reconciliation and
//! its workflow runs again from its first pipeline. Also the Promise label
//! `kratix.io/reconcile-resources`, which does that once for every request of the Promise: the
//! Promise's reconcile counts the ask in its status (its change wakes the requests) and each
//! request's reconcile labels itself. With no I/O.

use std::time::Duration;

use crate::api::Action;
use crate::api::{labels, Object, Promise};
use crate::controllers::workflow::decide::RunPhase;
use crate::controllers::workflow::decide::RunRecord;
use crate::controllers::workflow::decide::Step;

/// Kratix's platform-wide interval when a Promise sets none.
pub(crate) const DEFAULT_INTERVAL: Duration = Duration::from_secs(10 * 3600);
/// Kratix's smallest interval: shorter ones are refused.
pub(crate) const MIN_INTERVAL: Duration = Duration::from_secs(60);

/// The platform's interval settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Policy {
    /// The interval of Promises that set none.
    pub(crate) default: Duration,
    /// Intervals below this are ignored (Kratix: one minute).
    pub(crate) minimum: Duration,
    /// Whether a failed workflow also runs again at the interval.
    pub(crate) after_failure: bool,
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            default: DEFAULT_INTERVAL,
            minimum: MIN_INTERVAL,
            after_failure: true,
        }
    }
}

/// Where an object's interval comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// The Promise's annotation `kratix.io/reconciliation-interval`.
    Annotation,
    /// The Promise's `spec.workflows.config.reconciliationInterval`.
    Promise,
    /// The platform's default.
    Default,
}

/// The interval of a Promise's workflows (and its requests'): the annotation when it is a valid
/// duration of at least the minimum, else the Promise's setting when it is, else the default.
pub(crate) fn interval(
    annotation: Option<&str>,
    setting: Option<&str>,
    policy: &Policy,
) -> (Duration, Source) {
    let valid = |text: Option<&str>| {
        text.and_then(|t| crate::pipeline::metadata::parse_duration(t.trim()))
            .filter(|d| *d >= policy.minimum)
    };
    if let Some(d) = valid(annotation) {
        return (d, Source::Annotation);
    }
    if let Some(d) = valid(setting) {
        return (d, Source::Promise);
    }
    (policy.default, Source::Default)
}

/// How a configure workflow last finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Finished {
    Succeeded { at_ms: i64 },
    Failed { at_ms: i64 },
}

/// What the interval asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Run the workflow again now.
    RerunNow,
    /// Look again at this time (milliseconds since the epoch).
    At(i64),
    /// Nothing: the workflow has not finished, or failed and failures are not re-run.
    Never,
}

/// Whether the interval has passed since the workflow finished: strictly more than `interval`
/// since it completed, or failed when failures are re-run too.
pub(crate) fn decide(
    last: Option<Finished>,
    interval: Duration,
    after_failure: bool,
    now: i64,
) -> Decision {
    let at = match last {
        None => return Decision::Never,
        Some(Finished::Failed { .. }) if !after_failure => return Decision::Never,
        Some(Finished::Succeeded { at_ms } | Finished::Failed { at_ms }) => at_ms,
    };
    let due = at.saturating_add(i64::try_from(interval.as_millis()).unwrap_or(i64::MAX));
    if now > due {
        Decision::RerunNow
    } else {
        Decision::At(due)
    }
}

/// How the configure workflow finished, from its step and run records.
pub(crate) fn finished(step: &Step, records: &[RunRecord]) -> Option<Finished> {
    let newest = |phase: RunPhase| {
        records
            .iter()
            .filter(|r| r.action == Action::Configure && r.phase == phase)
            .max_by_key(|r| r.sequence)
    };
    match step {
        Step::Completed { last_run_sequence } => records
            .iter()
            .find(|r| r.sequence == *last_run_sequence)
            .map(|r| Finished::Succeeded {
                at_ms: r.completion_time_ms.unwrap_or(0),
            }),
        Step::Failed { .. } => newest(RunPhase::Failed).map(|r| Finished::Failed {
            at_ms: r.completion_time_ms.unwrap_or(0),
        }),
        _ => None,
    }
}

/// When the configure workflow of an object whose Promise (or revision) is `promise` runs again
/// by itself: `(wake, rerun)`, the delay until it is due, or `rerun` when it is due now (the
/// caller sets the manual-reconciliation label, unless `manual` says it is set already).
pub(crate) fn plan(
    promise: &Object,
    policy: &Policy,
    step: &Step,
    records: &[RunRecord],
    manual: bool,
    now: i64,
) -> (Option<Duration>, bool) {
    let typed: Option<Promise> = crate::api::object::to_typed(promise).ok();
    let setting = typed
        .as_ref()
        .and_then(|p| p.spec.workflows.as_ref())
        .and_then(|w| w.config.as_ref())
        .and_then(|c| c.reconciliation_interval.clone());
    let (every, _) = interval(
        crate::api::object::annotation(promise, labels::RECONCILIATION_INTERVAL),
        setting.as_deref(),
        policy,
    );
    match decide(finished(step, records), every, policy.after_failure, now) {
        Decision::Never => (None, false),
        Decision::At(due) => (
            Some(Duration::from_millis(
                u64::try_from(due.saturating_sub(now)).unwrap_or(0) + 50,
            )),
            false,
        ),
        Decision::RerunNow => (None, !manual),
    }
}

/// Where a Promise counts its asks that every request run its configure workflow again (the
/// label `kratix.io/reconcile-resources`), and where a request records the last ask it acted on:
/// `status.kratix.reconcileResources` of each.
const ASKS: &str = "reconcileResources";

/// The asks an object's status records.
pub(crate) fn asks(obj: &Object) -> Option<i64> {
    obj.data
        .pointer(&format!("/status/kratix/{ASKS}"))
        .and_then(serde_json::Value::as_i64)
}

/// Records `asks` in a status.
pub(crate) fn set_asks(status: &mut serde_json::Value, asks: i64) {
    if let Some(kratix) = crate::controllers::status_value::object_at(status, "kratix") {
        kratix.insert(ASKS.into(), serde_json::json!(asks));
    }
}

/// A Promise labelled `kratix.io/reconcile-resources=true` once it is available: one more ask
/// (its status counts it, its change wakes every request, and its label goes). `None` when it
/// asks nothing now.
pub(crate) fn promise_asks(labelled: bool, available: bool, before: Option<i64>) -> Option<i64> {
    (labelled && available).then(|| before.unwrap_or(0).saturating_add(1))
}

/// What a request does about its Promise's asks (`promise`, and `own`, the last it acted on):
/// `(rerun, record)`. A request that was reconciled before sets its manual-reconciliation label
/// (`rerun`), and records the ask once that label is there (`manual`), so that an ask is never
/// recorded without the re-run it asks for; a request seen for the first time runs its
/// workflow anyway and only records it.
pub(crate) fn request_acts_on(
    promise: Option<i64>,
    own: Option<i64>,
    reconciled_before: bool,
    manual: bool,
) -> (bool, Option<i64>) {
    match promise {
        Some(asked) if own != Some(asked) => {
            if reconciled_before && !manual {
                (true, None)
            } else {
                (false, Some(asked))
            }
        }
        _ => (false, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controllers::workflow::decide::plan::sooner;

    const S: u64 = 1000;

    fn policy(after_failure: bool) -> Policy {
        Policy {
            default: Duration::from_secs(36_000),
            minimum: Duration::from_secs(60),
            after_failure,
        }
    }

    #[test]
    fn the_annotation_wins_over_the_promise_over_the_default() {
        let secs = Duration::from_secs;
        let cases = [
            (None, None, (secs(36_000), Source::Default)),
            (None, Some("2h"), (secs(7200), Source::Promise)),
            (Some("5m"), Some("2h"), (secs(300), Source::Annotation)),
            (Some("5m"), None, (secs(300), Source::Annotation)),
            (Some("1h30m"), None, (secs(5400), Source::Annotation)),
            // Below the minimum or not a duration: ignored, the next one counts.
            (Some("30s"), Some("2h"), (secs(7200), Source::Promise)),
            (Some("soon"), Some("2h"), (secs(7200), Source::Promise)),
            (Some("-5m"), None, (secs(36_000), Source::Default)),
            (None, Some("59s"), (secs(36_000), Source::Default)),
            (None, Some("60"), (secs(36_000), Source::Default)),
            (Some(""), Some("1m"), (secs(60), Source::Promise)),
        ];
        for (annotation, setting, want) in cases {
            assert_eq!(
                interval(annotation, setting, &policy(true)),
                want,
                "{annotation:?} {setting:?}"
            );
        }
    }

    #[test]
    fn the_next_run_comes_an_interval_after_the_last_completion() {
        let every = Duration::from_secs(60);
        let ok = |at| Some(Finished::Succeeded { at_ms: at });
        let failed = |at| Some(Finished::Failed { at_ms: at });
        let minute = 60 * i64::try_from(S).expect("a second in ms");
        let cases = [
            // (last, after_failure, now, want)
            (None, true, 0, Decision::Never),
            (ok(1000), true, 1000, Decision::At(1000 + minute)),
            (ok(1000), true, 1000 + minute, Decision::At(1000 + minute)),
            (ok(1000), true, 1001 + minute, Decision::RerunNow),
            (ok(1000), false, 1001 + minute, Decision::RerunNow),
            (failed(1000), true, 1000, Decision::At(1000 + minute)),
            (failed(1000), true, 5000 + minute, Decision::RerunNow),
            (failed(1000), false, 5000 + minute, Decision::Never),
            (failed(1000), false, 1000, Decision::Never),
            (ok(i64::MAX - 5), true, 0, Decision::At(i64::MAX)),
        ];
        for (last, after_failure, now, want) in cases {
            assert_eq!(
                decide(last, every, after_failure, now),
                want,
                "{last:?} {after_failure} {now}"
            );
        }
    }

    fn run(sequence: i64, action: Action, phase: RunPhase, at: i64) -> RunRecord {
        RunRecord {
            sequence,
            pipeline_name: "p".into(),
            pipeline_index: 0,
            action,
            hash: "h".into(),
            phase,
            completion_time_ms: Some(at),
            suspend: None,
            progress: None,
            attempt: 0,
        }
    }

    #[test]
    fn the_last_finish_comes_from_the_step_and_its_runs() {
        let runs = [
            run(1, Action::Configure, RunPhase::Succeeded, 100),
            run(2, Action::Configure, RunPhase::Failed, 200),
            run(3, Action::Configure, RunPhase::Failed, 300),
            run(4, Action::Delete, RunPhase::Failed, 400),
        ];
        let failed = Step::Failed {
            index: 0,
            pipeline: "p".into(),
            attempts: 2,
            retry_at_ms: Some(0),
        };
        let cases = [
            (
                Step::Completed {
                    last_run_sequence: 1,
                },
                Some(Finished::Succeeded { at_ms: 100 }),
            ),
            (failed, Some(Finished::Failed { at_ms: 300 })),
            (Step::Wait, None),
            (Step::NothingToRun, None),
            (
                Step::Start {
                    index: 0,
                    reason: crate::controllers::workflow::decide::StartReason::FirstRun,
                },
                None,
            ),
        ];
        for (step, want) in cases {
            assert_eq!(finished(&step, &runs), want, "{step:?}");
        }
    }

    #[test]
    fn a_promise_counts_its_asks_once_available() {
        let cases = [
            (true, true, None, Some(1)),
            (true, true, Some(4), Some(5)),
            (true, false, Some(4), None),
            (false, true, Some(4), None),
        ];
        for (labelled, available, before, want) in cases {
            assert_eq!(
                promise_asks(labelled, available, before),
                want,
                "{labelled} {available} {before:?}"
            );
        }
    }

    #[test]
    fn a_request_runs_again_once_per_ask() {
        let cases = [
            ("never asked", None, None, true, false, (false, None)),
            (
                "acted on already",
                Some(2),
                Some(2),
                true,
                false,
                (false, None),
            ),
            (
                "asked: label first",
                Some(2),
                Some(1),
                true,
                false,
                (true, None),
            ),
            (
                "labelled: recorded",
                Some(2),
                Some(1),
                true,
                true,
                (false, Some(2)),
            ),
            (
                "first asked: label first",
                Some(1),
                None,
                true,
                false,
                (true, None),
            ),
            (
                "a new request only records it",
                Some(2),
                None,
                false,
                false,
                (false, Some(2)),
            ),
        ];
        for (name, promise, own, before, manual, want) in cases {
            assert_eq!(
                request_acts_on(promise, own, before, manual),
                want,
                "{name}"
            );
        }
    }

    #[test]
    fn sooner_takes_the_earlier_wake() {
        let d = Duration::from_secs;
        assert_eq!(sooner(None, None), None);
        assert_eq!(sooner(Some(d(3)), None), Some(d(3)));
        assert_eq!(sooner(None, Some(d(2))), Some(d(2)));
        assert_eq!(sooner(Some(d(3)), Some(d(2))), Some(d(2)));
    }
}
