//! What a run that ended does, with no I/O: from how its containers ended and what they left,
//! the outcome recorded on the run (with the pipeline's `status.yaml`, which the run's owner
//! carries over into its own status), whether its Work is written, and the event said on its
//! object.

use serde_json::Value;

use crate::api::{Action, PipelineRunPhase, WorkflowControl, WorkflowType};
use crate::events::Reason;
use crate::pipeline::metadata::WorkflowControl as RequestedControl;
use crate::pipeline::{RunResult, STATUS_WRITER};

use crate::controllers::run::outcome;
use crate::controllers::run::outcome::Finished;
use crate::controllers::run::status_yaml;

/// What the run observed once its containers ended.
#[derive(Debug)]
pub(super) struct Ended<'a> {
    pub(super) workflow_type: WorkflowType,
    pub(super) action: Action,
    /// `<action> pipeline <name>`, as events name the pipeline.
    pub(super) what: &'a str,
    pub(super) result: &'a RunResult,
    pub(super) timeout: std::time::Duration,
    pub(super) control: &'a RequestedControl,
    /// The pipeline's `status.yaml`, if it wrote one.
    pub(super) status_yaml: Option<&'a Value>,
    /// Whether the run left an output (a configure run that succeeded does).
    pub(super) has_output: bool,
}

/// What the run does about how it ended.
#[derive(Debug, PartialEq)]
pub(super) struct AfterRun {
    /// Recorded on the run, a `status.yaml` that fits included.
    pub(super) finished: Finished,
    /// Write the run's Work from its output.
    pub(super) write_work: bool,
    /// The event said on the object.
    pub(super) event: (Reason, String),
}

/// Decides what a run that ended records and writes.
pub(super) fn after_run(e: &Ended<'_>) -> AfterRun {
    let refused = match (e.result, e.status_yaml) {
        (RunResult::Succeeded, Some(status)) => status_yaml::refusal(e.workflow_type, status),
        _ => None,
    };
    let mut finished = match &refused {
        // Nothing of a run whose status does not fit is kept: it fails as a status-writer
        // that refused what the pipeline left.
        Some(reason) => outcome::finished(
            &RunResult::Failed {
                container: STATUS_WRITER.into(),
                exit_code: None,
                reason: reason.clone(),
            },
            e.timeout,
            &RequestedControl::default(),
        ),
        None => outcome::finished(e.result, e.timeout, e.control),
    };
    let succeeded = finished.phase == PipelineRunPhase::Succeeded;
    finished.status_yaml = e.status_yaml.filter(|_| succeeded).cloned();
    // A pipeline that suspends its workflow writes no Work, as in Kratix.
    let write_work =
        succeeded && e.action == Action::Configure && !e.control.suspends() && e.has_output;
    let event = outcome_event(e.what, &finished);
    AfterRun {
        finished,
        write_work,
        event,
    }
}

/// The event a finished run records on its object.
fn outcome_event(what: &str, finished: &Finished) -> (Reason, String) {
    match (finished.phase, &finished.control) {
        (PipelineRunPhase::Succeeded, Some(control)) => {
            (Reason::WorkflowSuspended, suspension_message(what, control))
        }
        (PipelineRunPhase::Succeeded, None) => {
            (Reason::PipelineSucceeded, format!("{what} succeeded"))
        }
        _ => (
            Reason::PipelineFailed,
            format!("{what} failed: {}", finished.message),
        ),
    }
}

/// What a run that suspended its workflow says: the pipeline's message, and when it runs again
/// (whole seconds) when it asked to be retried.
fn suspension_message(what: &str, control: &WorkflowControl) -> String {
    let mut message = format!("{what} suspended the workflow");
    if !control.message.is_empty() {
        message.push_str(&format!(": {}", control.message));
    }
    if let Some(ms) = control.retry_after_ms {
        message.push_str(&format!(" (runs again in {}s)", ms.div_euclid(1000)));
    }
    message
}

#[cfg(test)]
mod tests;
