//! Per-pipeline status of an object's current workflow attempt (`status.kratix.workflows.pipelines`).

use crate::api::words::phases;
use crate::api::Action;
use crate::controllers::workflow::decide::history::read_history;
use crate::controllers::workflow::decide::history::runs_so_far;
use crate::controllers::workflow::decide::history::tail_failures;
use crate::controllers::workflow::decide::history::History;
use crate::controllers::workflow::decide::model::retries_failures;
use crate::controllers::workflow::decide::model::RunPhase;
use crate::controllers::workflow::decide::model::RunRecord;

/// Phase of one pipeline in the current attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum PipelinePhase {
    /// Not run yet in the current attempt.
    Pending,
    Running,
    Succeeded,
    Failed,
    Suspended,
}

impl PipelinePhase {
    /// The value Kratix writes in the pipeline's `phase`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Pending => phases::PENDING,
            Self::Running => phases::RUNNING,
            Self::Succeeded => phases::SUCCEEDED,
            Self::Failed => phases::FAILED,
            Self::Suspended => phases::SUSPENDED,
        }
    }
}

/// Status of one pipeline of the workflow, for the current hash and attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PipelineStatus {
    pub(crate) name: String,
    pub(crate) phase: PipelinePhase,
    /// Runs of this pipeline in the current attempt (retries and resumes included).
    pub(crate) attempts: u32,
    /// Sequence of this pipeline's newest run in the current attempt, e.g. to find its logs.
    pub(crate) last_run_sequence: Option<i64>,
    /// The suspension message while suspended.
    pub(crate) message: Option<String>,
    /// When a failed pipeline is retried or a suspended one resumed.
    pub(crate) next_retry_at_ms: Option<i64>,
}

/// Status of every pipeline in `pipelines` (in order) for the current attempt at `hash`:
/// pipelines before the one reached are `Succeeded`, the reached one shows its newest run, later
/// ones are `Pending`. When the newest run belongs to another hash or pipelines list, the
/// current attempt has not started and everything is `Pending`. A failed pipeline has a
/// retry time only when `retry_failures` (see [`crate::controllers::workflow::decide::Observed::retry_failures`]).
pub(crate) fn pipeline_statuses(
    action: Action,
    pipelines: &[String],
    runs: &[RunRecord],
    hash: &str,
    retry_failures: bool,
) -> Vec<PipelineStatus> {
    let attempt = match read_history(action, pipelines, hash, runs) {
        History::Current(attempt) => Some(attempt),
        History::Empty | History::Stale(_) => None,
    };
    pipelines
        .iter()
        .enumerate()
        .map(|(index, name)| {
            let runs = attempt
                .as_ref()
                .map(|a| a.runs_of(index))
                .unwrap_or_default();
            let attempts = runs_so_far(runs);
            let mut status = PipelineStatus {
                name: name.clone(),
                phase: PipelinePhase::Pending,
                attempts,
                last_run_sequence: runs.last().map(|run| run.sequence),
                message: None,
                next_retry_at_ms: None,
            };
            let Some(newest) = runs.last() else {
                return status;
            };
            match (newest.phase, &newest.suspend) {
                (RunPhase::Pending | RunPhase::Running, _) => {
                    status.phase = PipelinePhase::Running;
                    status.message = newest.progress.clone();
                }
                (RunPhase::Succeeded, None) => status.phase = PipelinePhase::Succeeded,
                (RunPhase::Succeeded, Some(suspension)) => {
                    status.phase = PipelinePhase::Suspended;
                    status.message = Some(suspension.message.clone());
                    status.next_retry_at_ms = newest.resume_at_ms();
                }
                (RunPhase::Failed, _) => {
                    status.phase = PipelinePhase::Failed;
                    status.next_retry_at_ms = retries_failures(action, retry_failures)
                        .then(|| newest.retry_at_ms(tail_failures(runs)));
                }
            }
            status
        })
        .collect()
}
