//! The Kubernetes backend of the control plane: objects live in a Kubernetes API server, one
//! `Api<DynamicObject>` per kind. The API server provides what the embedded store reproduces:
//! optimistic concurrency by `resourceVersion`, the status subresource, finalizers, watches.
//! A Promise's API is installed as a CustomResourceDefinition so that the API server validates
//! its requests; the controllers run unchanged on top (`kratix-rs controller`).

pub mod crd;
mod errors;
pub(crate) mod health;
pub(crate) mod leader;
pub(crate) mod lease;
pub(crate) mod namespace;
pub(crate) mod request_access;
mod sequence;
mod watch;

use futures::stream::BoxStream;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::core::{ApiResource, DynamicObject};
use kube::Client;

use crate::api::{KindInfo, Object, ObjectKey, SYSTEM_NAMESPACE};
use crate::store::{self, Change, ControlPlane, Selector};
use errors::{backend, to_store};
pub(crate) use watch::Health as WatchHealth;

/// Errors of the Kubernetes edge: connecting, serving probes, holding the Lease.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No kubeconfig or in-cluster configuration could be read.
    #[error("reading the Kubernetes client configuration")]
    Config(#[source] kube::Error),
    /// The kubeconfig file could not be read or parsed.
    #[error("reading kubeconfig {path}")]
    Kubeconfig {
        path: String,
        #[source]
        source: kube::config::KubeconfigError,
    },
    /// The health and metrics endpoints could not listen.
    #[error(transparent)]
    Endpoint(#[from] crate::metrics::Error),
}

/// Tries a write that lost a race this many times before giving up.
const CAS_ATTEMPTS: usize = 20;

/// A control plane on a Kubernetes API server.
#[derive(Clone)]
pub struct KubeControlPlane {
    client: Client,
    watches: WatchHealth,
    /// The controller's own ServiceAccount, granted `delete` on each Promise's request kind.
    account: Option<request_access::Account>,
    /// Numbers of the counters reserved by this process and not handed out yet.
    sequences: sequence::Blocks,
}

impl std::fmt::Debug for KubeControlPlane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeControlPlane").finish_non_exhaustive()
    }
}

/// The client configuration from `kubeconfig` when given, else as `kube` finds it:
/// `KUBECONFIG`, `~/.kube/config`, then the in-cluster service account.
pub async fn client_config(kubeconfig: Option<&std::path::Path>) -> Result<kube::Config, Error> {
    // Fails only when a provider is installed already, which is as good.
    let _ = rustls::crypto::ring::default_provider().install_default();
    match kubeconfig {
        Some(path) => {
            let kubeconfig =
                kube::config::Kubeconfig::read_from(path).map_err(|source| Error::Kubeconfig {
                    path: path.display().to_string(),
                    source,
                })?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
                .await
                .map_err(|source| Error::Kubeconfig {
                    path: path.display().to_string(),
                    source,
                })
        }
        None => kube::Config::infer()
            .await
            .map_err(|e| Error::Config(kube::Error::InferConfig(e))),
    }
}

impl KubeControlPlane {
    pub fn new(client: Client) -> Self {
        Self {
            client,
            watches: WatchHealth::default(),
            account: None,
            sequences: sequence::Blocks::default(),
        }
    }

    /// Grants `account` (the controller's, in a pod) `delete` on each request kind it installs
    /// (see [`request_access`]).
    #[must_use]
    pub(crate) fn with_request_access(mut self, account: request_access::Account) -> Self {
        self.account = Some(account);
        self
    }

    /// Connects with `kubeconfig` when given, else as `kube` does: `KUBECONFIG`,
    /// `~/.kube/config`, then the in-cluster service account.
    pub async fn connect(kubeconfig: Option<&std::path::Path>) -> Result<Self, Error> {
        let config = client_config(kubeconfig).await?;
        let client = Client::try_from(config).map_err(Error::Config)?;
        Ok(Self::new(client))
    }

    pub fn client(&self) -> Client {
        self.client.clone()
    }

    /// How the watches of this control plane's change feeds fare.
    pub(crate) fn watch_health(&self) -> WatchHealth {
        self.watches.clone()
    }

    /// Makes sure the namespace of promise workflows and system Works exists, creating it
    /// only when it is missing (see [`namespace::ensure`]).
    pub async fn ensure_system_namespace(&self) -> Result<(), namespace::Error> {
        namespace::ensure(self.client.clone(), SYSTEM_NAMESPACE).await
    }

    fn api(&self, kind: &KindInfo, namespace: Option<&str>) -> Api<DynamicObject> {
        api_for(&self.client, kind, namespace)
    }

