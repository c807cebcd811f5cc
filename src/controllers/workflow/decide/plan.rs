//! One look at a configure workflow, with no I/O: from the object's runs and Works, the step,
//! the run it starts and where that run stands, the Works of removed pipelines that go, the
//! conditions, and when to look again.

use std::time::Duration;

use crate::api::{labels, Action, Condition, Object, PipelineRunStatus};
use crate::controllers::status_value;
use crate::controllers::subject::Subject;
use crate::controllers::work::state::{works_state_with, WorksState};
use crate::controllers::workflow::decide;
use crate::controllers::workflow::decide::suspended_label::{self, LabelChange};
use crate::controllers::workflow::decide::Observed;
use crate::controllers::workflow::decide::RunPhase;
use crate::controllers::workflow::decide::RunRecord;
use crate::controllers::workflow::decide::Step;

/// What one look at a workflow decided: the step and, for a start, where the new run stands.
#[derive(Debug, Clone)]
pub(crate) struct Decided {
    pub(crate) step: Step,
    pub(crate) start: Option<Position>,
    /// The manual-reconciliation label asked for this look: it goes once the step started a
    /// run or found nothing to run.
    pub(crate) manual: bool,
    /// What becomes of the `kratix.io/workflow-suspended` label.
    pub(crate) suspended_label: LabelChange,
}

impl Decided {
    /// Whether the manual-reconciliation label is done with.
    pub(crate) fn clears_manual_label(&self) -> bool {
        self.manual && matches!(self.step, Step::Start { .. } | Step::NothingToRun)
    }
}

/// Decides the next step of `action`'s workflow from its runs (pure).
pub(crate) fn decide(
    subject: &Subject,
    action: Action,
    names: &[String],
    records: &[RunRecord],
    retry_failures: bool,
    now_ms: i64,
) -> Decided {
    // The delete workflow too, as in Kratix: the way to resume one a pipeline suspended
    // without a `retryAfter`.
    let manual = subject.manual_reconcile();
    let label = crate::api::object::label(&subject.object, labels::WORKFLOW_SUSPENDED);
    let annotation = subject
        .object
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(suspended_label::SUSPENDED_RUN))
        .map(String::as_str);
    let observed = Observed {
        action,
        pipelines: names,
        hash: &subject.hash,
        runs: records,
        manual_reconcile: manual,
        resumed_run: suspended_label::resumed_run(label, annotation),
        retry_failures,
        now_ms,
    };
    let step = decide::next_step(&observed);
    let suspended_label = suspended_label::change(
        suspended_label::suspending_run(&step, records, action),
        label,
        annotation,
    );
    let start = match &step {
        Step::Start { index, .. } => Some(Position {
            index: *index,
            last: *index + 1 == names.len(),
            attempt: decide::run_attempt(&observed, &step),
        }),
        _ => None,
    };
    Decided {
        step,
        start,
        manual,
        suspended_label,
    }
}

/// The record of the run a start creates, as the status shows it from the start on (its
/// sequence is not known before the run is stored: it counts as the newest).
pub(crate) fn started_record(
    decided: &Decided,
    subject: &Subject,
    action: Action,
    names: &[String],
    records: &[RunRecord],
) -> Option<RunRecord> {
    let at = decided.start.as_ref()?;
    let sequence = records.iter().map(|r| r.sequence).max().unwrap_or(0) + 1;
    let pipeline = names.get(at.index)?;
    Some(new_record(subject, action, pipeline, sequence, at))
}

/// The record of a run just made, `Pending`, for `pipeline` at `at`.
pub(crate) fn new_record(
    subject: &Subject,
    action: Action,
    pipeline: &str,
    sequence: i64,
    at: &Position,
) -> RunRecord {
    RunRecord {
        sequence,
        pipeline_name: pipeline.to_string(),
        pipeline_index: at.index,
        action,
        hash: subject.hash.clone(),
        phase: RunPhase::Pending,
        completion_time_ms: None,
        suspend: None,
        progress: None,
        attempt: at.attempt,
    }
}

/// Where a new run stands: its pipeline's index, whether that is the workflow's last, and the
/// run's number among its pipeline's runs in the current attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Position {
    pub(crate) index: usize,
    pub(crate) last: bool,
    pub(crate) attempt: u32,
}

/// Where a configure workflow stands after this look, and what the look does about it.
#[derive(Debug)]
pub(crate) struct Configured {
    pub(crate) decided: Decided,
    /// The runs' records as the object's status shows them: as read, and the run this look
    /// starts.
    pub(crate) records: Vec<RunRecord>,
    /// The Works the workflow produced (those of removed pipelines too).
    pub(crate) works: Vec<Object>,
    /// The Works of removed pipelines this look deletes (once the workflow has finished).
    pub(crate) obsolete: Vec<Object>,
    pub(crate) works_state: WorksState,
    /// The workflow's conditions (`ConfigureWorkflowCompleted`, `Reconciled`, ...).
    pub(crate) conditions: Vec<Condition>,
}

