//! GitStateStore and BucketStateStore: where Destinations' files are written.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use std::collections::BTreeMap;

use serde_json::Value;

use super::condition::Condition;

/// `spec.authMethod` values Kratix's CRDs allow.
pub(crate) const GIT_AUTH_METHODS: [&str; 3] = ["basicAuth", "ssh", "githubApp"];
pub(crate) const BUCKET_AUTH_METHODS: [&str; 2] = ["accessKey", "IAM"];

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecretRef {
    pub name: String,
    /// Defaults to `default`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// What the state-store controller reports: `Ready`, and the same as one word.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
// `extra` is not in the schema, so the API server must keep unknown fields.
#[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
pub struct StateStoreStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `Ready` or `NotReady`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub extra: BTreeMap<String, Value>,
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
    status = "StateStoreStatus",
    printcolumn = r#"{"name":"URL","type":"string","jsonPath":".spec.url"}"#,
    printcolumn = r#"{"name":"Branch","type":"string","jsonPath":".spec.branch"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Path","type":"string","priority":1,"jsonPath":".spec.path"}"#,
    printcolumn = r#"{"name":"Message","type":"string","priority":1,"jsonPath":".status.conditions[?(@.type==\"Ready\")].message"}"#
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
    /// `true`: an `https://` server's certificate is not verified, for this store only.
    /// Unset or `false`: it is, against the system's CA certificates and the `caFile` of the
    /// credentials Secret. (Kratix skips verification when it is unset.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insecure: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GitAuthor {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
}

/// The prefix of every key a state store of either kind writes: its `spec.path` (both kinds
/// keep it there), read from the stored object without knowing which kind it is.
pub(crate) fn key_prefix(store: &super::Object) -> Option<&str> {
    store.data.pointer("/spec/path").and_then(Value::as_str)
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
    status = "StateStoreStatus",
    printcolumn = r#"{"name":"Name","type":"string","jsonPath":".spec.bucketName"}"#,
    printcolumn = r#"{"name":"Endpoint","type":"string","jsonPath":".spec.endpoint"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Path","type":"string","priority":1,"jsonPath":".spec.path"}"#,
    printcolumn = r#"{"name":"Message","type":"string","priority":1,"jsonPath":".status.conditions[?(@.type==\"Ready\")].message"}"#
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_is_stored_in_the_shape_it_was_read() {
        let stored = serde_json::json!({
            "conditions": [{"type": "Ready", "status": "True", "reason": "StateStoreReady",
                            "message": "State store is ready",
                            "lastTransitionTime": "2026-01-01T00:00:00.000Z"}],
            "observedGeneration": 1, "status": "Ready", "fromElsewhere": 1
        });
        let typed: StateStoreStatus =
            serde_json::from_value(stored.clone()).expect("a stored status");
        assert_eq!(typed.status.as_deref(), Some("Ready"));
        assert_eq!(serde_json::to_value(&typed).expect("serializable"), stored);
    }

    #[test]
    fn a_secret_reference_defaults_to_the_default_namespace() {
        let store = |spec: serde_json::Value| -> crate::api::Object {
            serde_json::from_value(serde_json::json!({
                "apiVersion": "platform.kratix.io/v1alpha1", "kind": "GitStateStore",
                "metadata": {"name": "g"}, "spec": spec,
            }))
            .expect("an object")
        };
        let cases = [
            (serde_json::json!({"url": "u"}), None),
            (
                serde_json::json!({"url": "u", "secretRef": {"name": "s"}}),
                Some(Some(("s".to_string(), "default".to_string()))),
            ),
            (
                serde_json::json!({"url": "u", "secretRef": {"name": "s", "namespace": "n"}}),
                Some(Some(("s".to_string(), "n".to_string()))),
            ),
            (
                serde_json::json!({"url": "u", "secretRef": {"namespace": "n"}}),
                Some(None),
            ),
        ];
        for (spec, want) in cases {
            let got = SecretRef::of(&store(spec.clone()))
                .map(|r| r.ok().map(|r| (r.name.clone(), r.namespace().to_string())));
            assert_eq!(got, want, "{spec}");
        }
    }
}
