//! Work: the output of one pipeline run (or a Promise's static dependencies), in workload groups.

use std::collections::BTreeMap;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::destination::StatusWithConditions;

#[derive(CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "platform.kratix.io",
    version = "v1alpha1",
    kind = "Work",
    doc = "The output of one pipeline run, or of a Promise's static dependencies, in workload groups.",
    plural = "works",
    namespaced,
    status = "StatusWithConditions",
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].message"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct WorkSpec {
    #[serde(default)]
    // NB: no `default: ""` in the CRD: kube-apiserver 1.20 refuses empty-string defaults.
    #[schemars(skip_serializing_if = "String::is_empty")]
    pub promise_name: String,
    /// Empty for dependency Works (promise workflows and static dependencies).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource_name: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workload_groups: Vec<WorkloadGroup>,
    /// RFC 3339 time of the pipeline run that wrote this Work; changes on every run, as in Kratix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_execution_timestamp: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadGroup {
    /// md5 hex of `directory` (`5058f1af8388633f609cadb75a75dc9d` for `.`).
    pub id: String,
    #[serde(default)]
    // NB: no `default: ""` in the CRD: kube-apiserver 1.20 refuses empty-string defaults.
    #[schemars(skip_serializing_if = "String::is_empty")]
    pub directory: String,
    #[serde(default)]
    pub workloads: Vec<Workload>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub destination_selectors: Vec<WorkloadGroupSelector>,
}

/// One file: its path relative to the pipeline's `/kratix/output`, and base64(gzip(bytes)).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Workload {
    pub filepath: String,
    #[serde(default)]
    // NB: no `default: ""` in the CRD: kube-apiserver 1.20 refuses empty-string defaults.
    #[schemars(skip_serializing_if = "String::is_empty")]
    pub content: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadGroupSelector {
    #[serde(default)]
    pub match_labels: BTreeMap<String, String>,
    /// `promise`, `promise-workflow` or `resource-workflow`.
    #[serde(default)]
    // NB: no `default: ""` in the CRD: kube-apiserver 1.20 refuses empty-string defaults.
    #[schemars(skip_serializing_if = "String::is_empty")]
    pub source: String,
}

impl WorkSpec {
    pub fn is_dependency(&self) -> bool {
        self.resource_name.is_empty()
    }
}
