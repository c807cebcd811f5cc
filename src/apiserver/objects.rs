//! Reading objects for the API: one, a list, or a watch, from the home's control plane. Lists
//! carry the change feed's position as their `resourceVersion`, and a watch follows the change
//! feed from there (or from now, after the current objects as `ADDED`), so `kubectl get -w`
//! and `kubectl wait` see every change without polling.

use std::collections::HashMap;
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::answer::{self, Refusal};
use super::fields::FieldSelector;
use super::rights::Principal;
use super::table::{self, Shape};
use crate::api::printer_columns::PrinterColumn;
use crate::api::{KindInfo, Object, ObjectKey};
use crate::store::{ChangeType, ControlPlane, Selector};

/// What a list or watch selects.
pub(crate) struct Selection {
    pub(crate) namespace: Option<String>,
    pub(crate) labels: Selector,
    pub(crate) fields: FieldSelector,
}

impl Selection {
    fn matches(&self, obj: &Object) -> bool {
        self.labels.matches(&crate::api::object::labels(obj)) && self.fields.matches(obj)
    }
}

fn store_failed(err: crate::store::Error) -> Refusal {
    match err {
        crate::store::Error::Expired { resource_version } => answer::expired(&resource_version),
        other => answer::internal(format!(
            "the control plane failed: {}",
            statestores::error_chain::ErrorChain(&other)
        )),
    }
}

/// How `who` sees `obj`: people see Secrets' values and URL passwords redacted (as `get`
/// shows them; `data` values stay base64, of `<redacted>`, so typed clients still read
/// them); a run sees what its rights let it read as it is stored.
pub(crate) fn present(kind: &KindInfo, obj: &Object, who: &Principal) -> Value {
    let is_secret = kind.group.is_empty() && kind.kind == "Secret";
    let mut value = match who {
        Principal::Run(_) if is_secret => serde_json::to_value(obj).unwrap_or(Value::Null),
        _ => crate::api::redact::redact(kind, obj),
    };
    if is_secret && *who == Principal::Admin {
        let redacted = base64::engine::general_purpose::STANDARD.encode("<redacted>");
        if let Some(data) = value.get_mut("data").and_then(Value::as_object_mut) {
            for v in data.values_mut() {
                *v = json!(redacted);
            }
        }
    }
    if let Some(map) = value.as_object_mut() {
        map.insert("apiVersion".into(), json!(kind.api_version()));
        map.insert("kind".into(), json!(kind.kind));
    }
    value
}

/// `obj` as `who` sees it, in `shape` (a one-row `Table` with the `declared` columns, or the
/// object).
fn shown(
    kind: &KindInfo,
    declared: &[PrinterColumn],
    obj: &Object,
    who: &Principal,
    shape: Shape,
) -> Value {
    match shape {
        Shape::Objects => present(kind, obj, who),
        Shape::Table(include) => table::table(kind, declared, &[obj], include, "", |o| {
            present(kind, o, who)
        }),
    }
}

/// The printer columns `kind`'s Promise declares, for a `Table`.
async fn declared(
    cp: &dyn ControlPlane,
    kind: &KindInfo,
    shape: Shape,
) -> Result<Vec<PrinterColumn>, Refusal> {
    match shape {
        Shape::Objects => Ok(Vec::new()),
        Shape::Table(_) => crate::platform::declared_columns(cp, kind)
            .await
            .map_err(store_failed),
    }
}

pub(crate) async fn get(
    cp: &dyn ControlPlane,
    kind: &KindInfo,
    namespace: Option<&str>,
    name: &str,
    who: &Principal,
    shape: Shape,
) -> Result<Value, Refusal> {
    let resource = answer::Resource {
        group: &kind.group,
        plural: &kind.plural,
    };
    let Some(obj) = cp.get(kind, namespace, name).await.map_err(store_failed)? else {
        return Err(answer::not_found(resource, name));
    };
    let declared = declared(cp, kind, shape).await?;
    Ok(shown(kind, &declared, &obj, who, shape))
}

pub(crate) async fn list(
    cp: &dyn ControlPlane,
    kind: &KindInfo,
    selection: &Selection,
    who: &Principal,
    shape: Shape,
) -> Result<Value, Refusal> {
    // The position is taken first: a watch from it misses nothing the list did not hold.
    let position = cp.current_resource_version().await.map_err(store_failed)?;
    let objects = cp
        .list(kind, selection.namespace.as_deref(), &selection.labels)
        .await
        .map_err(store_failed)?;
    let selected = objects.iter().filter(|o| selection.fields.matches(o));
    if let Shape::Table(include) = shape {
        let selected: Vec<&Object> = selected.collect();
        let declared = declared(cp, kind, shape).await?;
        return Ok(table::table(
            kind,
            &declared,
            &selected,
            include,
            &position,
            |o| present(kind, o, who),
        ));
    }
    let items: Vec<Value> = selected.map(|o| present(kind, o, who)).collect();
    let metadata = ListMeta {
        resource_version: Some(position),
        ..ListMeta::default()
    };
    Ok(json!({
        "apiVersion": kind.api_version(),
        "kind": format!("{}List", kind.kind),
        "metadata": metadata,
        "items": items,
    }))
}