    /// The object as the API server expects it in a write: with its kind's `apiVersion` and
    /// `kind`.
    fn outgoing(kind: &KindInfo, obj: &Object) -> Object {
        let mut out = obj.clone();
        out.types = Some(kube::core::TypeMeta {
            api_version: kind.api_version(),
            kind: kind.kind.clone(),
        });
        out
    }

    /// Writes `obj` (through `/status` when `status`), conditioned on its `resourceVersion`;
    /// without one, on the stored one, retried until no other writer intervenes.
    async fn replace(&self, kind: &KindInfo, obj: &Object, status: bool) -> store::Result<Object> {
        let key = key_of(kind, obj);
        check_scope(kind, obj.metadata.namespace.as_deref(), &key)?;
        let api = self.api(kind, obj.metadata.namespace.as_deref());
        let mut out = Self::outgoing(kind, obj);
        let unconditional = out.metadata.resource_version.is_none();
        let context = if status { "update status of" } else { "update" };
        for _ in 0..CAS_ATTEMPTS {
            if unconditional {
                let current = api
                    .get_opt(&key.name)
                    .await
                    .map_err(|e| to_store(e, &key, None, "get"))?
                    .ok_or_else(|| store::Error::NotFound { key: key.clone() })?;
                out.metadata.resource_version = current.metadata.resource_version;
            }
            let expected = out.metadata.resource_version.clone();
            let pp = PostParams::default();
            let result = if status {
                api.replace_status(&key.name, &pp, &out).await
            } else {
                api.replace(&key.name, &pp, &out).await
            };
            match result.map_err(|e| to_store(e, &key, expected.as_deref(), context)) {
                Err(store::Error::Conflict { .. }) if unconditional => continue,
                other => return other,
            }
        }
        Err(store::Error::Conflict {
            key,
            expected: String::new(),
        })
    }
}

/// The API of one kind, in `namespace` or across all namespaces.
fn api_for(client: &Client, kind: &KindInfo, namespace: Option<&str>) -> Api<DynamicObject> {
    let resource = api_resource(kind);
    match (kind.namespaced, namespace) {
        (true, Some(ns)) => Api::namespaced_with(client.clone(), ns, &resource),
        _ => Api::all_with(client.clone(), &resource),
    }
}

pub(crate) fn api_resource(kind: &KindInfo) -> ApiResource {
    ApiResource {
        group: kind.group.clone(),
        version: kind.version.clone(),
        api_version: kind.api_version(),
        kind: kind.kind.clone(),
        plural: kind.plural.clone(),
    }
}

fn key_of(kind: &KindInfo, obj: &Object) -> ObjectKey {
    ObjectKey::new(
        &kind.group,
        &kind.kind,
        obj.metadata.namespace.as_deref(),
        obj.metadata.name.as_deref().unwrap_or_default(),
    )
}

/// Namespaced kinds need a namespace, cluster-scoped ones must have none: the API server would
/// otherwise address another object than the caller means.
fn check_scope(kind: &KindInfo, namespace: Option<&str>, key: &ObjectKey) -> store::Result<()> {
    let reason = match (kind.namespaced, namespace) {
        (true, None) => "a namespaced kind needs metadata.namespace",
        (false, Some(_)) => "a cluster-scoped kind takes no metadata.namespace",
        _ => return Ok(()),
    };
    Err(store::Error::Invalid {
        key: key.clone(),
        reason: reason.to_string(),
    })
}

/// `delete`'s answer: the object while finalizers hold it, `None` once it is gone.
fn still_there(obj: Object) -> Option<Object> {
    let held = obj.metadata.deletion_timestamp.is_some()
        && obj
            .metadata
            .finalizers
            .as_ref()
            .is_some_and(|f| !f.is_empty());
    held.then_some(obj)
}

#[async_trait::async_trait]
impl ControlPlane for KubeControlPlane {
    async fn get(
        &self,
        kind: &KindInfo,
        namespace: Option<&str>,
        name: &str,
    ) -> store::Result<Option<Object>> {
        let key = ObjectKey::new(&kind.group, &kind.kind, namespace, name);
        check_scope(kind, namespace, &key)?;
        self.api(kind, namespace)
            .get_opt(name)
            .await
            .map_err(|e| to_store(e, &key, None, "get"))
    }

    async fn list(
        &self,
        kind: &KindInfo,
        namespace: Option<&str>,
        selector: &Selector,
    ) -> store::Result<Vec<Object>> {
        let mut params = ListParams::default();
        if !selector.is_everything() {
            params = params.labels(&selector.to_string());
        }
        let key = ObjectKey::new(&kind.group, &kind.kind, namespace, "*");
        if namespace.is_some() {
            check_scope(kind, namespace, &key)?;
        }
        let list = match self.api(kind, namespace).list(&params).await {
            Ok(list) => list,
            Err(err) => match to_store(err, &key, None, "list") {
                // The kind is not served (yet, or any more): it has no objects.
                store::Error::NotFound { .. } => return Ok(vec![]),
                other => return Err(other),
            },
        };
        let mut items = list.items;
        items.sort_by(|a, b| {
            (&a.metadata.namespace, &a.metadata.name)
                .cmp(&(&b.metadata.namespace, &b.metadata.name))
        });
        Ok(items)
    }

