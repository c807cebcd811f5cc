//! The Kubernetes-only settings of a Pipeline (`imagePullSecrets`, `jobOptions`, `rbac`, …),
//! which the embedded runtime keeps without reading, as typed Kubernetes objects.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{LocalObjectReference, Toleration, Volume};
use k8s_openapi::api::rbac::v1::PolicyRule;
use serde::Deserialize;

use crate::api::pipeline::Pipeline;

#[derive(Debug, thiserror::Error)]
#[error("pipeline {pipeline}: spec.{field} is not valid")]
pub struct Error {
    pub pipeline: String,
    pub field: String,
    #[source]
    pub source: serde_json::Error,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct JobOptions {
    #[serde(default)]
    pub backoff_limit: Option<i32>,
}

/// One entry of `rbac.permissions`: a rule, for the pipeline's own namespace or for
/// `resourceNamespace` (`*` for every namespace).
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Permission {
    #[serde(default)]
    pub resource_namespace: String,
    #[serde(flatten)]
    pub rule: PolicyRule,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Rbac {
    #[serde(default)]
    pub service_account: String,
    #[serde(default)]
    pub permissions: Vec<Permission>,
}

/// What the Job needs beyond the containers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PodSettings {
    pub image_pull_secrets: Vec<LocalObjectReference>,
    pub job_options: JobOptions,
    pub node_selector: Option<BTreeMap<String, String>>,
    pub tolerations: Option<Vec<Toleration>>,
    pub volumes: Vec<Volume>,
    pub restart_policy: Option<String>,
    pub rbac: Rbac,
}

fn field<T: for<'de> Deserialize<'de> + Default>(
    pipeline: &Pipeline,
    name: &str,
) -> Result<T, Error> {
    match pipeline.spec.extra.get(name) {
        None | Some(serde_json::Value::Null) => Ok(T::default()),
        Some(value) => serde_json::from_value(value.clone()).map_err(|source| Error {
            pipeline: pipeline.metadata.name.clone(),
            field: name.to_string(),
            source,
        }),
    }
}

impl PodSettings {
    pub fn of(pipeline: &Pipeline) -> Result<Self, Error> {
        Ok(PodSettings {
            image_pull_secrets: field(pipeline, "imagePullSecrets")?,
            job_options: field(pipeline, "jobOptions")?,
            node_selector: field(pipeline, "nodeSelector")?,
            tolerations: field(pipeline, "tolerations")?,
            volumes: field(pipeline, "volumes")?,
            restart_policy: field(pipeline, "restartPolicy")?,
            rbac: field(pipeline, "rbac")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pipeline(spec: serde_json::Value) -> Pipeline {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "platform.kratix.io/v1alpha1",
            "kind": "Pipeline",
            "metadata": {"name": "instance"},
            "spec": spec,
        }))
        .expect("pipeline parses")
    }

    #[test]
    fn settings_are_read_or_refused_by_field() {
        let cases = [
            (
                "nothing set",
                serde_json::json!({}),
                Ok(PodSettings::default()),
            ),
            (
                "backoff limit and pull secrets",
                serde_json::json!({"jobOptions": {"backoffLimit": 2}, "imagePullSecrets": [{"name": "regcred"}]}),
                Ok(PodSettings {
                    job_options: JobOptions {
                        backoff_limit: Some(2),
                    },
                    image_pull_secrets: vec![LocalObjectReference {
                        name: "regcred".into(),
                    }],
                    ..PodSettings::default()
                }),
            ),
            (
                "permission for another namespace",
                serde_json::json!({"rbac": {"permissions": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"], "resourceNamespace": "vault"}]}}),
                Ok(PodSettings {
                    rbac: Rbac {
                        service_account: String::new(),
                        permissions: vec![Permission {
                            resource_namespace: "vault".into(),
                            rule: PolicyRule {
                                api_groups: Some(vec![String::new()]),
                                resources: Some(vec!["secrets".into()]),
                                verbs: vec!["get".into()],
                                ..PolicyRule::default()
                            },
                        }],
                    },
                    ..PodSettings::default()
                }),
            ),
            (
                "backoff limit of the wrong type",
                serde_json::json!({"jobOptions": {"backoffLimit": "two"}}),
                Err("pipeline instance: spec.jobOptions is not valid".to_string()),
            ),
        ];
        for (case, spec, want) in cases {
            let got = PodSettings::of(&pipeline(spec)).map_err(|e| e.to_string());
            assert_eq!(got, want, "{case}");
        }
    }
}