fn event(kind: &str, object: &Value) -> Bytes {
    let mut line = json!({"type": kind, "object": object}).to_string();
    line.push('\n');
    Bytes::from(line)
}

/// A watch as newline-delimited `WatchEvent`s, ending after `timeout` or when the client goes.
pub(crate) fn watch(
    cp: std::sync::Arc<dyn ControlPlane>,
    kind: KindInfo,
    selection: Selection,
    since: String,
    timeout: Option<Duration>,
    who: Principal,
    shape: Shape,
) -> mpsc::Receiver<Bytes> {
    let (tx, rx) = mpsc::channel(64);
    tokio::spawn(async move {
        let run = follow(cp.as_ref(), &kind, &selection, since, (&who, shape), &tx);
        let ended = match timeout {
            Some(limit) => tokio::time::timeout(limit, run).await.unwrap_or(Ok(())),
            None => run.await,
        };
        if let Err(refusal) = ended {
            let status = serde_json::to_value(&refusal.status).unwrap_or(Value::Null);
            let _ = tx.send(event("ERROR", &status)).await;
        }
    });
    rx
}

/// Sends the changes of the selected objects after `since` (after the current objects, when
/// `since` is empty or `0`) until the client goes (`Ok`) or the feed fails.
async fn follow(
    cp: &dyn ControlPlane,
    kind: &KindInfo,
    selection: &Selection,
    mut since: String,
    (who, shape): (&Principal, Shape),
    tx: &mpsc::Sender<Bytes>,
) -> Result<(), Refusal> {
    let declared = declared(cp, kind, shape).await?;
    let shown = |obj: &Object| shown(kind, &declared, obj, who, shape);
    // What this watch last sent of each object, which a deletion shows.
    let mut sent: HashMap<ObjectKey, Object> = HashMap::new();
    if since.is_empty() || since == "0" {
        since = cp.current_resource_version().await.map_err(store_failed)?;
        let objects = cp
            .list(kind, selection.namespace.as_deref(), &selection.labels)
            .await
            .map_err(store_failed)?;
        for obj in objects.into_iter().filter(|o| selection.fields.matches(o)) {
            if tx.send(event("ADDED", &shown(&obj))).await.is_err() {
                return Ok(());
            }
            sent.insert(ObjectKey::of(&obj), obj);
        }
    }
    let mut changes = cp.watch(std::slice::from_ref(kind), &since);
    while let Some(change) = changes.next().await {
        let change = change.map_err(store_failed)?;
        let key = &change.key;
        if selection
            .namespace
            .as_deref()
            .is_some_and(|ns| key.namespace.as_deref() != Some(ns))
            || !selection
                .fields
                .matches_key(key.namespace.as_deref().unwrap_or_default(), &key.name)
        {
            continue;
        }
        let line = if change.change_type == ChangeType::Deleted {
            // Deleted before this watch saw it: its name is all there is to show.
            let mut last = sent.remove(key).unwrap_or_else(|| Object {
                types: Some(kube::core::TypeMeta {
                    api_version: kind.api_version(),
                    kind: kind.kind.clone(),
                }),
                metadata: kube::core::ObjectMeta {
                    name: Some(key.name.clone()),
                    namespace: key.namespace.clone(),
                    ..kube::core::ObjectMeta::default()
                },
                data: json!({}),
            });
            last.metadata.resource_version = Some(change.resource_version.clone());
            event("DELETED", &shown(&last))
        } else {
            let Some(obj) = cp
                .get(kind, key.namespace.as_deref(), &key.name)
                .await
                .map_err(store_failed)?
            else {
                // Deleted since: its deletion follows.
                continue;
            };
            let unchanged = sent.get(key).is_some_and(|last| {
                last.metadata.resource_version == obj.metadata.resource_version
            });
            if !selection.matches(&obj) || unchanged {
                continue;
            }
            let type_ = if sent.contains_key(key) || change.change_type == ChangeType::Modified {
                "MODIFIED"
            } else {
                "ADDED"
            };
            let line = event(type_, &shown(&obj));
            sent.insert(key.clone(), obj);
            line
        };
        if tx.send(line).await.is_err() {
            return Ok(());
        }
    }
    Ok(())
}
