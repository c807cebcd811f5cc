//! The store end to end, on a real database in a temporary home.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::StreamExt;
use serde_json::{json, Value};

use super::*;
use crate::api::kinds::builtin_kinds;

/// Generous bound for anything that polls; never a timing assertion.
const PATIENCE: Duration = Duration::from_secs(30);

fn kind(name: &str) -> KindInfo {
    builtin_kinds()
        .into_iter()
        .find(|k| k.kind == name)
        .expect("a built-in kind")
}

fn work() -> KindInfo {
    kind("Work")
}

fn promise() -> KindInfo {
    kind("Promise")
}

fn object(value: Value) -> Object {
    serde_json::from_value(value).expect("a valid object")
}

fn new_work(namespace: &str, name: &str, labels: Value) -> Object {
    object(json!({
        "apiVersion": "platform.kratix.io/v1alpha1", "kind": "Work",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"replicas": 1}
    }))
}

fn store() -> (tempfile::TempDir, EmbeddedStore) {
    let home = tempfile::tempdir().expect("tempdir");
    let store = EmbeddedStore::open(&home.path().join("home")).expect("open store");
    (home, store)
}

fn names(objects: &[Object]) -> Vec<String> {
    objects
        .iter()
        .map(|o| {
            format!(
                "{}/{}",
                o.metadata.namespace.as_deref().unwrap_or("-"),
                o.metadata.name.as_deref().unwrap_or_default()
            )
        })
        .collect()
}

async fn get_work(store: &EmbeddedStore, name: &str) -> Object {
    store
        .get(&work(), Some("default"), name)
        .await
        .expect("get")
        .expect("exists")
}

/// Reads `stream` until `want` changes arrived.
async fn take_changes(stream: &mut BoxStream<'static, Result<Change>>, want: usize) -> Vec<Change> {
    let mut changes = Vec::new();
    while changes.len() < want {
        let next = tokio::time::timeout(PATIENCE, stream.next())
            .await
            .expect("a change within the bound")
            .expect("the stream goes on");
        changes.push(next.expect("a change, not an error"));
    }
    changes
}

fn summary(changes: &[Change]) -> Vec<(ChangeType, String)> {
    changes
        .iter()
        .map(|c| (c.change_type, c.key.name.clone()))
        .collect()
}

mod lifecycle;
mod objects;