    async fn create(&self, kind: &KindInfo, obj: &Object) -> store::Result<Object> {
        let key = key_of(kind, obj);
        check_scope(kind, obj.metadata.namespace.as_deref(), &key)?;
        let mut out = Self::outgoing(kind, obj);
        // The API server assigns these; it refuses a create that carries a resourceVersion.
        out.metadata.resource_version = None;
        out.metadata.uid = None;
        out.metadata.creation_timestamp = None;
        self.api(kind, obj.metadata.namespace.as_deref())
            .create(&PostParams::default(), &out)
            .await
            .map_err(|e| to_store(e, &key, None, "create"))
    }

    async fn update(&self, kind: &KindInfo, obj: &Object) -> store::Result<Object> {
        self.replace(kind, obj, false).await
    }

    async fn update_status(&self, kind: &KindInfo, obj: &Object) -> store::Result<Object> {
        self.replace(kind, obj, true).await
    }

    async fn delete(
        &self,
        kind: &KindInfo,
        namespace: Option<&str>,
        name: &str,
    ) -> store::Result<Option<Object>> {
        let key = ObjectKey::new(&kind.group, &kind.kind, namespace, name);
        check_scope(kind, namespace, &key)?;
        match self
            .api(kind, namespace)
            .delete(name, &DeleteParams::background())
            .await
        {
            Ok(either) => Ok(either.left().and_then(still_there)),
            Err(err) => Err(to_store(err, &key, None, "delete")),
        }
    }

    async fn current_resource_version(&self) -> store::Result<String> {
        // A list read from etcd carries its current revision, which orders every kind's writes.
        let kind = crate::api::Builtin::Promise.info();
        let list = self
            .api(&kind, None)
            .list_metadata(&ListParams::default().limit(1))
            .await
            .map_err(|e| backend("reading the current resourceVersion", e))?;
        list.metadata
            .resource_version
            .filter(|rv| !rv.is_empty())
            .ok_or_else(|| {
                backend(
                    "reading the current resourceVersion",
                    std::io::Error::other("the API server returned a list without resourceVersion"),
                )
            })
    }

    fn watch(&self, kinds: &[KindInfo], since: &str) -> BoxStream<'static, store::Result<Change>> {
        watch::changes(
            self.client.clone(),
            kinds.to_vec(),
            since.to_string(),
            &self.watches,
        )
    }

    async fn next_sequence(&self, name: &str) -> store::Result<i64> {
        self.sequences.next(&self.client, name).await
    }

    async fn register_kind(&self, promise: &str, api: &serde_json::Value) -> store::Result<()> {
        let kind = crd::install(&self.client, promise, api).await?;
        if let Some(account) = &self.account {
            request_access::install(&self.client, &kind, account).await?;
        }
        Ok(())
    }

    async fn remove_kind(&self, promise: &str, kind: &KindInfo) -> store::Result<()> {
        let ours = crd::remove(&self.client, promise, kind).await?;
        if ours && self.account.is_some() {
            request_access::remove(&self.client, kind).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(namespaced: bool) -> KindInfo {
        KindInfo {
            namespaced,
            ..crate::api::Builtin::Work.info()
        }
    }

    #[test]
    fn scope_must_match_the_kind() {
        let key = ObjectKey::new("g", "K", None, "n");
        let cases = [
            (true, Some("ns"), true),
            (true, None, false),
            (false, None, true),
            (false, Some("ns"), false),
        ];
        for (namespaced, ns, ok) in cases {
            assert_eq!(
                check_scope(&kind(namespaced), ns, &key).is_ok(),
                ok,
                "{namespaced} {ns:?}"
            );
        }
    }

    #[test]
    fn delete_answers_the_object_only_while_finalizers_hold_it() {
        let obj = |deleting: bool, finalizers: &[&str]| -> Object {
            serde_json::from_value(serde_json::json!({
                "apiVersion": "v1", "kind": "X",
                "metadata": {
                    "name": "x",
                    "deletionTimestamp": if deleting { Some("2026-01-01T00:00:00Z") } else { None },
                    "finalizers": finalizers,
                }
            }))
            .expect("object")
        };
        let cases = [
            (true, &["f"][..], true),
            (true, &[][..], false),
            (false, &[][..], false),
            (false, &["f"][..], false),
        ];
        for (deleting, finalizers, held) in cases {
            assert_eq!(
                still_there(obj(deleting, finalizers)).is_some(),
                held,
                "{deleting} {finalizers:?}"
            );
        }
    }
}
