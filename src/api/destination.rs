//! Destination: a place in a state store that one cluster (through Flux or Argo CD) reads from.

use std::collections::BTreeMap;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::condition::Condition;

#[derive(CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "platform.kratix.io",
    version = "v1alpha1",
    kind = "Destination",
    doc = "A place in a state store that one cluster reads from.",
    plural = "destinations",
    shortname = "dest",
    status = "StatusWithConditions",
    printcolumn = r#"{"name":"StateStoreKind","type":"string","jsonPath":".spec.stateStoreRef.kind"}"#,
    printcolumn = r#"{"name":"StateStoreName","type":"string","jsonPath":".spec.stateStoreRef.name"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Path","type":"string","priority":1,"jsonPath":".spec.path"}"#,
    printcolumn = r#"{"name":"Message","type":"string","priority":1,"jsonPath":".status.conditions[?(@.type==\"Ready\")].message"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct DestinationSpec {
    #[serde(default)]
    // NB: no `default: ""` in the CRD: kube-apiserver 1.20 refuses empty-string defaults.
    #[schemars(skip_serializing_if = "String::is_empty")]
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_store_ref: Option<StateStoreRef>,
    #[serde(default)]
    pub strict_match_labels: bool,
    // The CRD defaults below are Kratix's (`+kubebuilder:default` markers in
    // https://github.com/syntasso/kratix/blob/ae170e22e974e45bb7cfda00986057e01b3ccfde/api/v1alpha1/destination_types.go);
    // apply stores them, so `get -o yaml` shows what the controllers act on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = json!({"mode": "nestedByMetadata"})))]
    pub filepath: Option<Filepath>,
    /// `none` (the default): deleting the Destination leaves its files in the state store;
    /// `all`: its placements' files and canary files are removed first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = CLEANUP_NONE, "enum" = json!([CLEANUP_NONE, CLEANUP_ALL])))]
    pub cleanup: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = json!({})))]
    pub init_workloads: Option<InitWorkloads>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StateStoreRef {
    /// `GitStateStore` or `BucketStateStore`.
    pub kind: String,
    pub name: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Filepath {
    #[serde(default)]
    pub mode: FilepathMode,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
}

/// How a Destination lays out files (immutable once set).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum FilepathMode {
    #[default]
    #[serde(rename = "nestedByMetadata")]
    NestedByMetadata,
    #[serde(rename = "aggregatedYAML")]
    AggregatedYaml,
    #[serde(rename = "none")]
    None,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitWorkloads {
    #[serde(default = "default_true")]
    pub enabled: bool,
}

fn default_true() -> bool {
    true
}

/// `spec.cleanup` values.
pub(crate) const CLEANUP_NONE: &str = "none";
pub(crate) const CLEANUP_ALL: &str = "all";

impl DestinationSpec {
    /// Files are removed on deletion only with `cleanup: all`; a missing value is Kratix's
    /// default, `none` (objects stored before defaults were applied lack it).
    pub fn cleanup_all(&self) -> bool {
        self.cleanup.as_deref() == Some(CLEANUP_ALL)
    }

    pub fn filepath_mode(&self) -> FilepathMode {
        self.filepath.as_ref().map(|f| f.mode).unwrap_or_default()
    }

    /// Canary files are written unless `initWorkloads.enabled` is false.
    pub fn init_workloads_enabled(&self) -> bool {
        self.init_workloads.as_ref().is_none_or(|i| i.enabled)
    }
}

/// A status that is conditions plus whatever else controllers record.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
// `extra` is not in the schema, so the API server must keep unknown fields.
#[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
pub struct StatusWithConditions {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub extra: BTreeMap<String, Value>,
}
