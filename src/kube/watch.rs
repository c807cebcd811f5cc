//! The change feed on Kubernetes: one watch per kind, merged. Each watch starts at the caller's
//! `resourceVersion` (etcd's revision, shared by every kind), resumes from the last event or
//! bookmark when the API server ends it, and ends with [`store::Error::Expired`] on 410 Gone, on
//! which the caller lists again and watches from the new position, as the contract says.
//! Changes of one kind come in order; kinds are not ordered among themselves.
//!
//! Watching every kind (no kinds given) follows the Promises' CRDs too: a request kind installed
//! later is watched from its first object on; one removed stops being watched.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ListParams, WatchEvent, WatchParams};
use kube::core::DynamicObject;
use kube::Client;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tracing::{debug, warn};

use super::crd::{kind_of_crd, PROMISE_LABEL};
use super::errors::backend;
use crate::api::kinds::builtin_kinds;
use crate::api::{KindInfo, ObjectKey};
use crate::store::{self, Change, ChangeType};

/// How long the API server keeps one watch request open before we resume it.
const WATCH_TIMEOUT_SECS: u32 = 290;
/// Pause before resuming a watch whose connection failed.
const RETRY: Duration = Duration::from_secs(1);

type Sender = mpsc::Sender<store::Result<Change>>;

/// How many watches of the change feeds failed to open at their last attempt (a kind not served
/// yet, as a CRD being installed, does not count): they are retried, so the feed itself never
/// says so, but a controller whose watches keep failing sees no changes and must not look ready.
#[derive(Debug, Clone, Default)]
pub(crate) struct Health(Arc<AtomicUsize>);

impl Health {
    pub(crate) fn failing(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// One watch's part of [`Health`]; given back when the watch ends.
struct Failing {
    health: Health,
    on: bool,
}

impl Failing {
    fn new(health: &Health) -> Self {
        Self {
            health: health.clone(),
            on: false,
        }
    }

    fn set(&mut self, on: bool) {
        if on != self.on {
            self.on = on;
            if on {
                self.health.0.fetch_add(1, Ordering::SeqCst);
            } else {
                self.health.0.fetch_sub(1, Ordering::SeqCst);
            }
        }
    }
}

impl Drop for Failing {
    fn drop(&mut self) {
        self.set(false);
    }
}

/// Changes of `kinds` (every built-in kind and every Promise's kind when empty) after `since`.
pub(super) fn changes(
    client: Client,
    kinds: Vec<KindInfo>,
    since: String,
    health: &Health,
) -> BoxStream<'static, store::Result<Change>> {
    let (tx, rx) = mpsc::channel(256);
    let mut tasks = JoinSet::new();
    // Empty means everything: the built-in kinds, and the kinds Promises install as they come.
    let every_kind = kinds.is_empty();
    let kinds = if every_kind { builtin_kinds() } else { kinds };
    for kind in kinds {
        tasks.spawn(watch_kind(
            client.clone(),
            kind,
            since.clone(),
            tx.clone(),
            health.clone(),
        ));
    }
    if every_kind {
        tasks.spawn(follow_request_kinds(client, since, tx, health.clone()));
    }
    // The tasks live as long as the stream: dropping it aborts them.
    futures::stream::unfold((rx, tasks), |(mut rx, tasks)| async move {
        rx.recv().await.map(|change| (change, (rx, tasks)))
    })
    .boxed()
}

/// What one watch event means for the feed, and where to resume after it.
#[derive(Debug, PartialEq)]
pub(super) enum Step {
    Emit(Change),
    /// A bookmark or an event without a position: only the position moves (when known).
    Resume(Option<String>),
    /// The position is too old: the caller must list again.
    Expired,
    /// Any other error reported inside the watch: resume from the last position.
    Retry(String),
}

/// Interprets one watch event of `kind`.
pub(super) fn step(kind: &KindInfo, event: WatchEvent<DynamicObject>) -> Step {
    let (change_type, obj) = match event {
        WatchEvent::Added(o) => (ChangeType::Added, o),
        WatchEvent::Modified(o) => (ChangeType::Modified, o),
        WatchEvent::Deleted(o) => (ChangeType::Deleted, o),
        WatchEvent::Bookmark(b) => return Step::Resume(Some(b.metadata.resource_version)),
        WatchEvent::Error(status) if status.code == 410 => return Step::Expired,
        WatchEvent::Error(status) => return Step::Retry(status.message),
    };
    let Some(resource_version) = obj.metadata.resource_version.clone() else {
        return Step::Resume(None);
    };
    Step::Emit(Change {
        change_type,
        key: ObjectKey::new(
            &kind.group,
            &kind.kind,
            obj.metadata.namespace.as_deref(),
            obj.metadata.name.as_deref().unwrap_or_default(),
        ),
        resource_version,
        object: Some(std::sync::Arc::new(obj)),
    })
}

/// Watches one kind from `since` ("" to start with every existing object as Added) until the
/// receiver is gone or the position expires.
async fn watch_kind(client: Client, kind: KindInfo, since: String, tx: Sender, health: Health) {
    let api: Api<DynamicObject> = Api::all_with(client, &super::api_resource(&kind));
    let params = WatchParams::default().timeout(WATCH_TIMEOUT_SECS);
    let what = kind.kind.clone();
    let watch = Watch {
        tx: &tx,
        what: &what,
        health: &health,
    };
    follow(api, params, since, watch, |event| step(&kind, event)).await;
}

/// Where one watch sends its changes and reports its failures.
struct Watch<'a> {
    tx: &'a Sender,
    what: &'a str,
    health: &'a Health,
}

