//! Counters that only grow, across processes and restarts: one ConfigMap per counter in the
//! system namespace, advanced by a write conditioned on its `resourceVersion`.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use kube::Client;

use super::errors::{backend, to_store};
use super::CAS_ATTEMPTS;
use crate::api::{ObjectKey, SYSTEM_NAMESPACE};
use crate::store;

const VALUE: &str = "value";

/// The ConfigMap holding counter `name`: a DNS label made of the name's letters and digits.
pub(super) fn config_map_name(name: &str) -> String {
    let cleaned: String = name
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let mut full = format!("kratix-rs-sequence-{cleaned}");
    full.truncate(63);
    full.trim_end_matches('-').to_string()
}

/// The counter's next value, from its stored one.
pub(super) fn advance(stored: Option<&str>) -> Result<i64, std::num::ParseIntError> {
    Ok(stored.map(str::parse::<i64>).transpose()?.unwrap_or(0) + 1)
}

pub(super) async fn next(client: &Client, name: &str) -> store::Result<i64> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), SYSTEM_NAMESPACE);
    let cm_name = config_map_name(name);
    let key = ObjectKey::new("", "ConfigMap", Some(SYSTEM_NAMESPACE), &cm_name);
    let pp = PostParams::default();
    for _ in 0..CAS_ATTEMPTS {
        let current = api
            .get_opt(&cm_name)
            .await
            .map_err(|e| to_store(e, &key, None, "get"))?;
        let stored = current
            .as_ref()
            .and_then(|cm| cm.data.as_ref())
            .and_then(|d| d.get(VALUE))
            .map(String::as_str);
        let value = advance(stored).map_err(|e| backend(format!("counter {name} in {key}"), e))?;
        let data = BTreeMap::from([(VALUE.to_string(), value.to_string())]);
        let result = match current {
            None => {
                let cm = ConfigMap {
                    metadata: kube::core::ObjectMeta {
                        name: Some(cm_name.clone()),
                        namespace: Some(SYSTEM_NAMESPACE.into()),
                        labels: Some(BTreeMap::from([(
                            crate::api::labels::MANAGED_BY.to_string(),
                            "kratix-rs".to_string(),
                        )])),
                        annotations: Some(BTreeMap::from([(
                            "kratix.io/sequence".to_string(),
                            name.to_string(),
                        )])),
                        ..Default::default()
                    },
                    data: Some(data),
                    ..Default::default()
                };
                api.create(&pp, &cm)
                    .await
                    .map_err(|e| to_store(e, &key, None, "create"))
            }
            Some(mut cm) => {
                cm.data = Some(data);
                let expected = cm.metadata.resource_version.clone();
                api.replace(&cm_name, &pp, &cm)
                    .await
                    .map_err(|e| to_store(e, &key, expected.as_deref(), "update"))
            }
        };
        match result {
            Ok(_) => return Ok(value),
            Err(store::Error::Conflict { .. } | store::Error::AlreadyExists { .. }) => continue,
            Err(other) => return Err(other),
        }
    }
    Err(store::Error::Conflict {
        key,
        expected: String::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_name_valid_config_maps_and_advance_by_one() {
        let names = [
            ("pipelinerun", "kratix-rs-sequence-pipelinerun"),
            ("Runs/of.X", "kratix-rs-sequence-runs-of-x"),
            (
                &"a".repeat(80),
                &format!("kratix-rs-sequence-{}", "a".repeat(44)),
            ),
        ];
        for (name, want) in names {
            assert_eq!(config_map_name(name), want, "{name}");
        }
        let values = [
            (None, Some(1)),
            (Some("1"), Some(2)),
            (Some("41"), Some(42)),
            (Some("x"), None),
        ];
        for (stored, want) in values {
            assert_eq!(advance(stored).ok(), want, "{stored:?}");
        }
    }
}
