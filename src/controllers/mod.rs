//! The reconcile loops that tie everything together: each observes the control plane, asks a
//! pure decision function what to do, and acts. One process at a time runs them for a home (the
//! holder of the home lock); everything they need to resume after a crash is stored.

pub mod destinations;
mod kube_time;
pub mod placements;
pub mod promises;
mod queue;
pub mod requests;
pub mod runs;
pub mod state_stores;
mod status;
pub mod workflows;
pub mod works;
mod write_retry;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use tracing::{debug, warn};

use crate::api::{labels, KindInfo, ObjectKey, GROUP};
use crate::platform::{builtin, Platform};
use crate::store::embedded::HomeLock;
use crate::store::{self, ControlPlane, Selector};

pub use kube_time::{now_ms, now_rfc3339};
use queue::Queue;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading or writing the control plane failed.
    #[error("control plane")]
    Store(#[from] store::Error),
    /// The platform's kinds could not be read.
    #[error(transparent)]
    Platform(#[from] crate::platform::Error),
    /// A stored object does not parse as its kind.
    #[error("{key} is not a valid {kind}: {reason}")]
    Malformed {
        key: ObjectKey,
        kind: String,
        reason: String,
    },
    /// A state store could not be used.
    #[error("state store {name}")]
    StateStore {
        name: String,
        #[source]
        source: statestores::Error,
    },
    /// A pipeline run could not be carried out (not a pipeline failure: those are recorded).
    #[error("pipeline run {run}: {reason}")]
    Run { run: String, reason: String },
}

/// What a reconcile asks for next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Nothing until something changes.
    Done,
    /// Look again after this long even if nothing changes.
    After(Duration),
}

/// Every controller of one home.
#[derive(Debug, Clone)]
pub struct Runtime {
    pub platform: Platform,
    pub cp: Arc<dyn ControlPlane>,
    pub state_stores: Arc<state_stores::Cache>,
    /// Pipeline runs executing in this process.
    pub running: Arc<Mutex<HashSet<ObjectKey>>>,
    /// The owners each object was last seen with: a deleted object can no longer be read, yet
    /// its owners (a request waiting for its Works to go, a Destination for its placements)
    /// must hear of its deletion.
    owners_seen: Arc<Mutex<std::collections::HashMap<ObjectKey, Vec<ObjectKey>>>>,
    pub settings: Settings,
}

/// Tunables, from the environment.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Longest a pipeline run may take (`KRATIX_PIPELINE_TIMEOUT` seconds, default 600).
    pub pipeline_timeout: Duration,
    /// How often everything is looked at again even without changes (`KRATIX_RESYNC` seconds).
    pub resync: Duration,
    /// How often a ready state store's access is checked again, so that an outage shows on the
    /// store and its Destinations (`KRATIX_STORE_RECHECK` seconds, default 60).
    pub store_recheck: Duration,
    /// The longest wait between retries of a write that keeps failing; they start at 5 s and
    /// grow with the failure (`KRATIX_WRITE_RETRY_MAX` seconds, default 60).
    pub write_retry_max: Duration,
    /// How long one Git operation (fetch, push and their re-applies) may take before it fails
    /// as unreachable (`KRATIX_GIT_TIMEOUT` seconds, default 60).
    pub git_timeout: Duration,
}

impl Settings {
    pub fn from_env() -> Self {
        let secs = |name: &str, default: u64| {
            std::env::var(name)
                .ok()
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(default)
        };
        Self {
            pipeline_timeout: Duration::from_secs(secs("KRATIX_PIPELINE_TIMEOUT", 600)),
            resync: Duration::from_secs(secs("KRATIX_RESYNC", 300)),
            store_recheck: Duration::from_secs(secs("KRATIX_STORE_RECHECK", 60)),
            write_retry_max: Duration::from_secs(secs(
                "KRATIX_WRITE_RETRY_MAX",
                write_retry::DEFAULT_MAX_RETRY.as_secs(),
            )),
            git_timeout: Duration::from_secs(secs("KRATIX_GIT_TIMEOUT", 60).max(1)),
        }
    }
}

impl Runtime {
    pub fn new(platform: Platform) -> Self {
        let cp = platform.control_plane();
        Self {
            state_stores: Arc::new(state_stores::Cache::new(
                platform.cache_dir(),
                platform.home.clone(),
            )),
            platform,
            cp,
            running: Arc::new(Mutex::new(HashSet::new())),
            owners_seen: Arc::new(Mutex::new(std::collections::HashMap::new())),
            settings: Settings::from_env(),
        }
    }