/// Follows `api`'s watch from `position`: each event as `interpret` says, resuming from the
/// last position when the API server ends the watch or the connection fails, until the
/// receiver is gone or the position expires (then the feed ends with `Expired`).
async fn follow<K>(
    api: Api<K>,
    params: WatchParams,
    mut position: String,
    watch: Watch<'_>,
    mut interpret: impl FnMut(WatchEvent<K>) -> Step,
) where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    let Watch { tx, what, health } = watch;
    let mut failing = Failing::new(health);
    while !tx.is_closed() {
        let stream = match api.watch(&params, &position).await {
            Ok(stream) => {
                failing.set(false);
                stream
            }
            Err(kube::Error::Api(status)) if status.code == 410 => break,
            Err(err) => {
                // 404: a request kind whose CRD is not served yet (just installed) or any more.
                let not_served = matches!(&err, kube::Error::Api(s) if s.code == 404);
                if not_served {
                    debug!(%what, "not served; watching again shortly");
                } else {
                    warn!(%what, error = %err, "watch failed; resuming");
                    failing.set(true);
                }
                tokio::time::sleep(RETRY).await;
                continue;
            }
        };
        let mut stream = std::pin::pin!(stream);
        loop {
            let event = match stream.try_next().await {
                Ok(Some(event)) => event,
                // The API server ended the watch (its timeout): resume where it stopped.
                Ok(None) => break,
                Err(err) => {
                    debug!(%what, error = %err, "watch interrupted; resuming");
                    tokio::time::sleep(RETRY).await;
                    break;
                }
            };
            match interpret(event) {
                Step::Emit(change) => {
                    position = change.resource_version.clone();
                    if tx.send(Ok(change)).await.is_err() {
                        return;
                    }
                }
                Step::Resume(Some(rv)) => position = rv,
                Step::Resume(None) => {}
                Step::Expired => {
                    debug!(%what, %position, "watch position expired");
                    let _ = tx.send(Err(expired(&position))).await;
                    return;
                }
                Step::Retry(message) => {
                    debug!(%what, %message, "watch reported an error; resuming");
                    break;
                }
            }
        }
    }
    if !tx.is_closed() {
        debug!(%what, %position, "watch position expired");
        let _ = tx.send(Err(expired(&position))).await;
    }
}

fn expired(position: &str) -> store::Error {
    store::Error::Expired {
        resource_version: position.to_string(),
    }
}

