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
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#
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
    pub workflow_type: String,
    /// `configure` or `delete`.
    pub workflow_action: String,
    /// Spec hash of the object (and Promise) the run was started for.
    pub hash: String,
    /// The pipeline as it was when the run started.
    #[schemars(schema_with = "super::schema::preserve_unknown_fields")]
    pub pipeline: Value,
    /// Whether this is the last pipeline of its workflow.
    #[serde(default)]
    pub last: bool,
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
    #[serde(flatten)]
    #[schemars(skip)]
    pub extra: BTreeMap<String, Value>,
}
