//! PromiseRelease: installs the Promise published at a URL, at a version, and removes it when
//! the release goes. Kratix's shape:
//! <https://github.com/syntasso/kratix/blob/ae170e22e974e45bb7cfda00986057e01b3ccfde/api/v1alpha1/promiserelease_types.go>.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::condition::Condition;
use super::state_store::SecretRef;

/// The label on a Promise that a release installed, naming the release.
pub(crate) const RELEASE_NAME_LABEL: &str = "kratix.io/promise-release-name";
/// The only `sourceRef.type`.
pub(crate) const TYPE_HTTP: &str = "http";
/// The Secret key whose value is sent as the `Authorization` header (e.g. `Bearer …`).
pub(crate) const AUTHORIZATION_HEADER_KEY: &str = "authorizationHeader";

#[derive(CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "platform.kratix.io",
    version = "v1alpha1",
    kind = "PromiseRelease",
    doc = "Installs the Promise fetched from a URL, at a version.",
    plural = "promisereleases",
    category = "kratix",
    status = "PromiseReleaseStatus",
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.status"}"#,
    printcolumn = r#"{"name":"Version","type":"string","jsonPath":".spec.version"}"#
)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PromiseReleaseSpec {
    /// The Promise's `kratix.io/promise-version`; set from the fetched Promise when empty.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    #[serde(default)]
    pub source_ref: SourceRef,
}

/// Where and how to fetch the Promise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SourceRef {
    /// Only `http`.
    #[serde(rename = "type", default = "http")]
    #[schemars(extend("enum" = ["http"]))]
    pub type_: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub url: String,
    /// A Secret whose `authorizationHeader` is sent as the `Authorization` header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<SecretRef>,
}

impl Default for SourceRef {
    fn default() -> Self {
        Self {
            type_: http(),
            url: String::new(),
            secret_ref: None,
        }
    }
}

fn http() -> String {
    TYPE_HTTP.to_string()
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
pub(crate) struct PromiseReleaseStatus {
    /// `Installed` or `Error installing`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub status: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The generation the status describes (not in Kratix: lets `apply` and `wait` tell a
    /// status of an older spec from the current one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}