/// Watches the Promises' CRDs and each request kind they define: those present now from
/// `since`, those installed later from their beginning; a kind whose CRD goes stops being
/// watched.
async fn follow_request_kinds(client: Client, since: String, tx: Sender, health: Health) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let selector = ListParams::default().labels(PROMISE_LABEL);
    let (present, position) = match crds.list(&selector).await {
        Ok(list) => (
            list.items,
            list.metadata.resource_version.unwrap_or_default(),
        ),
        Err(err) => {
            let _ = tx
                .send(Err(backend("listing the Promises' CRDs", err)))
                .await;
            return;
        }
    };
    let mut watched: HashMap<String, tokio::task::AbortHandle> = HashMap::new();
    let mut tasks = JoinSet::new();
    for crd in &present {
        if let (Some(name), Some(kind)) = (crd.metadata.name.clone(), kind_of_crd(crd)) {
            let task = watch_kind(
                client.clone(),
                kind,
                since.clone(),
                tx.clone(),
                health.clone(),
            );
            let handle = tasks.spawn(task);
            watched.insert(name, handle);
        }
    }
    let params = WatchParams::default()
        .labels(PROMISE_LABEL)
        .timeout(WATCH_TIMEOUT_SECS);
    let interpret = |event: WatchEvent<CustomResourceDefinition>| match event {
        WatchEvent::Added(crd) | WatchEvent::Modified(crd) => {
            let rv = crd.metadata.resource_version.clone();
            if let (Some(name), Some(kind)) = (crd.metadata.name.clone(), kind_of_crd(&crd)) {
                if let std::collections::hash_map::Entry::Vacant(slot) = watched.entry(name) {
                    debug!(kind = %kind.kind, "watching a new request kind");
                    let task = watch_kind(
                        client.clone(),
                        kind,
                        String::new(),
                        tx.clone(),
                        health.clone(),
                    );
                    slot.insert(tasks.spawn(task));
                }
            }
            Step::Resume(rv)
        }
        WatchEvent::Deleted(crd) => {
            if let Some(handle) = crd.metadata.name.as_ref().and_then(|n| watched.remove(n)) {
                handle.abort();
            }
            Step::Resume(crd.metadata.resource_version)
        }
        WatchEvent::Bookmark(b) => Step::Resume(Some(b.metadata.resource_version)),
        WatchEvent::Error(status) if status.code == 410 => Step::Expired,
        WatchEvent::Error(status) => Step::Retry(status.message),
    };
    let watch = Watch {
        tx: &tx,
        what: "the Promises' CRDs",
        health: &health,
    };
    follow(crds, params, position, watch, interpret).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(rv: Option<&str>) -> DynamicObject {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "platform.kratix.io/v1alpha1", "kind": "Work",
            "metadata": {"name": "w", "namespace": "ns", "resourceVersion": rv}
        }))
        .expect("object")
    }

    #[test]
    fn watch_events_become_changes_or_positions() {
        let kind = crate::api::Builtin::Work.info();
        let key = ObjectKey::new("platform.kratix.io", "Work", Some("ns"), "w");
        let change = |change_type, rv: &str| {
            Step::Emit(Change {
                change_type,
                key: key.clone(),
                resource_version: rv.to_string(),
                object: Some(std::sync::Arc::new(obj(Some(rv)))),
            })
        };
        let gone = kube::core::Status::failure("too old", "Expired").with_code(410);
        let other = kube::core::Status::failure("oops", "InternalError").with_code(500);
        let bookmark: kube::core::watch::Bookmark = serde_json::from_value(serde_json::json!({
            "apiVersion": "platform.kratix.io/v1alpha1", "kind": "Work",
            "metadata": {"resourceVersion": "77"}
        }))
        .expect("bookmark");
        let cases = [
            (
                WatchEvent::Added(obj(Some("5"))),
                change(ChangeType::Added, "5"),
            ),
            (
                WatchEvent::Modified(obj(Some("6"))),
                change(ChangeType::Modified, "6"),
            ),
            (
                WatchEvent::Deleted(obj(Some("7"))),
                change(ChangeType::Deleted, "7"),
            ),
            (WatchEvent::Added(obj(None)), Step::Resume(None)),
            (
                WatchEvent::Bookmark(bookmark),
                Step::Resume(Some("77".into())),
            ),
            (WatchEvent::Error(gone.boxed()), Step::Expired),
            (WatchEvent::Error(other.boxed()), Step::Retry("oops".into())),
        ];
        for (event, want) in cases {
            let label = format!("{event:?}");
            assert_eq!(step(&kind, event), want, "{label}");
        }
    }
}
