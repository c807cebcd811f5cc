//! A Promise's API as a CustomResourceDefinition on the API server, shaped as Kratix installs it
//! (<https://github.com/syntasso/kratix/blob/ae170e22e974e45bb7cfda00986057e01b3ccfde/internal/controller/promise_controller.go>,
//! `setStatusFieldsOnCRD`): labelled with the Promise, with the status subresource, a status
//! that keeps whatever pipelines and controllers write, Kratix's keyed
//! `status.kratix.workflows` declared as for Promises, and default printer columns.

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, PostParams};
use kube::Client;
use serde_json::{json, Value};

use super::errors::{backend, to_store};
use crate::api::{KindInfo, ObjectKey};
use crate::store;

/// The label naming the Promise a CRD (and everything else made for it) belongs to.
pub use crate::api::labels::PROMISE_NAME as PROMISE_LABEL;

/// How long an installed CRD may take to be served.
const ESTABLISH_TIMEOUT: Duration = Duration::from_secs(30);

/// The CRD to install for `promise`'s `spec.api`.
pub fn request_crd(promise: &str, api: &Value) -> Value {
    let mut crd = api.clone();
    crd["apiVersion"] = json!("apiextensions.k8s.io/v1");
    crd["kind"] = json!("CustomResourceDefinition");
    let metadata = &mut crd["metadata"];
    if let Some(meta) = metadata.as_object_mut() {
        for server_owned in ["resourceVersion", "uid", "creationTimestamp", "generation"] {
            meta.remove(server_owned);
        }
    }
    metadata["labels"][PROMISE_LABEL] = json!(promise);
    if let Some(versions) = crd
        .pointer_mut("/spec/versions")
        .and_then(Value::as_array_mut)
    {
        for version in versions {
            version["subresources"]["status"] = json!({});
            let status = &mut version["schema"]["openAPIV3Schema"]["properties"]["status"];
            *status = request_status_schema(status);
            let columns = &mut version["additionalPrinterColumns"];
            if columns.as_array().is_none_or(Vec::is_empty) {
                *columns = json!([
                    {"name": "message", "type": "string", "jsonPath": ".status.message"},
                    {"name": "status", "type": "string",
                     "jsonPath": ".status.conditions[?(@.type==\"Reconciled\")].message"},
                ]);
            }
        }
    }
    crd
}

/// The status schema of a request kind: an object keeping every field (pipelines and
/// controllers write what they like there), with the properties the Promise's API declares and
/// Kratix's own `kratix.workflows`, keyed by workflow action exactly as in the Promise CRD, so
/// that the API server keeps every field of it.
fn request_status_schema(declared: &Value) -> Value {
    let mut properties = declared
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let workflows = crate::api::crds::schema_of("Promise")
        .and_then(|promise| {
            promise.pointer("/properties/status/properties/kratix/properties/workflows")
        })
        .cloned()
        .unwrap_or_else(|| json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}));
    properties.insert(
        "kratix".into(),
        json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true,
               "properties": {"workflows": workflows}}),
    );
    let mut status = declared.as_object().cloned().unwrap_or_default();
    status.insert("type".into(), json!("object"));
    status.insert("x-kubernetes-preserve-unknown-fields".into(), json!(true));
    status.insert("properties".into(), Value::Object(properties));
    Value::Object(status)
}

/// The kind a CRD serves: its storage version (else the first), names and scope.
pub(crate) fn kind_of_crd(crd: &CustomResourceDefinition) -> Option<KindInfo> {
    let spec = &crd.spec;
    let version = spec
        .versions
        .iter()
        .find(|v| v.storage)
        .or_else(|| spec.versions.first())?;
    let names = &spec.names;
    Some(KindInfo {
        group: spec.group.clone(),
        version: version.name.clone(),
        kind: names.kind.clone(),
        plural: names.plural.clone(),
        singular: names
            .singular
            .clone()
            .unwrap_or_else(|| names.kind.to_ascii_lowercase()),
        short_names: names.short_names.clone().unwrap_or_default(),
        namespaced: spec.scope == "Namespaced",
    })
}

fn crd_key(name: &str) -> ObjectKey {
    ObjectKey::new(
        "apiextensions.k8s.io",
        "CustomResourceDefinition",
        None,
        name,
    )
}

/// Installs (or updates) the CRD of `promise`'s API and waits until the API server serves it;
/// the kind it serves.
pub(super) async fn install(
    client: &Client,
    promise: &str,
    api: &Value,
) -> store::Result<KindInfo> {
    let wanted: CustomResourceDefinition = serde_json::from_value(request_crd(promise, api))
        .map_err(|e| backend(format!("Promise {promise}: spec.api is not a CRD"), e))?;
    let kind = kind_of_crd(&wanted).ok_or_else(|| {
        backend(
            format!("Promise {promise}: spec.api"),
            std::io::Error::other("the CRD has no versions"),
        )
    })?;
    let name = wanted.metadata.name.clone().unwrap_or_default();
    let key = crd_key(&name);
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let pp = PostParams::default();
    match crds
        .get_opt(&name)
        .await
        .map_err(|e| to_store(e, &key, None, "get"))?
    {
        None => {
            crds.create(&pp, &wanted)
                .await
                .map_err(|e| to_store(e, &key, None, "create"))?;
        }
        Some(current)
            if current.spec != wanted.spec || current.metadata.labels != wanted.metadata.labels =>
        {
            let mut update = wanted.clone();
            update.metadata.resource_version = current.metadata.resource_version.clone();
            crds.replace(&name, &pp, &update).await.map_err(|e| {
                to_store(
                    e,
                    &key,
                    current.metadata.resource_version.as_deref(),
                    "update",
                )
            })?;
        }
        Some(_) => {}
    }
    wait_established(&crds, &name).await?;
    Ok(kind)
}

