//! Promise versions: a PromiseRevision per `kratix.io/promise-version` of a Promise, and a
//! ResourceBinding per request saying which version its workflows run with. Field names, labels
//! and printer columns are Kratix's:
//! <https://github.com/syntasso/kratix/blob/ae170e22e974e45bb7cfda00986057e01b3ccfde/api/v1alpha1/promiserevision_types.go>,
//! <https://github.com/syntasso/kratix/blob/ae170e22e974e45bb7cfda00986057e01b3ccfde/api/v1alpha1/resourcebinding_types.go>.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::condition::Condition;

/// The label that marks the latest revision of a Promise (value `true`).
pub(crate) const LATEST_REVISION_LABEL: &str = "kratix.io/latest-revision";
/// A binding's `spec.version` that follows the Promise's latest revision.
pub(crate) const LATEST: &str = "latest";
/// The condition a binding reports an upgrade (a change of version) with.
pub(crate) use crate::api::words::types::UPGRADE_SUCCEEDED;
/// `KRATIX_PROMISE_VERSION` of a run of a Promise without a `kratix.io/promise-version` label:
/// Kratix's placeholder for an unversioned Promise.
pub(crate) const UNVERSIONED: &str = "not-set";

/// The version a workflow of a Promise runs at, as its pipelines see it: the version when there
/// is one, else [`UNVERSIONED`].
pub(crate) fn run_version(version: Option<&str>) -> &str {
    version.filter(|v| !v.is_empty()).unwrap_or(UNVERSIONED)
}

/// `{name}` of the Promise a revision or binding belongs to.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PromiseRef {
    pub name: String,
}

/// `{name, namespace}` of the request a binding tracks.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ResourceRef {
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// The request's generation when the binding was recorded (Kratix's field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
}

#[derive(CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "platform.kratix.io",
    version = "v1alpha1",
    kind = "PromiseRevision",
    doc = "One version of a Promise: its spec as it was at that version.",
    plural = "promiserevisions",
    category = "kratix",
    status = "PromiseRevisionStatus",
    printcolumn = r#"{"name":"Promise","type":"string","jsonPath":".spec.promiseRef.name","description":"The name of the Promise this revision is based on."}"#,
    printcolumn = r#"{"name":"Version","type":"string","jsonPath":".spec.version","description":"The version of the Promise this revision is based on."}"#,
    printcolumn = r#"{"name":"Latest","type":"boolean","jsonPath":".status.latest","description":"Indicates if this PromiseRevision is the latest."}"#
)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PromiseRevisionSpec {
    pub promise_ref: PromiseRef,
    /// The Promise's `spec` at this version, as stored.
    #[schemars(schema_with = "super::schema::promise_spec")]
    pub promise_spec: Value,
    pub version: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
pub(crate) struct PromiseRevisionStatus {
    /// Only one revision of a Promise is the latest at a time.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub latest: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

#[derive(CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "platform.kratix.io",
    version = "v1alpha1",
    kind = "ResourceBinding",
    doc = "Which version of its Promise a request is reconciled with.",
    plural = "resourcebindings",
    category = "kratix",
    namespaced,
    status = "ResourceBindingStatus",
    printcolumn = r#"{"name":"Resource","type":"string","jsonPath":".spec.resourceRef.name","description":"Resource using a Promise"}"#,
    printcolumn = r#"{"name":"Promise","type":"string","jsonPath":".spec.promiseRef.name","description":"Promise being used by the Resource"}"#,
    printcolumn = r#"{"name":"Desired","type":"string","jsonPath":".spec.version","description":"Promise version the resource should be reconciled with"}"#,
    printcolumn = r#"{"name":"Applied","type":"string","jsonPath":".status.lastAppliedVersion","description":"Promise version the resource was last reconciled with"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ResourceBindingSpec {
    /// A revision's version, or `latest` to follow the Promise's latest revision.
    pub version: String,
    pub promise_ref: PromiseRef,
    pub resource_ref: ResourceRef,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
pub struct ResourceBindingStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The version the request's configure workflow last completed with.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub last_applied_version: String,
    /// The version whose configure workflow last failed; cleared once one succeeds.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub failed_version: String,
    /// The request's health, as its `status.healthStatus` says, so that whoever may read the
    /// binding but not the request (an upgrade's checks) sees it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_status: Option<BindingHealth>,
}

/// `status.healthStatus` of a ResourceBinding: the state of its request's health and the
/// Promise version that health describes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BindingHealth {
    /// The request's `status.healthStatus.state`.
    pub state: String,
    /// The version the health describes (the state is `unknown` from the moment the request
    /// runs at another version until a record of that version arrives).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub promise_version: String,
}
