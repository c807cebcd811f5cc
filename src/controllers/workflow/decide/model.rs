//! The data the workflow decisions work on: run records in, a [`Step`] out.

use crate::api::{Action, PipelineRunPhase};

/// Phase of one run record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum RunPhase {
    Pending,
    Running,
    Succeeded,
    Failed,
}

impl RunPhase {
    /// A run that has not finished yet: nothing else may start for its object.
    pub(crate) fn is_active(self) -> bool {
        matches!(self, Self::Pending | Self::Running)
    }
}

impl From<PipelineRunPhase> for RunPhase {
    fn from(phase: PipelineRunPhase) -> Self {
        match phase {
            PipelineRunPhase::Pending => Self::Pending,
            PipelineRunPhase::Running => Self::Running,
            PipelineRunPhase::Succeeded => Self::Succeeded,
            PipelineRunPhase::Failed => Self::Failed,
        }
    }
}

/// A pipeline asked, through `workflow-control.yaml` (`suspend: true`), to stop the workflow
/// after it: the pipeline is re-run once `retry_after_ms` has passed since the run completed, or,
/// without `retry_after_ms`, only after a spec change or a manual reconciliation.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Suspension {
    pub(crate) retry_after_ms: Option<i64>,
    pub(crate) message: String,
}

/// What one PipelineRun record says, reduced to what the decisions need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RunRecord {
    /// Stored order of runs: the only source of "newer" (never clocks).
    pub(crate) sequence: i64,
    pub(crate) pipeline_name: String,
    /// Position of the pipeline in its workflow when the run was started.
    pub(crate) pipeline_index: usize,
    pub(crate) action: Action,
    pub(crate) hash: String,
    pub(crate) phase: RunPhase,
    /// When the run finished, in milliseconds since the epoch; the origin of backoff and
    /// `retryAfter` delays. A finished run without it counts as finished at time 0, so its
    /// delay is treated as already over.
    pub(crate) completion_time_ms: Option<i64>,
    /// Set on a succeeded run whose `workflow-control.yaml` asked to suspend the workflow.
    pub(crate) suspend: Option<Suspension>,
    /// What a running run says it is doing (pulling an image), shown with its pipeline.
    pub(crate) progress: Option<String>,
    /// The run's number among its pipeline's runs in the current attempt (1 for the first, one
    /// more for each retry or resume); 0 when the run does not say.
    pub(crate) attempt: u32,
}

impl RunRecord {
    /// A success that lets the workflow move on: succeeded and not suspended.
    pub(crate) fn is_clean_success(&self) -> bool {
        self.phase == RunPhase::Succeeded && self.suspend.is_none()
    }

    /// A finished run of a pipeline that is then run again in the same attempt
    /// (retry after a failure, resume after a suspension).
    pub(crate) fn is_rerun_cause(&self) -> bool {
        match self.phase {
            RunPhase::Failed => true,
            RunPhase::Succeeded => self.suspend.is_some(),
            RunPhase::Pending | RunPhase::Running => false,
        }
    }

    /// Whether this run is for the pipeline at its recorded index in `pipelines`, for `hash`.
    pub(crate) fn is_for(&self, pipelines: &[String], hash: &str) -> bool {
        self.hash == hash && pipelines.get(self.pipeline_index) == Some(&self.pipeline_name)
    }

    fn completed_at_ms(&self) -> i64 {
        self.completion_time_ms.unwrap_or(0)
    }

    /// When a suspended run's pipeline is resumed; `None` when it waits for a person.
    pub(crate) fn resume_at_ms(&self) -> Option<i64> {
        let delay = self.suspend.as_ref()?.retry_after_ms?;
        Some(self.completed_at_ms().saturating_add(delay))
    }

    /// When a failed run's pipeline is retried, after `failures` failures in a row.
    pub(crate) fn retry_at_ms(&self, failures: u32) -> i64 {
        self.completed_at_ms().saturating_add(
            crate::controllers::workflow::decide::backoff::retry_backoff_ms(failures),
        )
    }
}

