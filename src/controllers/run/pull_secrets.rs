//! A Pipeline's `imagePullSecrets`, read from the control plane as registry credentials for the
//! container executor. As in Kubernetes, a Secret that is missing or of another type is skipped
//! with a warning, and the pull goes ahead without it. Nothing here logs a value.

use serde_json::Value;
use tracing::warn;

use crate::api::pipeline::Pipeline;
use crate::api::{secret, Builtin};
use crate::pipeline::DockerConfig;
use crate::platform::builtin;

use crate::controllers::{Error, Runtime};

/// The Secret names of `spec.imagePullSecrets`, in order.
pub(crate) fn secret_names(pipeline: &Pipeline) -> Vec<String> {
    pipeline
        .spec
        .extra
        .get("imagePullSecrets")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|r| r.get("name").and_then(Value::as_str))
                .filter(|n| !n.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// The Docker config of a Secret's values: `.dockerconfigjson`, else the legacy `.dockercfg`.
pub(crate) fn config_of(
    values: &std::collections::BTreeMap<String, Vec<u8>>,
) -> Option<Result<DockerConfig, String>> {
    let (bytes, legacy) = match (values.get(".dockerconfigjson"), values.get(".dockercfg")) {
        (Some(bytes), _) => (bytes, false),
        (None, Some(bytes)) => (bytes, true),
        (None, None) => return None,
    };
    Some(DockerConfig::parse(bytes, legacy).map_err(|e| e.to_string()))
}

/// The registry credentials of `pipeline`, whose Secrets live in `namespace`.
pub(crate) async fn registries(
    rt: &Runtime,
    pipeline: &Pipeline,
    namespace: &str,
) -> Result<Vec<DockerConfig>, Error> {
    let mut configs = Vec::new();
    for name in secret_names(pipeline) {
        let found = rt
            .cp
            .get(&builtin(Builtin::Secret), Some(namespace), &name)
            .await?;
        let values = found
            .as_ref()
            .and_then(|o| crate::api::object::to_typed::<secret::Secret>(o).ok())
            .map(|s| secret::values(&s));
        match values.as_ref().map(config_of) {
            None => {
                warn!(pipeline = pipeline.name(), secret = %name, %namespace, "imagePullSecret not found; pulling without it");
            }
            Some(None) => {
                warn!(pipeline = pipeline.name(), secret = %name, "imagePullSecret has no .dockerconfigjson; pulling without it");
            }
            Some(Some(Err(why))) => {
                warn!(pipeline = pipeline.name(), secret = %name, %why, "imagePullSecret .dockerconfigjson cannot be read; pulling without it");
            }
            Some(Some(Ok(config))) => configs.push(config),
        }
    }
    Ok(configs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn names_and_configs() {
        let pipeline: Pipeline = serde_json::from_value(serde_json::json!({
            "apiVersion": "platform.kratix.io/v1alpha1", "kind": "Pipeline",
            "metadata": {"name": "p"},
            "spec": {"imagePullSecrets": [{"name": "a"}, {"name": ""}, {"other": 1}, {"name": "b"}]}
        }))
        .expect("pipeline");
        assert_eq!(secret_names(&pipeline), vec!["a", "b"]);
        let modern =
            BTreeMap::from([(".dockerconfigjson".to_string(), br#"{"auths":{}}"#.to_vec())]);
        assert!(matches!(config_of(&modern), Some(Ok(_))));
        let legacy = BTreeMap::from([(".dockercfg".to_string(), br"{}".to_vec())]);
        assert!(matches!(config_of(&legacy), Some(Ok(_))));
        let bad = BTreeMap::from([(".dockerconfigjson".to_string(), b"hunter2".to_vec())]);
        match config_of(&bad) {
            Some(Err(why)) => assert!(!why.contains("hunter2"), "{why}"),
            other => panic!("{other:?}"),
        }
        assert!(config_of(&BTreeMap::new()).is_none());
    }
}
