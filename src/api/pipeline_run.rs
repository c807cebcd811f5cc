//! PipelineRun: the record of one pipeline run, the embedded counterpart of a Kratix Job.

use std::collections::BTreeMap;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "platform.kratix.io",
    version = "v1alpha1",
    kind = "PipelineRun",
    doc = "The record of one pipeline run.",
    plural = "pipelineruns",
    shortname = "pr",
    namespaced,
    status = "PipelineRunStatus",
    printcolumn = r#"{"name":"Pipeline","type":"string","jsonPath":".spec.pipelineName"}"#,
    printcolumn = r#"{"name":"Action","type":"string","jsonPath":".spec.workflowAction"}"#,
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#,
    printcolumn = r#"{"name":"Start","type":"string","jsonPath":".status.startTime"}"#,
    printcolumn = r#"{"name":"Completion","type":"string","jsonPath":".status.completionTime"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct PipelineRunSpec {
    /// Stored order of runs; never derived from clocks.
    pub sequence: i64,
    pub promise_name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource_name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource_namespace: String,
    pub pipeline_name: String,
    /// Position of the pipeline in its workflow when the run was started.
    pub pipeline_index: i64,
    /// `promise` or `resource`.
    #[schemars(with = "String")]
    pub workflow_type: super::WorkflowType,
    /// `configure` or `delete`.
    #[schemars(with = "String")]
    pub workflow_action: super::Action,
    /// Spec hash of the object (and Promise) the run was started for.
    pub hash: String,
    /// The Promise version the run was started at (`KRATIX_PROMISE_VERSION` of its
    /// containers): the revision a request's binding names, or `not-set` for an unversioned
    /// Promise. Empty in runs stored before it was recorded.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub promise_version: String,
    /// The pipeline as it was when the run started.
    #[schemars(schema_with = "super::schema::preserve_unknown_fields")]
    pub pipeline: Value,
    /// Whether this is the last pipeline of its workflow.
    #[serde(default)]
    pub last: bool,
    /// The run's number among the runs of its pipeline in the workflow's current attempt: 1,
    /// or one more than the run it retries or resumes. Kept on the run so that pruning older runs
    /// forgets neither how often the pipeline ran nor how long its retries wait. 0 (left out)
    /// for runs stored before it was recorded.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub attempt: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl PipelineRunSpec {
    /// The spec as the controllers store it. A promise workflow's run has no `resourceName` or
    /// `resourceNamespace`: the fields are left out rather than stored empty, as kube-apiserver
    /// (1.20 as Debian builds it) reads an empty string in a custom resource as null and refuses
    /// it for a field of type string.
    pub fn stored(&self) -> Result<Value, serde_json::Error> {
        serde_json::to_value(self)
    }
}

impl PipelineRunSpec {
    /// `KRATIX_PROMISE_VERSION` of the run: the version it was started at; for a run stored
    /// before runs recorded it, the Promise's current version (`promise_label`).
    pub fn promise_version_or(&self, promise_label: Option<&str>) -> String {
        if self.promise_version.is_empty() {
            super::versions::run_version(promise_label).to_string()
        } else {
            self.promise_version.clone()
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum PipelineRunPhase {
    #[default]
    Pending,
    Running,
    Succeeded,
    Failed,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
// `extra` is not in the schema, so the API server must keep unknown fields.
#[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
pub struct PipelineRunStatus {
    #[serde(default)]
    pub phase: PipelineRunPhase,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The executor that claimed the run while it is `Running`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executor: Option<RunExecutor>,
    /// What the pipeline asked of its workflow (`/kratix/metadata/workflow-control.yaml`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_control: Option<WorkflowControl>,
    /// The pipeline's `/kratix/metadata/status.yaml`, recorded when the run succeeded: its
    /// owner's reconcile carries it over into the owner's status (the owner's status has one
    /// writer, its reconcile).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::schema::preserve_unknown_fields")]
    pub status_yaml: Option<Value>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub extra: BTreeMap<String, Value>,
}

/// One controller instance in one process: the claimant of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunExecutor {
    /// The machine's boot, from `/proc/sys/kernel/random/boot_id`.
    pub boot_id: String,
    pub pid: u32,
    /// When the process started, in clock ticks since boot (`/proc/<pid>/stat`, field 22).
    pub process_start: u64,
    /// Distinguishes controller instances of one process.
    pub instance: String,
}

/// A run's request to suspend its workflow, optionally retrying after a delay.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowControl {
    #[serde(default)]
    pub suspend: bool,
    /// Stored as `null` when the pipeline gave no delay.
    #[serde(default)]
    pub retry_after_ms: Option<i64>,
    #[serde(default)]
    // NB: no `default: ""` in the CRD: kube-apiserver 1.20 refuses empty-string defaults.
    #[schemars(skip_serializing_if = "String::is_empty")]
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_gets_the_version_it_was_started_at() {
        let spec = |version: &str| PipelineRunSpec {
            promise_version: version.into(),
            ..Default::default()
        };
        let cases = [
            ("recorded", spec("v1"), Some("v3"), "v1"),
            (
                "recorded placeholder",
                spec("not-set"),
                Some("v3"),
                "not-set",
            ),
            ("older run: the Promise's", spec(""), Some("v3"), "v3"),
            ("older run, unversioned", spec(""), None, "not-set"),
            ("older run, empty label", spec(""), Some(""), "not-set"),
        ];
        for (name, spec, label, want) in cases {
            assert_eq!(spec.promise_version_or(label), want, "{name}");
        }
    }

    #[test]
    fn status_is_stored_in_the_shape_it_was_read() {
        let cases = [
            serde_json::json!({"phase": "Pending"}),
            serde_json::json!({"phase": "Running", "startTime": "2026-01-01T00:00:00.000Z",
                "executor": {"bootId": "b", "pid": 7, "processStart": 9, "instance": "i"}}),
            serde_json::json!({"phase": "Succeeded", "completionTime": "t", "exitCode": 0,
                "workflowControl": {"suspend": true, "retryAfterMs": null, "message": ""},
                "somethingElse": [1]}),
            serde_json::json!({"phase": "Failed", "message": "container c exited with code 3",
                "exitCode": 3}),
        ];
        for stored in cases {
            let typed: PipelineRunStatus =
                serde_json::from_value(stored.clone()).expect("a stored status");
            assert_eq!(
                serde_json::to_value(&typed).expect("serializable"),
                stored,
                "{stored}"
            );
        }
    }
}
