//! WorkPlacement: one workload group of a Work scheduled onto one Destination.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::destination::StatusWithConditions;
use super::work::Workload;

#[derive(CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "platform.kratix.io",
    version = "v1alpha1",
    kind = "WorkPlacement",
    doc = "One workload group of a Work, scheduled onto one Destination.",
    plural = "workplacements",
    shortname = "wp",
    namespaced,
    status = "StatusWithConditions",
    printcolumn = r#"{"name":"Destination","type":"string","jsonPath":".spec.targetDestinationName"}"#,
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].message"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct WorkPlacementSpec {
    pub target_destination_name: String,
    #[serde(default)]
    pub workloads: Vec<Workload>,
    #[serde(default)]
    // NB: no `default: ""` in the CRD: kube-apiserver 1.20 refuses empty-string defaults.
    #[schemars(skip_serializing_if = "String::is_empty")]
    pub promise_name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource_name: String,
    /// Workload group id.
    pub id: String,
    /// The Work's generation this placement was made from.
    #[serde(default)]
    pub generation: i64,
}
