//! GitStateStore and BucketStateStore: where Destinations' files are written.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::destination::StatusWithConditions;

/// `spec.authMethod` values Kratix's CRDs allow.
pub const GIT_AUTH_METHODS: [&str; 3] = ["basicAuth", "ssh", "githubApp"];
pub const BUCKET_AUTH_METHODS: [&str; 2] = ["accessKey", "IAM"];

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecretRef {
    pub name: String,
    /// Defaults to `default`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

impl SecretRef {
    /// The Secret's namespace (`default` when not given).
    pub fn namespace(&self) -> &str {
        self.namespace.as_deref().unwrap_or("default")
    }

    /// `spec.secretRef` of a stored state store of either kind: `None` without one.
    pub fn of(obj: &super::Object) -> Option<Result<SecretRef, serde_json::Error>> {
        let value = obj.data.get("spec")?.get("secretRef")?;
        Some(SecretRef::deserialize(value))
    }
}

#[derive(CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "platform.kratix.io",
    version = "v1alpha1",
    kind = "GitStateStore",
    doc = "A Git repository that Destinations write to.",
    plural = "gitstatestores",
    status = "StatusWithConditions",
    printcolumn = r#"{"name":"URL","type":"string","jsonPath":".spec.url"}"#,
    printcolumn = r#"{"name":"Branch","type":"string","jsonPath":".spec.branch"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#
)]
#[serde(rename_all = "camelCase")]
// The CRD defaults are Kratix's (`+kubebuilder:default` markers in
// https://github.com/syntasso/kratix/blob/ae170e22e974e45bb7cfda00986057e01b3ccfde/api/v1alpha1/gitstatestore_types.go
// and bucketstatestore_types.go); the controllers fall back to the same values.
pub struct GitStateStoreSpec {
    pub url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "main"))]
    pub branch: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<SecretRef>,
    /// `basicAuth` (default), `ssh` or `githubApp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "basicAuth", "enum" = json!(GIT_AUTH_METHODS)))]
    pub auth_method: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = json!({"name": "kratix"})))]
    pub git_author: Option<GitAuthor>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GitAuthor {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
}

impl GitStateStoreSpec {
    pub fn branch(&self) -> &str {
        self.branch
            .as_deref()
            .filter(|b| !b.is_empty())
            .unwrap_or("main")
    }
}

#[derive(CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "platform.kratix.io",
    version = "v1alpha1",
    kind = "BucketStateStore",
    doc = "An S3-compatible bucket that Destinations write to.",
    plural = "bucketstatestores",
    status = "StatusWithConditions",
    printcolumn = r#"{"name":"Name","type":"string","jsonPath":".spec.bucketName"}"#,
    printcolumn = r#"{"name":"Endpoint","type":"string","jsonPath":".spec.endpoint"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct BucketStateStoreSpec {
    pub bucket_name: String,
    pub endpoint: String,
    #[serde(default)]
    pub insecure: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<SecretRef>,
    /// `accessKey` (default) or `IAM`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "accessKey", "enum" = json!(BUCKET_AUTH_METHODS)))]
    pub auth_method: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub use_dual_stack: Option<bool>,
}