    /// Runs every controller until the future is dropped. `lock` proves this process is the only
    /// one running controllers for the home.
    pub async fn run(self, lock: HomeLock) -> Result<(), Error> {
        let _lock = lock;
        runs::recover_interrupted(&self).await?;
        let mut queue = Queue::default();
        let since = self.cp.current_resource_version().await?;
        self.enqueue_everything(&mut queue).await?;
        let mut changes = self.cp.watch(&[], &since);
        let mut resync = tokio::time::interval(self.settings.resync);
        resync.tick().await;
        loop {
            while let Some(key) = queue.pop_due() {
                match self.reconcile(&key).await {
                    Ok(Next::Done) => {}
                    Ok(Next::After(delay)) => queue.add_after(key.clone(), delay),
                    Err(err) => {
                        let delay = queue.failure_backoff(&key);
                        warn!(object = %key, error = %ErrorChain(&err), "reconcile failed; retrying in {delay:?}");
                        queue.add_after(key.clone(), delay);
                        continue;
                    }
                }
                queue.forget_failures(&key);
            }
            let sleep = queue.time_to_next().unwrap_or(Duration::from_secs(1));
            tokio::select! {
                change = changes.next() => match change {
                    Some(Ok(change)) => {
                        for key in self.affected_by(&change.key).await? {
                            queue.add(key);
                        }
                    }
                    Some(Err(err)) => {
                        // The feed was lost (e.g. pruned): look at everything again.
                        warn!(error = %ErrorChain(&err), "change feed interrupted; resyncing");
                        let since = self.cp.current_resource_version().await?;
                        changes = self.cp.watch(&[], &since);
                        self.enqueue_everything(&mut queue).await?;
                    }
                    None => {
                        let since = self.cp.current_resource_version().await?;
                        changes = self.cp.watch(&[], &since);
                    }
                },
                _ = resync.tick() => self.enqueue_everything(&mut queue).await?,
                _ = tokio::time::sleep(sleep) => {}
            }
        }
    }

    async fn enqueue_everything(&self, queue: &mut Queue) -> Result<(), Error> {
        for kind in self.platform.kinds().await? {
            if kind.group.is_empty() {
                continue; // Secrets only matter through the stores that reference them.
            }
            for obj in self.cp.list(&kind, None, &Selector::everything()).await? {
                let owners = self.owners(&obj).await?;
                self.remember_owners(ObjectKey::of(&obj), owners);
                queue.add(ObjectKey::of(&obj));
            }
        }
        Ok(())
    }

    /// The objects to reconcile when `key` changed: itself and those that depend on it.
    async fn affected_by(&self, key: &ObjectKey) -> Result<Vec<ObjectKey>, Error> {
        let mut out = vec![key.clone()];
        if key.group.is_empty() {
            if key.kind == "Secret" {
                out.extend(state_stores::stores_using_secret(self, key).await?);
            }
            out.retain(|k| !k.group.is_empty());
            return Ok(out);
        }
        let Some(kind) = self.platform.kind_of(&key.group, &key.kind).await? else {
            return Ok(out);
        };
        let obj = self
            .cp
            .get(&kind, key.namespace.as_deref(), &key.name)
            .await?;
        let owners = match &obj {
            Some(obj) => {
                let owners = self.owners(obj).await?;
                self.remember_owners(key.clone(), owners.clone());
                owners
            }
            None => self.forget_owners(key),
        };
        out.extend(owners);
        if key.group != GROUP {
            return Ok(out);
        }
        match key.kind.as_str() {
            "Destination" => {
                for work in self
                    .cp
                    .list(&builtin("Work"), None, &Selector::everything())
                    .await?
                {
                    out.push(ObjectKey::of(&work));
                }
            }
            "GitStateStore" | "BucketStateStore" => {
                out.extend(destinations::using_store(self, &key.kind, &key.name).await?);
            }
            "Promise" => {
                out.extend(promises::request_keys(self, &key.name).await?);
            }
            _ => {}
        }
        Ok(out)
    }

    /// The objects that wait on `obj`: the Promise or request of a PipelineRun or Work; the
    /// Work and Destination of a WorkPlacement; the Promise of a request being deleted.
    async fn owners(&self, obj: &crate::api::Object) -> Result<Vec<ObjectKey>, Error> {
        let key = ObjectKey::of(obj);
        let label = |k| crate::api::object::label(obj, k);
        if key.group == GROUP {
            return match key.kind.as_str() {
                "PipelineRun" | "Work" => self.owner_of_workflow_object(obj).await,
                "WorkPlacement" => {
                    let mut out = Vec::new();
                    if let Some(work) = label(labels::WORK) {
                        out.push(ObjectKey::new(
                            GROUP,
                            "Work",
                            key.namespace.as_deref(),
                            work,
                        ));
                    }
                    if let Some(dest) = label(labels::TARGET_DESTINATION) {
                        out.push(ObjectKey::new(GROUP, "Destination", None, dest));
                    }
                    Ok(out)
                }
                _ => Ok(vec![]),
            };
        }
        // A Promise being deleted waits for its requests to go.
        match label(labels::PROMISE_NAME) {
            Some(promise) if obj.metadata.deletion_timestamp.is_some() && !key.group.is_empty() => {
                Ok(vec![ObjectKey::new(GROUP, "Promise", None, promise)])
            }
            _ => Ok(vec![]),
        }
    }

