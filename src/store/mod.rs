//! The control plane: where objects live. One trait, [`ControlPlane`], with an embedded (SQLite)
//! backend and, later, a Kubernetes one. The trait is shaped after the Kubernetes API so that both
//! implement it unchanged: optimistic concurrency by `resourceVersion`, no transaction spanning
//! objects, status written on its own, and a watch-like change feed.

pub mod embedded;
pub(crate) mod selector;

use std::fmt::Debug;

use futures::stream::BoxStream;

use crate::api::{KindInfo, Object, ObjectKey};
pub use selector::Selector;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The object does not exist.
    #[error("{key} not found")]
    NotFound { key: ObjectKey },
    /// `create` of an object that exists.
    #[error("{key} already exists")]
    AlreadyExists { key: ObjectKey },
    /// The object changed since it was read (its `resourceVersion` differs).
    #[error("{key} was modified by someone else (resourceVersion {expected} is stale)")]
    Conflict { key: ObjectKey, expected: String },
    /// The object is not acceptable to the store (missing name, wrong namespace scope, …).
    #[error("{key}: {reason}")]
    Invalid { key: ObjectKey, reason: String },
    /// The caller may not do this (Kubernetes' 403 Forbidden: its ServiceAccount lacks the
    /// right).
    #[error("{key}: forbidden: {reason}")]
    Forbidden { key: ObjectKey, reason: String },
    /// A watch started from a `resourceVersion` older than the change feed keeps (Kubernetes'
    /// 410 Gone). Take `current_resource_version()`, list again, and watch from that position.
    #[error("resourceVersion {resource_version} is too old: the change feed no longer holds it")]
    Expired { resource_version: String },
    /// The backend failed (database, network).
    #[error("control plane backend failed: {context}")]
    Backend {
        context: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What happened to an object, as seen on the change feed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeType {
    Added,
    Modified,
    Deleted,
}

/// One entry of the change feed.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub change_type: ChangeType,
    pub key: ObjectKey,
    /// The object's `resourceVersion` after the change; resume a watch from it.
    pub resource_version: String,
    /// The object as the change left it, when the feed carries it (a Kubernetes watch does; the
    /// embedded store's feed does not): who reads the change then need not read the object.
    pub object: Option<std::sync::Arc<Object>>,
}

/// Where objects are stored.
///
/// # Contract
/// - Every write MUST bump `metadata.resourceVersion`. `update` and `update_status` of an object
///   whose `resourceVersion` is set MUST fail with [`Error::Conflict`] when it is not the stored one.
/// - `create` MUST assign `metadata.uid`, `metadata.creationTimestamp`, `metadata.generation = 1`.
/// - `update` writes metadata (labels, annotations, finalizers, …) and everything but `status`; it
///   MUST bump `metadata.generation` only when something other than metadata and status changed.
///   The stored `status` is kept.
/// - `update_status` writes only `status`; generation is unchanged.
/// - `create` drops a `status` the object carries; `create_with_status` stores it too (one
///   write where the backend can, a create then a status write where it cannot).
/// - `delete` of an object with finalizers MUST only set `metadata.deletionTimestamp` and return the
///   object; an update that leaves such an object without finalizers MUST remove it. `delete` of an
///   object without finalizers removes it and returns `None`.
/// - `watch` MUST yield every change made after `since` (by this or any other process) in order.
#[async_trait::async_trait]
pub trait ControlPlane: Debug + Send + Sync + 'static {
    async fn get(
        &self,
        kind: &KindInfo,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<Object>>;

    /// Objects of `kind` (in `namespace`, or all namespaces when `None`) whose labels match,
    /// sorted by namespace and name.
    async fn list(
        &self,
        kind: &KindInfo,
        namespace: Option<&str>,
        selector: &Selector,
    ) -> Result<Vec<Object>>;

    async fn create(&self, kind: &KindInfo, obj: &Object) -> Result<Object>;

    /// Creates `obj` with the `status` it carries: for the controllers' own objects whose first
    /// status they know as they make them (a pipeline run claimed as it is made, a placement
    /// with the files it will own). Where a create cannot carry a status (Kubernetes' status
    /// subresource), the status is written right after the create.
    async fn create_with_status(&self, kind: &KindInfo, obj: &Object) -> Result<Object> {
        let created = self.create(kind, obj).await?;
        let Some(status) = obj.data.get("status") else {
            return Ok(created);
        };
        let mut next = created;
        if let Some(map) = next.data.as_object_mut() {
            map.insert("status".into(), status.clone());
        }
        self.update_status(kind, &next).await
    }

    async fn update(&self, kind: &KindInfo, obj: &Object) -> Result<Object>;

    async fn update_status(&self, kind: &KindInfo, obj: &Object) -> Result<Object>;

    async fn delete(
        &self,
        kind: &KindInfo,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<Object>>;

    /// The current position of the change feed, to start a watch from.
    async fn current_resource_version(&self) -> Result<String>;

    /// Changes to objects of any of `kinds` (all kinds when empty) after `since`.
    fn watch(&self, kinds: &[KindInfo], since: &str) -> BoxStream<'static, Result<Change>>;

    /// The counter `name`'s next value (from 1). Each value is handed out once; one process gets
    /// increasing values, and a process (or a new leader) that starts taking values after
    /// another stopped gets higher ones than all of the other's: pipeline runs are ordered by
    /// them among the runs of one object, which one process creates one at a time, never by
    /// clocks. Values may skip (the Kubernetes backend reserves them in blocks per process).
    async fn next_sequence(&self, name: &str) -> Result<i64>;

    /// Makes the request kind a Promise offers known to the control plane. `api` is the
    /// Promise's `spec.api` (a CustomResourceDefinition). Returns once requests of the kind can
    /// be stored. A backend that validates requests itself (Kubernetes: the API server, from
    /// the CRD) installs it here; the embedded store derives kinds from the stored Promises
    /// and needs nothing.
    async fn register_kind(&self, promise: &str, api: &serde_json::Value) -> Result<()> {
        let _ = (promise, api);
        Ok(())
    }

    /// Forgets a request kind of a Promise being deleted (after its requests are gone).
    async fn remove_kind(&self, promise: &str, kind: &KindInfo) -> Result<()> {
        let _ = (promise, kind);
        Ok(())
    }
}
