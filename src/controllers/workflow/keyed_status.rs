//! Kratix's keyed workflow status in an object's status (`status.kratix.workflows.<action>`):
//! each workflow writes only its own key, so a delete workflow leaves the configure entries as
//! they were. (A status of the earlier flat layout is migrated by the object's reconcile: see
//! [`crate::controllers::workflow::decide::gate::Gate::Migrate`].)

use crate::api::pipeline::Pipeline;

/// The names of `pipelines`, in order.
pub(crate) fn names(pipelines: &[Pipeline]) -> Vec<String> {
    pipelines.iter().map(|p| p.name().to_string()).collect()
}

#[cfg(test)]
mod tests {
    use crate::api::workflow_status::{WorkflowPipelineStatus, WorkflowStatus};
    use crate::api::Action;
    use crate::controllers::workflow::decide::keyed_status::set_workflow;
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