async fn wait_established(crds: &Api<CustomResourceDefinition>, name: &str) -> store::Result<()> {
    let key = crd_key(name);
    let deadline = tokio::time::Instant::now() + ESTABLISH_TIMEOUT;
    loop {
        let crd = crds
            .get_opt(name)
            .await
            .map_err(|e| to_store(e, &key, None, "get"))?;
        let established = crd
            .and_then(|c| c.status)
            .and_then(|s| s.conditions)
            .is_some_and(|cs| {
                cs.iter()
                    .any(|c| c.type_ == "Established" && c.status == "True")
            });
        if established {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(backend(
                format!("{key}"),
                std::io::Error::other("the API server has not established the CRD yet"),
            ));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Removes the CRD of a Promise's request kind (only one labelled for that Promise); whether
/// the kind was that Promise's (removed now, or gone already).
pub(super) async fn remove(client: &Client, promise: &str, kind: &KindInfo) -> store::Result<bool> {
    let name = format!("{}.{}", kind.plural, kind.group);
    let key = crd_key(&name);
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let Some(current) = crds
        .get_opt(&name)
        .await
        .map_err(|e| to_store(e, &key, None, "get"))?
    else {
        return Ok(true);
    };
    let owner = current
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(PROMISE_LABEL));
    if owner.map(String::as_str) != Some(promise) {
        return Ok(false); // Not ours to remove.
    }
    match crds.delete(&name, &DeleteParams::background()).await {
        Ok(_) => Ok(true),
        Err(err) => match to_store(err, &key, None, "delete") {
            store::Error::NotFound { .. } => Ok(true),
            other => Err(other),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(version: Value) -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "things.example.com", "resourceVersion": "9"},
            "spec": {
                "group": "example.com", "scope": "Namespaced",
                "names": {"kind": "Thing", "plural": "things", "singular": "thing"},
                "versions": [version],
            }
        })
    }

    #[test]
    fn the_crd_gets_kratix_labels_status_and_columns() {
        let bare = json!({"name": "v1", "served": true, "storage": true,
            "schema": {"openAPIV3Schema": {"type": "object"}}});
        let own_status = json!({"name": "v1", "served": true, "storage": true,
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {"status": {"type": "object"}}}},
            "additionalPrinterColumns": [{"name": "size", "type": "integer", "jsonPath": ".spec.size"}]});
        let own_status = {
            let mut v = own_status;
            v["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"] =
                json!({"ready": {"type": "boolean"}, "kratix": {"type": "string"}});
            v
        };
        let cases = [(bare, vec![]), (own_status, vec!["ready"])];
        let columns = [2, 1];
        for ((version, declared), columns) in cases.into_iter().zip(columns) {
            let crd = request_crd("thing", &api(version));
            assert_eq!(crd["metadata"]["labels"][PROMISE_LABEL], "thing");
            assert!(crd["metadata"].get("resourceVersion").is_none());
            let v = &crd["spec"]["versions"][0];
            assert_eq!(v["subresources"]["status"], json!({}));
            let status = &v["schema"]["openAPIV3Schema"]["properties"]["status"];
            assert_eq!(status["type"], "object");
            assert_eq!(status["x-kubernetes-preserve-unknown-fields"], true);
            for field in declared {
                assert!(
                    status["properties"].get(field).is_some(),
                    "{field} kept: {status:#}"
                );
            }
            // Kratix's keyed workflows, declared as for Promises (the Promise's own `kratix`
            // gives way).
            let workflows = &status["properties"]["kratix"]["properties"]["workflows"];
            assert_eq!(workflows["type"], "object", "{status:#}");
            assert!(
                workflows["additionalProperties"]["properties"]["pipelines"]["items"]["properties"]
                    ["hash"]
                    .is_object(),
                "{workflows:#}"
            );
            assert_eq!(
                v["additionalPrinterColumns"].as_array().map(Vec::len),
                Some(columns)
            );
            let typed: CustomResourceDefinition = serde_json::from_value(crd).expect("a valid CRD");
            let kind = kind_of_crd(&typed).expect("a kind");
            assert_eq!(
                (
                    kind.group.as_str(),
                    kind.version.as_str(),
                    kind.kind.as_str(),
                    kind.plural.as_str(),
                    kind.namespaced
                ),
                ("example.com", "v1", "Thing", "things", true)
            );
        }
    }
}