    fn remember_owners(&self, key: ObjectKey, owners: Vec<ObjectKey>) {
        if let Ok(mut seen) = self.owners_seen.lock() {
            if owners.is_empty() {
                seen.remove(&key);
            } else {
                seen.insert(key, owners);
            }
        }
    }

    fn forget_owners(&self, key: &ObjectKey) -> Vec<ObjectKey> {
        self.owners_seen
            .lock()
            .ok()
            .and_then(|mut seen| seen.remove(key))
            .unwrap_or_default()
    }

    /// The Promise or request that a PipelineRun or Work belongs to.
    async fn owner_of_workflow_object(
        &self,
        obj: &crate::api::Object,
    ) -> Result<Vec<ObjectKey>, Error> {
        let label = |k| crate::api::object::label(obj, k).map(str::to_string);
        let Some(promise) = label(labels::PROMISE_NAME) else {
            return Ok(vec![]);
        };
        match label(labels::RESOURCE_NAME) {
            Some(resource) => {
                let Some(kind) = promises::request_kind_of(self, &promise).await? else {
                    return Ok(vec![]);
                };
                let ns =
                    label(labels::RESOURCE_NAMESPACE).or_else(|| obj.metadata.namespace.clone());
                Ok(vec![ObjectKey::new(
                    &kind.group,
                    &kind.kind,
                    ns.as_deref(),
                    &resource,
                )])
            }
            None => Ok(vec![ObjectKey::new(GROUP, "Promise", None, &promise)]),
        }
    }

    async fn reconcile(&self, key: &ObjectKey) -> Result<Next, Error> {
        let Some(kind) = self.platform.kind_of(&key.group, &key.kind).await? else {
            return Ok(Next::Done);
        };
        let Some(obj) = self
            .cp
            .get(&kind, key.namespace.as_deref(), &key.name)
            .await?
        else {
            return Ok(Next::Done);
        };
        debug!(object = %key, "reconciling");
        if kind.group != GROUP {
            return requests::reconcile(self, &kind, obj).await;
        }
        match kind.kind.as_str() {
            "Promise" => promises::reconcile(self, obj).await,
            "PipelineRun" => runs::reconcile(self, obj).await,
            "Work" => works::reconcile(self, obj).await,
            "WorkPlacement" => placements::reconcile(self, obj).await,
            "Destination" => destinations::reconcile(self, obj).await,
            "GitStateStore" | "BucketStateStore" => state_stores::reconcile(self, &kind, obj).await,
            _ => Ok(Next::Done),
        }
    }

    /// The kind info of a built-in kind.
    pub fn kind(&self, kind: &str) -> KindInfo {
        builtin(kind)
    }
}

/// Displays an error with its chain of causes on one line.
pub struct ErrorChain<'a>(pub &'a dyn std::error::Error);

impl std::fmt::Display for ErrorChain<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut previous = self.0.to_string();
        write!(f, "{previous}")?;
        let mut source = self.0.source();
        while let Some(cause) = source {
            let text = cause.to_string();
            // Some errors (object_store's) already print their source: say it once.
            if !previous.contains(&text) {
                write!(f, ": {text}")?;
            }
            previous = text;
            source = cause.source();
        }
        Ok(())
    }
}

#[cfg(test)]
mod error_chain_tests {
    use super::ErrorChain;

    #[derive(Debug, thiserror::Error)]
    enum Link {
        #[error("{0}")]
        Leaf(&'static str),
        #[error("{text}")]
        Node {
            text: &'static str,
            #[source]
            source: Box<Link>,
        },
    }

    fn chain(texts: &[&'static str]) -> Link {
        let (last, rest) = texts.split_last().expect("at least one link");
        rest.iter()
            .rev()
            .fold(Link::Leaf(last), |source, text| Link::Node {
                text,
                source: Box::new(source),
            })
    }

    #[test]
    fn each_cause_is_said_once() {
        let cases: &[(&[&'static str], &str)] = &[
            (&["a"], "a"),
            (&["a", "b", "c"], "a: b: c"),
            (
                &["put failed: 403 body", "403 body"],
                "put failed: 403 body",
            ),
            (
                &[
                    "store: access denied",
                    "denied: 403 body",
                    "403 body",
                    "refused",
                ],
                "store: access denied: denied: 403 body: refused",
            ),
        ];
        for (links, want) in cases {
            assert_eq!(ErrorChain(&chain(links)).to_string(), *want, "{links:?}");
        }
    }
}
