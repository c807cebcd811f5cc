//! Pipeline: one step of a workflow, embedded in a Promise (not stored on its own).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `kind: Pipeline`, as written in `spec.workflows.<type>.<action>[]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Pipeline {
    pub api_version: String,
    pub kind: String,
    pub metadata: PipelineMetadata,
    #[serde(default)]
    pub spec: PipelineSpec,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PipelineMetadata {
    pub name: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PipelineSpec {
    #[serde(default)]
    pub containers: Vec<Container>,
    /// Kubernetes-only settings (volumes, rbac, jobOptions, …) kept so the YAML round-trips.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Container {
    pub name: String,
    #[serde(default)]
    pub image: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvVar>,
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EnvVar {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_from: Option<Value>,
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A workflow entry is not a valid Pipeline.
    #[error("{path}: not a valid Pipeline: {reason}")]
    Invalid { path: String, reason: String },
}

impl Pipeline {
    /// Parses the pipelines of one workflow; `path` (e.g. `spec.workflows.resource.configure`) names
    /// them in errors. Only `platform.kratix.io/v1alpha1` `Pipeline` is accepted, names must be unique.
    pub fn parse_list(path: &str, values: &[Value]) -> Result<Vec<Pipeline>, Error> {
        let mut out: Vec<Pipeline> = Vec::with_capacity(values.len());
        for (i, v) in values.iter().enumerate() {
            let item_path = format!("{path}[{i}]");
            let p: Pipeline = serde_json::from_value(v.clone()).map_err(|e| Error::Invalid {
                path: item_path.clone(),
                reason: e.to_string(),
            })?;
            if p.kind != "Pipeline" || p.api_version != super::API_VERSION {
                return Err(Error::Invalid {
                    path: item_path,
                    reason: format!(
                        "expected apiVersion {} kind Pipeline, got {} {}",
                        super::API_VERSION,
                        p.api_version,
                        p.kind
                    ),
                });
            }
            if p.metadata.name.is_empty() {
                return Err(Error::Invalid {
                    path: format!("{item_path}.metadata.name"),
                    reason: "a pipeline needs a name".into(),
                });
            }
            if out.iter().any(|o| o.metadata.name == p.metadata.name) {
                return Err(Error::Invalid {
                    path: format!("{item_path}.metadata.name"),
                    reason: format!("duplicate pipeline name {:?}", p.metadata.name),
                });
            }
            out.push(p);
        }
        Ok(out)
    }

    pub fn name(&self) -> &str {
        &self.metadata.name
    }
}
