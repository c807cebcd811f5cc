//! Kratix's keyed workflow status (`status.kratix.workflows.<action>`) of one workflow, built
//! from its run records, and the migration of the earlier flat layout.
//!
//! Kratix keys the status by workflow action since
//! <https://github.com/syntasso/kratix/blob/493fce745ae0ca8b913b15706508ef5013d854b2/lib/resourceutil/util.go>
//! (`ResetPipelineStatusToPending`, `MarkCurrentPipelineAs`), so a delete workflow no longer
//! overwrites the configure entries. An entry's `hash` is the `kratix.io/hash` of the pipeline's
//! last run: a pipeline is settled once it succeeded at the object's current hash.

use serde_json::Value;

use crate::api::formats::rfc3339_secs;
use crate::api::workflow_status::{WorkflowPipelineStatus, WorkflowStatus, FLAT_FIELDS};

use crate::api::Action;
use crate::controllers::workflow::decide::model::RunPhase;
use crate::controllers::workflow::decide::model::RunRecord;
use crate::controllers::workflow::decide::model::Step;
use crate::controllers::workflow::decide::status::pipeline_statuses;
use crate::controllers::workflow::decide::status::PipelinePhase;

/// What one workflow's keyed status is made of.
#[derive(Debug, Clone, Copy)]
pub(crate) struct KeyedInputs<'a> {
    pub(crate) action: Action,
    /// The workflow's pipelines, in order.
    pub(crate) pipelines: &'a [String],
    /// Every run of the object and workflow type, any order, both actions.
    pub(crate) runs: &'a [RunRecord],
    /// The object's current `kratix.io/hash`.
    pub(crate) hash: &'a str,
    /// See [`crate::controllers::workflow::decide::Observed::retry_failures`].
    pub(crate) retry_failures: bool,
    /// What the workflow is doing, as decided from `runs`.
    pub(crate) step: &'a Step,
    /// The object's `metadata.generation`, recorded while a pipeline suspends the workflow.
    pub(crate) generation: Option<i64>,
    pub(crate) now_ms: i64,
}

/// The keyed status of one workflow: each pipeline's phase in the current attempt (as
/// [`pipeline_statuses`] says) with the hash of its last run; `lastTransitionTime` kept from
/// `previous` while the phase stays; `suspendedGeneration` while a pipeline suspends the
/// workflow; for configure workflows, `lastSuccessfulConfigureWorkflowTime` set when the
/// workflow completes (the last run's completion) and kept while it runs again.
pub(crate) fn workflow_status(
    input: &KeyedInputs,
    previous: Option<&WorkflowStatus>,
) -> WorkflowStatus {
    let now = rfc3339_secs(input.now_ms);
    let pipelines = pipeline_statuses(
        input.action,
        input.pipelines,
        input.runs,
        input.hash,
        input.retry_failures,
    )
    .into_iter()
    .map(|status| {
        let phase = status.phase.as_str();
        let before = previous.and_then(|p| p.pipelines.iter().find(|e| e.name == status.name));
        let last_transition_time = match before {
            Some(entry) if entry.phase == phase && entry.last_transition_time.is_some() => {
                entry.last_transition_time.clone()
            }
            _ => now.clone(),
        };
        WorkflowPipelineStatus {
            hash: newest_run(input.action, &status.name, input.runs).map(|r| r.hash.clone()),
            phase: phase.to_string(),
            attempts: i64::from(status.attempts),
            message: status.message,
            next_retry_at: status.next_retry_at_ms.and_then(rfc3339_secs),
            last_transition_time,
            name: status.name,
        }
    })
    .collect();
    WorkflowStatus {
        pipelines,
        suspended_generation: match input.step {
            Step::Suspended { .. } => input.generation,
            _ => None,
        },
        last_successful_configure_workflow_time: last_success(input, previous),
    }
}

/// When the configure workflow last completed: the completion of the run that completed it now,
/// else what `previous` said.
fn last_success(input: &KeyedInputs, previous: Option<&WorkflowStatus>) -> Option<String> {
    if input.action != Action::Configure {
        return None;
    }
    if let Step::Completed { last_run_sequence } = input.step {
        let at = input
            .runs
            .iter()
            .find(|run| run.sequence == *last_run_sequence)
            .and_then(|run| run.completion_time_ms)
            .unwrap_or(input.now_ms);
        return rfc3339_secs(at);
    }
    previous.and_then(|p| p.last_successful_configure_workflow_time.clone())
}

/// The newest run of `pipeline` in `action`'s workflow, by stored sequence.
fn newest_run<'r>(action: Action, pipeline: &str, runs: &'r [RunRecord]) -> Option<&'r RunRecord> {
    runs.iter()
        .filter(|run| run.action == action && run.pipeline_name == pipeline)
        .max_by_key(|run| run.sequence)
}

/// Whether `status.kratix.workflows` still holds a field of the earlier flat layout
/// (`pipelines`, `suspendedGeneration`, `lastSuccessfulConfigureWorkflowTime` directly under it).
pub(crate) fn has_flat_layout(workflows: &Value) -> bool {
    workflows
        .as_object()
        .is_some_and(|map| FLAT_FIELDS.iter().any(|field| map.contains_key(*field)))
}

/// The keyed status an object stored with the flat layout gets for its `action` workflow. As
/// Kratix's upgrade does (from its newest Job per pipeline), the flat entries are not trusted
/// (an API server applying the keyed schema prunes them to empty objects): each pipeline is
/// rebuilt from its newest run (name, hash, phase), and a pipeline without a run is `Pending`,
/// so that it runs again. The flat `suspendedGeneration` and
/// `lastSuccessfulConfigureWorkflowTime` are dropped, not moved.
pub(crate) fn migrated(action: Action, pipelines: &[String], runs: &[RunRecord]) -> WorkflowStatus {
    let pipelines = pipelines
        .iter()
        .map(|name| {
            let newest = newest_run(action, name, runs);
            WorkflowPipelineStatus {
                name: name.clone(),
                hash: newest.map(|run| run.hash.clone()),
                phase: newest
                    .map_or(PipelinePhase::Pending, phase_of)
                    .as_str()
                    .to_string(),
                ..WorkflowPipelineStatus::default()
            }
        })
        .collect();
    WorkflowStatus {
        pipelines,
        ..WorkflowStatus::default()
    }
}

/// A pipeline's phase as its run left it.
fn phase_of(run: &RunRecord) -> PipelinePhase {
    match (run.phase, &run.suspend) {
        (RunPhase::Pending | RunPhase::Running, _) => PipelinePhase::Running,
        (RunPhase::Succeeded, None) => PipelinePhase::Succeeded,
        (RunPhase::Succeeded, Some(_)) => PipelinePhase::Suspended,
        (RunPhase::Failed, _) => PipelinePhase::Failed,
    }
}