impl Configured {
    pub(crate) fn step(&self) -> &Step {
        &self.decided.step
    }

    /// What the keyed status of the configure workflow is written from, for this plan.
    pub(crate) fn keyed_inputs<'a>(
        &'a self,
        names: &'a [String],
        hash: &'a str,
        retry_failures: bool,
        generation: Option<i64>,
        now_ms: i64,
    ) -> decide::KeyedInputs<'a> {
        decide::KeyedInputs {
            action: Action::Configure,
            pipelines: names,
            runs: &self.records,
            hash,
            retry_failures,
            step: self.step(),
            generation,
            now_ms,
        }
    }
}

/// Whether a workflow has nothing left to run.
pub(crate) fn finished(step: &Step) -> bool {
    matches!(step, Step::Completed { .. } | Step::NothingToRun)
}

/// What the configure workflow of `subject` does at this look, from its runs and Works (pure):
/// the step, the run it starts, the Works of removed pipelines that go once it has finished
/// (with no pipelines left it is finished at once), and its conditions.
pub(crate) fn plan_configure(
    subject: &Subject,
    names: &[String],
    runs: &[(Object, RunRecord)],
    works: &[Object],
    retry_failures: bool,
    now_ms: i64,
) -> Configured {
    let mut records: Vec<RunRecord> = runs.iter().map(|(_, r)| r.clone()).collect();
    let decided = decide(
        subject,
        Action::Configure,
        names,
        &records,
        retry_failures,
        now_ms,
    );
    // The failure is reported from the runs as read: what this look starts is not a failure.
    let exit_reason = failure_reason(runs, &decided.step);
    records.extend(started_record(
        &decided,
        subject,
        Action::Configure,
        names,
        &records,
    ));
    let obsolete = if finished(&decided.step) {
        obsolete_works(works, names)
    } else {
        Vec::new()
    };
    let works_state = works_state_with(works, &obsolete);
    let conditions = decide::configure_conditions(&decided.step, &exit_reason, works_state);
    Configured {
        decided,
        records,
        works: works.to_vec(),
        obsolete,
        works_state,
        conditions,
    }
}

/// The Works of pipelines no longer in the workflow that are not going yet (pure).
fn obsolete_works(works: &[Object], pipelines: &[String]) -> Vec<Object> {
    works
        .iter()
        .filter(|w| crate::api::WorkType::of(w) != Some(crate::api::WorkType::StaticDependency))
        .filter(|w| {
            let pipeline = crate::api::object::label(w, crate::api::labels::PIPELINE_NAME)
                .unwrap_or_default()
                .to_string();
            !decide::obsolete_pipelines(&[pipeline], pipelines).is_empty()
        })
        .filter(|w| w.metadata.deletion_timestamp.is_none())
        .cloned()
        .collect()
}

/// The exit reason of the newest failed run, for condition messages (e.g. `exit code 3`).
pub(crate) fn failure_reason(runs: &[(Object, RunRecord)], step: &Step) -> String {
    let Step::Failed { pipeline, .. } = step else {
        return String::new();
    };
    runs.iter()
        .filter(|(_, r)| &r.pipeline_name == pipeline && r.phase == RunPhase::Failed)
        .max_by_key(|(_, r)| r.sequence)
        .and_then(|(o, _)| {
            status_value::typed_status::<PipelineRunStatus>(o)
                .ok()?
                .message
        })
        .unwrap_or_default()
}

/// [`wake_after`] at `now` (milliseconds since the epoch).
pub(crate) fn wake_after_at(step: &Step, now: i64) -> Option<Duration> {
    step.wake_at_ms().map(|at| {
        let ms = (at - now).clamp(0, 24 * 3600 * 1000);
        Duration::from_millis(u64::try_from(ms).unwrap_or(0) + 50)
    })
}

/// The sooner of two wake-ups.
pub(crate) fn sooner(a: Option<Duration>, b: Option<Duration>) -> Option<Duration> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finished_only_when_nothing_is_left_to_run() {
        let cases = [
            (Step::NothingToRun, true),
            (
                Step::Completed {
                    last_run_sequence: 3,
                },
                true,
            ),
            (Step::Wait, false),
            (
                Step::Failed {
                    index: 0,
                    pipeline: "p".into(),
                    attempts: 1,
                    retry_at_ms: Some(0),
                },
                false,
            ),
            (
                Step::Suspended {
                    index: 0,
                    retry_at_ms: None,
                    message: String::new(),
                },
                false,
            ),
        ];
        for (step, want) in cases {
            assert_eq!(finished(&step), want, "{step:?}");
        }
    }
}
