//! Kratix's keyed workflow status in an object's status (`status.kratix.workflows.<action>`),
//! with no I/O: each workflow writes only its own key, so a delete workflow leaves the configure
//! entries as they were.

use serde_json::Value;

use crate::api::workflow_status::{WorkflowStatus, WorkflowStatuses};
use crate::api::Action;
use crate::controllers::workflow::decide;
use crate::controllers::workflow::decide::KeyedInputs;

/// The workflows as a status holds them (lenient: see [`WorkflowStatuses`]).
fn workflows_in(status: &Value) -> WorkflowStatuses {
    status
        .pointer("/kratix/workflows")
        .cloned()
        .and_then(|w| serde_json::from_value(w).ok())
        .unwrap_or_default()
}

/// Writes `action`'s workflow into `status.kratix.workflows`, leaving the other actions' as
/// they are; an empty one is left out. What the flat layout left there goes.
pub(crate) fn set_workflow(status: &mut Value, action: Action, workflow: WorkflowStatus) {
    let mut workflows = workflows_in(status);
    if workflow.is_empty() {
        workflows.0.remove(action.as_str());
    } else {
        workflows.0.insert(action.as_str().to_string(), workflow);
    }
    let Some(kratix) = crate::controllers::status_value::object_at(status, "kratix") else {
        return;
    };
    match serde_json::to_value(&workflows) {
        Ok(value) if !workflows.0.is_empty() => {
            kratix.insert("workflows".into(), value);
        }
        _ => {
            kratix.remove("workflows");
        }
    }
    if kratix.is_empty() {
        if let Some(map) = status.as_object_mut() {
            map.remove("kratix");
        }
    }
}

/// Brings `action`'s keyed status up to date from the runs, keeping what only the previous
/// status knows (transition times, the last successful completion).
pub(crate) fn update(status: &mut Value, inputs: &KeyedInputs) {
    let previous = workflows_in(status).0.remove(inputs.action.as_str());
    let next = decide::workflow_status(inputs, previous.as_ref());
    set_workflow(status, inputs.action, next);
}