/// Everything the next-step decision looks at for one object and one workflow type.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Observed<'a> {
    /// The workflow being driven: configure while the object lives, delete once it is deleted.
    pub(crate) action: Action,
    /// Names of that workflow's pipelines, in order.
    pub(crate) pipelines: &'a [String],
    /// The object's current spec hash (label `kratix.io/hash`).
    pub(crate) hash: &'a str,
    /// Every run of this object and workflow type, any order, both actions.
    pub(crate) runs: &'a [RunRecord],
    /// Label `kratix.io/manual-reconciliation=true` is set.
    pub(crate) manual_reconcile: bool,
    /// The suspending run whose `kratix.io/workflow-suspended` label a person removed: its
    /// pipeline runs again (see [`crate::controllers::workflow::decide::suspended_label`]).
    pub(crate) resumed_run: Option<i64>,
    /// Whether a failed pipeline is retried after its backoff. Kratix's `reconcileAfterFailure`
    /// set to false leaves a failed configure workflow failed until its spec changes or it is
    /// reconciled by hand; delete workflows are always retried, since the object's deletion
    /// waits for them.
    pub(crate) retry_failures: bool,
    pub(crate) now_ms: i64,
}

/// Whether a failed pipeline of `action` is retried after its backoff: always for delete
/// workflows (the object's deletion waits for them), for configure ones when `retry_failures`.
pub(crate) fn retries_failures(action: Action, retry_failures: bool) -> bool {
    retry_failures || action == Action::Delete
}

/// Why a pipeline is started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum StartReason {
    /// No run of this workflow action exists yet.
    FirstRun,
    /// The previous pipeline succeeded in the current attempt.
    Next,
    /// The newest run was for another spec hash.
    SpecChanged,
    /// The newest runs are for the same hash but name pipelines at other positions
    /// (added, removed, renamed or reordered pipelines).
    PipelinesChanged,
    /// The records proving that earlier pipelines succeeded are gone (deleted or pruned),
    /// so the attempt cannot be trusted and starts again.
    HistoryMissing,
    /// `kratix.io/manual-reconciliation=true`: the caller clears the label after creating the run.
    Manual,
    /// The pipeline failed and its backoff has passed.
    Retry,
    /// The pipeline suspended the workflow and its `retryAfter` has passed, or a person removed
    /// the `kratix.io/workflow-suspended` label.
    Resume,
}

/// What the controller should do next for one object's workflow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    /// The workflow has no pipelines (and no run of the object is active).
    NothingToRun,
    /// A run of this object (any pipeline, action or hash) is pending or running.
    Wait,
    /// Create a run of `pipelines[index]` for the current hash.
    Start { index: usize, reason: StartReason },
    /// Every pipeline succeeded for the current hash, in order, in the latest attempt;
    /// `last_run_sequence` is the last pipeline's successful run, so callers can do
    /// once-per-completion work (deleting obsolete Works) exactly once.
    Completed { last_run_sequence: i64 },
    /// `pipelines[index]` failed `attempts` times in a row; retried at `retry_at_ms`, or never
    /// (until a spec change or manual reconciliation) when `None`.
    Failed {
        index: usize,
        pipeline: String,
        attempts: u32,
        retry_at_ms: Option<i64>,
    },
    /// `pipelines[index]` suspended the workflow; resumed at `retry_at_ms`, or never
    /// (until a spec change or manual reconciliation) when `None`.
    Suspended {
        index: usize,
        retry_at_ms: Option<i64>,
        message: String,
    },
}

impl Step {
    /// When the caller should look again without any watch event: the retry or resume time.
    pub(crate) fn wake_at_ms(&self) -> Option<i64> {
        match self {
            Self::Failed { retry_at_ms, .. } | Self::Suspended { retry_at_ms, .. } => *retry_at_ms,
            Self::NothingToRun | Self::Wait | Self::Start { .. } | Self::Completed { .. } => None,
        }
    }
}
