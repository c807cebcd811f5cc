//! Promise: an API (a CRD), its workflows, its static dependencies and where its Works go.

use std::collections::BTreeMap;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::condition::Condition;
use super::words::promise_status;

#[derive(CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "platform.kratix.io",
    version = "v1alpha1",
    kind = "Promise",
    doc = "A Promise: an API for a service, the workflows that fulfil its requests, and where their output goes.",
    plural = "promises",
    status = "PromiseStatus",
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.status"}"#,
    printcolumn = r#"{"name":"Kind","type":"string","jsonPath":".status.kind"}"#,
    printcolumn = r#"{"name":"API Version","type":"string","jsonPath":".status.apiVersion"}"#,
    printcolumn = r#"{"name":"Version","type":"string","jsonPath":".status.version"}"#,
    printcolumn = r#"{"name":"Message","type":"string","jsonPath":".status.message"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct PromiseSpec {
    /// The CRD of the Promise's request kind, embedded as is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::schema::preserve_unknown_fields")]
    pub api: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflows: Option<Workflows>,
    /// Static manifests written to every matching Destination.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "super::schema::list_of_objects")]
    pub dependencies: Vec<Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub destination_selectors: Vec<DestinationSelector>,
    /// Promises that must be installed (at a version) and available before this one is.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required_promises: Vec<RequiredPromise>,
}

/// One entry of `spec.requiredPromises`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RequiredPromise {
    /// Name of the required Promise.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Its `kratix.io/promise-version` label; empty accepts any version.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
}

/// One entry of `status.requiredPromises`: a requirement and its state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RequiredPromiseStatus {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    /// `Requirement installed`, `Requirement not installed`, `Requirement not installed at the
    /// specified version` or `Requirement not available`, as Kratix words them.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub state: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DestinationSelector {
    #[serde(default)]
    pub match_labels: BTreeMap<String, String>,
}

/// `spec.workflows`: pipelines (kept as written, parsed by [`super::Pipeline`]) per type and action.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Workflows {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<WorkflowConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<WorkflowActions>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub promise: Option<WorkflowActions>,
}

/// `spec.workflows.config`: settings of every workflow of the Promise.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
pub struct WorkflowConfig {
    /// Where every workflow of the Promise runs (promise and resource workflows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipeline_namespace: Option<String>,
    /// How often configure workflows run again although nothing changed (a Go duration, e.g.
    /// `10h`); the platform's default when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconciliation_interval: Option<String>,
    /// Fields of later Kratix versions, kept as written.
    #[serde(flatten)]
    #[schemars(skip)]
    pub extra: BTreeMap<String, Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowActions {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "super::schema::list_of_objects")]
    pub configure: Vec<Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "super::schema::list_of_objects")]
    pub delete: Vec<Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
// `extra` is not in the schema, so the API server must keep unknown fields.
#[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
pub struct PromiseStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required_promises: Vec<RequiredPromiseStatus>,
    /// The Promises that require this one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required_by: Vec<RequiredBy>,
    /// When the Promise last became available (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_available_time: Option<String>,
    /// How many configure pipelines the Promise's workflow has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflows: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflows_succeeded: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflows_failed: Option<i64>,
    /// What Kratix itself records (Kratix owns `status.kratix`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kratix: Option<KratixStatus>,
    /// Everything else the controllers or pipelines record.
    #[serde(flatten)]
    #[schemars(skip)]
    pub extra: BTreeMap<String, Value>,
}

impl PromiseStatus {
    /// Whether the status says the Promise is available.
    pub fn says_available(&self) -> bool {
        self.status.as_deref() == Some(promise_status::AVAILABLE)
    }
}

/// Whether requests of `promise` may run: it says it is available and is not being deleted.
/// The one reading of a Promise's availability (its `Available` condition agrees, being written
/// with `status.status` in the same status write).
pub(crate) fn is_available(promise: &super::Object) -> bool {
    promise.metadata.deletion_timestamp.is_none()
        && promise
            .data
            .pointer("/status/status")
            .and_then(Value::as_str)
            == Some(promise_status::AVAILABLE)
}

/// One entry of `status.requiredBy`: a Promise that requires this one, at which version.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequiredBy {
    #[serde(default)]
    pub promise: PromiseVersionRef,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub required_version: String,
}

/// A Promise by name and version.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PromiseVersionRef {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
}

/// `status.kratix`: the Promise's state as Kratix records it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
pub struct KratixStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_available_time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Each workflow's pipelines, keyed by action (`configure`, `delete`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflows: Option<super::workflow_status::WorkflowStatuses>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub extra: BTreeMap<String, Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_promise_is_available_when_it_says_so_and_is_not_going() {
        let cases = [
            (
                "available",
                serde_json::json!({"status": "Available"}),
                false,
                true,
            ),
            (
                "going away",
                serde_json::json!({"status": "Available"}),
                true,
                false,
            ),
            (
                "unavailable",
                serde_json::json!({"status": "Unavailable"}),
                false,
                false,
            ),
            ("no status yet", serde_json::json!({}), false, false),
        ];
        for (name, status, deleting, want) in cases {
            let mut metadata = serde_json::json!({"name": "p"});
            if deleting {
                metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z".into();
            }
            let obj: super::super::Object = serde_json::from_value(serde_json::json!({
                "apiVersion": "platform.kratix.io/v1alpha1", "kind": "Promise",
                "metadata": metadata, "status": status.clone(),
            }))
            .expect("an object");
            assert_eq!(is_available(&obj), want, "{name}");
            let typed: PromiseStatus = serde_json::from_value(status).expect("a status");
            assert_eq!(typed.says_available(), want || deleting, "{name}");
        }
    }
}
