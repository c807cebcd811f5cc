//! Kratix's keyed workflow status in an object's status (`status.kratix.workflows.<action>`):
//! each workflow writes only its own key, so a delete workflow leaves the configure entries as
//! they were; and the migration of objects stored with the earlier flat layout.

use serde_json::Value;

use crate::api::pipeline::Pipeline;
use crate::api::workflow_status::FLAT_FIELDS;
use crate::api::Action;
use crate::controllers::workflow::decide;
use crate::controllers::workflow::decide::KeyedInputs;
use crate::controllers::workflow::decide::RunRecord;
use crate::controllers::workflow::decide::Step;

pub(crate) use crate::controllers::workflow::decide::keyed_status::{set_workflow, update};

use crate::controllers::subject::Subject;
use crate::controllers::workflow::runs::runs_of;
use crate::controllers::{now_ms, status, Error, Runtime};

/// The inputs of `subject`'s keyed status for `action`, now.
pub(crate) fn inputs<'a>(
    rt: &Runtime,
    subject: &'a Subject,
    action: Action,
    pipelines: &'a [String],
    runs: &'a [RunRecord],
    step: &'a Step,
) -> KeyedInputs<'a> {
    KeyedInputs {
        action,
        pipelines,
        runs,
        hash: &subject.hash,
        retry_failures: rt.settings.intervals.after_failure,
        step,
        generation: subject.object.metadata.generation,
        now_ms: now_ms(),
    }
}

/// The names of `pipelines`, in order.
pub(crate) fn names(pipelines: &[Pipeline]) -> Vec<String> {
    pipelines.iter().map(|p| p.name().to_string()).collect()
}

/// Migrates a status stored with the flat layout (see [`decide::migrated`]): drops the flat
/// fields and rebuilds `action`'s entries from each pipeline's newest run. Whether it did; the
/// write wakes the object, whose next reconcile goes on from the migrated status.
pub(crate) async fn migrate(
    rt: &Runtime,
    subject: &Subject,
    action: Action,
    pipelines: &[Pipeline],
) -> Result<bool, Error> {
    let flat = subject
        .object
        .data
        .pointer("/status/kratix/workflows")
        .is_some_and(decide::has_flat_layout);
    if !flat {
        return Ok(false);
    }
    let runs: Vec<RunRecord> = runs_of(rt, subject)
        .await?
        .into_iter()
        .map(|(_, record)| record)
        .collect();
    let migrated = decide::migrated(action, &names(pipelines), &runs);
    status::update_status_of(rt.cp.as_ref(), &subject.kind, &subject.object, |_, s| {
        if let Some(workflows) = s
            .pointer_mut("/kratix/workflows")
            .and_then(Value::as_object_mut)
        {
            for field in FLAT_FIELDS {
                workflows.remove(field);
            }
        }
        set_workflow(s, action, migrated.clone());
    })
    .await?;
    tracing::info!(object = %subject.key(), %action, "migrated the flat workflow status to the keyed layout");
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::workflow_status::{WorkflowPipelineStatus, WorkflowStatus};
    use serde_json::json;

    fn workflow(pipeline: &str) -> WorkflowStatus {
        WorkflowStatus {
            pipelines: vec![WorkflowPipelineStatus {
                name: pipeline.into(),
                phase: "Succeeded".into(),
                ..WorkflowPipelineStatus::default()
            }],
            ..WorkflowStatus::default()
        }
    }

    #[test]
    fn each_action_writes_its_own_key_only() {
        let entry = |name: &str| json!({"pipelines": [{"name": name, "phase": "Succeeded"}]});
        let cases = [
            (
                "delete beside configure",
                json!({"kratix": {"status": "Available", "workflows": {"configure": entry("a")}}}),
                Action::Delete,
                Some("bye"),
                json!({"kratix": {"status": "Available",
                       "workflows": {"configure": entry("a"), "delete": entry("bye")}}}),
            ),
            (
                "configure replaced, delete kept",
                json!({"kratix": {"workflows": {"configure": entry("a"), "delete": entry("bye")}}}),
                Action::Configure,
                Some("b"),
                json!({"kratix": {"workflows": {"configure": entry("b"), "delete": entry("bye")}}}),
            ),
            (
                "the flat layout goes",
                json!({"kratix": {"workflows": {"pipelines": [{"name": "a"}], "suspendedGeneration": 2}}}),
                Action::Configure,
                Some("a"),
                json!({"kratix": {"workflows": {"configure": entry("a")}}}),
            ),
            (
                "an empty workflow is left out, and so is an empty kratix",
                json!({"kratix": {"workflows": {"configure": entry("a")}}, "message": "m"}),
                Action::Configure,
                None,
                json!({"message": "m"}),
            ),
            (
                "no status yet",
                json!({}),
                Action::Configure,
                Some("a"),
                json!({"kratix": {"workflows": {"configure": entry("a")}}}),
            ),
        ];
        for (name, mut status, action, pipeline, want) in cases {
            let workflow = pipeline.map(workflow).unwrap_or_default();
            set_workflow(&mut status, action, workflow);
            assert_eq!(status, want, "{name}");
        }
    }
}
