//! The conditions an object's workflow state maps to, with Kratix's types, reasons and messages.

use crate::api::condition::{Condition, ConditionStatus};
use crate::controllers::work::state::WorksState;

use crate::controllers::workflow::decide::model::Step;

use crate::api::words::reasons;
pub(crate) use crate::api::words::types::{
    CONFIGURE_WORKFLOW_COMPLETED, DELETE_WORKFLOW_COMPLETED, RECONCILED,
};

/// `ConfigureWorkflowCompleted` and `Reconciled` for the configure workflow's `step`.
///
/// `exit_reason` says why a failed pipeline failed (e.g. `exit code 3`); it is appended to the
/// failure message in parentheses and ignored for other steps. `works` only matters once the
/// workflow has completed.
///
/// A workflow with no pipelines gets no `ConfigureWorkflowCompleted` (as in Kratix) but, unlike
/// Kratix, does get `Reconciled` from its Works: with nothing to run the workflow is done, and an
/// object that could never become Reconciled would leave `wait` and `apply` hanging.
pub(crate) fn configure_conditions(
    step: &Step,
    exit_reason: &str,
    works: WorksState,
) -> Vec<Condition> {
    let in_progress = || {
        Condition::new(
            CONFIGURE_WORKFLOW_COMPLETED,
            ConditionStatus::False,
            "PipelinesInProgress",
            "Pipelines are still in progress",
        )
    };
    match step {
        Step::NothingToRun => vec![reconciled(true, works)],
        Step::Wait | Step::Start { .. } => vec![in_progress(), reconciled(false, works)],
        Step::Completed { .. } => vec![
            Condition::new(
                CONFIGURE_WORKFLOW_COMPLETED,
                ConditionStatus::True,
                "PipelinesExecutedSuccessfully",
                "Pipelines completed",
            ),
            reconciled(true, works),
        ],
        Step::Failed { pipeline, .. } => vec![
            Condition::new(
                CONFIGURE_WORKFLOW_COMPLETED,
                ConditionStatus::False,
                reasons::CONFIGURE_WORKFLOW_FAILED,
                &failure_message("A Configure Pipeline has failed", pipeline, exit_reason),
            ),
            Condition::new(
                RECONCILED,
                ConditionStatus::False,
                reasons::CONFIGURE_WORKFLOW_FAILED,
                "Failing",
            ),
        ],
        // Kratix leaves ConfigureWorkflowCompleted as it was when the pipeline started.
        Step::Suspended { .. } => vec![
            in_progress(),
            Condition::new(
                RECONCILED,
                ConditionStatus::Unknown,
                "WorkflowSuspended",
                "Suspended",
            ),
        ],
    }
}

/// `DeleteWorkflowCompleted` for the delete workflow's `step`. Kratix only ever sets it False;
/// the in-progress and True values say the same thing for objects whose deletion is watched.
/// Suspended: Kratix's reason and message
/// (<https://github.com/syntasso/kratix/blob/ae170e22e974e45bb7cfda00986057e01b3ccfde/lib/resourceutil/util.go>).
pub(crate) fn delete_condition(step: &Step, exit_reason: &str) -> Condition {
    match step {
        Step::Wait | Step::Start { .. } => Condition::new(
            DELETE_WORKFLOW_COMPLETED,
            ConditionStatus::False,
            "PipelinesInProgress",
            "Delete pipelines are still in progress",
        ),
        Step::NothingToRun | Step::Completed { .. } => Condition::new(
            DELETE_WORKFLOW_COMPLETED,
            ConditionStatus::True,
            "PipelinesExecutedSuccessfully",
            "Delete pipelines completed",
        ),
        Step::Failed { pipeline, .. } => Condition::new(
            DELETE_WORKFLOW_COMPLETED,
            ConditionStatus::False,
            "DeleteWorkflowFailed",
            &failure_message("A Delete Pipeline has failed", pipeline, exit_reason),
        ),
        // Kratix's words; what the pipeline said is in its status entry.
        Step::Suspended { .. } => Condition::new(
            DELETE_WORKFLOW_COMPLETED,
            ConditionStatus::False,
            "DeleteWorkflowSuspended",
            "The delete workflow is suspended",
        ),
    }
}

/// `Reconciled`, with Kratix's precedence: workflow in progress, then Works pending, then Works
/// failing or misplaced, else True. (A failed or suspended workflow is decided by
/// [`configure_conditions`], which sees the step.)
pub(crate) fn reconciled(configure_done: bool, works: WorksState) -> Condition {
    if !configure_done {
        return Condition::new(
            RECONCILED,
            ConditionStatus::Unknown,
            "WorkflowPending",
            "Pending",
        );
    }
    match works {
        WorksState::Pending => Condition::new(
            RECONCILED,
            ConditionStatus::Unknown,
            "WorksPending",
            "Pending",
        ),
        WorksState::Failing | WorksState::Misplaced => Condition::new(
            RECONCILED,
            ConditionStatus::False,
            "WorksFailing",
            "Failing",
        ),
        WorksState::Ready | WorksState::NoWorks => {
            Condition::new(RECONCILED, ConditionStatus::True, RECONCILED, "Reconciled")
        }
    }
}

fn failure_message(what: &str, pipeline: &str, exit_reason: &str) -> String {
    if exit_reason.is_empty() {
        format!("{what}: {pipeline}")
    } else {
        format!("{what}: {pipeline} ({exit_reason})")
    }
}
