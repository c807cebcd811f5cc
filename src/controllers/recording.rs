//! A control plane that records every write made through it, for tests that name the writes one
//! reconcile makes. The store underneath is real; only the record is added.

use std::sync::{Arc, Mutex, PoisonError};

use futures::stream::BoxStream;
use serde_json::Value;

use crate::api::{KindInfo, Object};
use crate::store::{Change, ControlPlane, Result, Selector};

/// One write: what was done, to which object (`Kind namespace/name`), and what was written
/// (the status for a status write, the object's labels, finalizers and spec otherwise).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Write {
    pub(crate) verb: &'static str,
    pub(crate) object: String,
    pub(crate) written: Value,
}

#[derive(Debug)]
pub(crate) struct Recording {
    inner: Arc<dyn ControlPlane>,
    writes: Mutex<Vec<Write>>,
}

impl Recording {
    pub(crate) fn new(inner: Arc<dyn ControlPlane>) -> Self {
        Self {
            inner,
            writes: Mutex::new(Vec::new()),
        }
    }

    /// The writes recorded since the last call.
    pub(crate) fn take(&self) -> Vec<Write> {
        std::mem::take(&mut *self.writes.lock().unwrap_or_else(PoisonError::into_inner))
    }

    fn record(&self, verb: &'static str, kind: &KindInfo, obj: &Object) {
        let name = obj.metadata.name.clone().unwrap_or_default();
        let object = match &obj.metadata.namespace {
            Some(ns) => format!("{} {ns}/{name}", kind.kind),
            None => format!("{} {name}", kind.kind),
        };
        // An event's name and labels are made afresh each time: what it says is what counts.
        if kind.kind == "Event" {
            let said = |field: &str| obj.data.get(field).cloned().unwrap_or(Value::Null);
            let written = serde_json::json!({"reason": said("reason"), "message": said("message")});
            self.push(verb, "Event".into(), written);
            return;
        }
        let written = match verb {
            "update_status" => obj.data.get("status").cloned().unwrap_or(Value::Null),
            _ => serde_json::json!({
                "labels": obj.metadata.labels,
                "finalizers": obj.metadata.finalizers,
                "spec": obj.data.get("spec"),
            }),
        };
        self.push(verb, object, written);
    }

    fn push(&self, verb: &'static str, object: String, written: Value) {
        self.writes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Write {
                verb,
                object,
                written,
            });
    }
}

#[async_trait::async_trait]
impl ControlPlane for Recording {
    async fn get(
        &self,
        kind: &KindInfo,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<Object>> {
        self.inner.get(kind, namespace, name).await
    }

    async fn list(
        &self,
        kind: &KindInfo,
        namespace: Option<&str>,
        selector: &Selector,
    ) -> Result<Vec<Object>> {
        self.inner.list(kind, namespace, selector).await
    }

    async fn create(&self, kind: &KindInfo, obj: &Object) -> Result<Object> {
        self.record("create", kind, obj);
        self.inner.create(kind, obj).await
    }

    async fn create_with_status(&self, kind: &KindInfo, obj: &Object) -> Result<Object> {
        self.record("create_with_status", kind, obj);
        self.inner.create_with_status(kind, obj).await
    }

    async fn update(&self, kind: &KindInfo, obj: &Object) -> Result<Object> {
        self.record("update", kind, obj);
        self.inner.update(kind, obj).await
    }

    async fn update_status(&self, kind: &KindInfo, obj: &Object) -> Result<Object> {
        self.record("update_status", kind, obj);
        self.inner.update_status(kind, obj).await
    }

    async fn delete(
        &self,
        kind: &KindInfo,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<Object>> {
        let object = format!(
            "{} {}{name}",
            kind.kind,
            namespace.map(|n| format!("{n}/")).unwrap_or_default()
        );
        self.push("delete", object, Value::Null);
        self.inner.delete(kind, namespace, name).await
    }

    async fn current_resource_version(&self) -> Result<String> {
        self.inner.current_resource_version().await
    }

    fn watch(&self, kinds: &[KindInfo], since: &str) -> BoxStream<'static, Result<Change>> {
        self.inner.watch(kinds, since)
    }

    async fn next_sequence(&self, name: &str) -> Result<i64> {
        self.inner.next_sequence(name).await
    }

    async fn register_kind(&self, promise: &str, api: &Value) -> Result<()> {
        self.inner.register_kind(promise, api).await
    }

    async fn remove_kind(&self, promise: &str, kind: &KindInfo) -> Result<()> {
        self.inner.remove_kind(promise, kind).await
    }
}
