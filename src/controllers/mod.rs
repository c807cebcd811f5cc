//! The reconcile loops that tie everything together: each observes the control plane, asks a
//! pure decision function what to do, and acts. One process at a time runs them for a home (the
//! holder of the home lock); everything they need to resume after a crash is stored.

pub(crate) mod destination;
mod kinds;
mod kube_time;
mod lookups;
mod next;
mod owners;
pub(crate) mod placement;
pub(crate) mod platform_sync;
pub(crate) mod promise;
#[cfg(test)]
mod recording;
pub(crate) mod request;
pub(crate) mod run;
mod runtime;
mod settings;
pub(crate) mod state_store;
mod status;
mod status_value;
pub(crate) mod subject;
pub(crate) mod work;
pub(crate) mod workflow;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use tokio::task::JoinHandle;
use tracing::{debug, warn};

use crate::api::{KindInfo, ObjectKey, GROUP};
use crate::platform::Platform;
use crate::store::{self, ControlPlane, Selector};

pub(crate) use kube_time::{now_ms, now_rfc3339};
pub(crate) use next::Next;
use runtime::queue::{Queue, Reason};
use runtime::workers::Finished;

/// How many changed objects of one batch have what they affect read at once.
const AFFECTED_READS_AT_ONCE: usize = 16;

/// The reading of what one changed object affects.
type AffectedRead<'a> = BoxFuture<'a, (&'a ObjectKey, Result<Vec<ObjectKey>, Error>)>;
pub(crate) use settings::{
    parse_duration_setting, pipeline_slots, Settings, BINDING_VERSION_ENV, MAX_PARALLEL_ENV,
};
pub(crate) use statestores::error_chain::ErrorChain;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading or writing the control plane failed.
    #[error("control plane")]
    Store(#[from] store::Error),
    /// The platform's kinds could not be read.
    #[error(transparent)]
    Platform(#[from] crate::platform::Error),
    /// The executor could not remove what pipelines left for a deleted object.
    #[error(transparent)]
    Sweep(#[from] crate::pipeline::Error),
    /// A stored object does not parse as its kind (any kind's: decoding is shared).
    #[error("{key} is not a valid {kind}")]
    Malformed {
        key: ObjectKey,
        kind: String,
        #[source]
        source: serde_json::Error,
    },
    /// An object the controllers made could not be serialized: their own failure, not the
    /// stored object's.
    #[error("cannot serialize the {kind} made for {key}")]
    Serialize {
        key: ObjectKey,
        kind: String,
        #[source]
        source: serde_json::Error,
    },
    /// A reconcile's task ended without an answer (it panicked).
    #[error("reconcile task")]
    Reconcile(#[source] tokio::task::JoinError),
    /// What fails in the Promise controller itself.
    #[error(transparent)]
    Promise(#[from] promise::error::Error),
    /// What fails in driving a workflow itself.
    #[error(transparent)]
    Workflow(#[from] workflow::error::Error),
    /// What fails in the run controller itself.
    #[error(transparent)]
    Run(#[from] run::error::Error),
    /// What fails in the Work controller itself.
    #[error(transparent)]
    Work(#[from] work::error::Error),
    /// What fails in the Destination controller itself.
    #[error(transparent)]
    Destination(#[from] destination::error::Error),
}

impl Error {
    /// What the reconcile failed on, as the metrics count it (a closed set: never an object's
    /// name or an error's text).
    pub(crate) fn category(&self) -> crate::metrics::ErrorCategory {
        use crate::metrics::ErrorCategory as C;
        match self {
            Error::Store(_) => C::ControlPlane,
            Error::Platform(_) => C::Platform,
            Error::Sweep(_) => C::Executor,
            Error::Malformed { .. } => C::InvalidObject,
            Error::Serialize { .. } => C::Internal,
            Error::Reconcile(_) => C::Panic,
            Error::Promise(e) => e.category(),
            Error::Workflow(e) => e.category(),
            Error::Run(e) => e.category(),
            Error::Work(e) => e.category(),
            Error::Destination(e) => e.category(),
        }
    }

    /// What the controllers made for `key` as a `kind` does not serialize.
    fn serialize(key: ObjectKey, kind: &str, source: serde_json::Error) -> Self {
        Error::Serialize {
            key,
            kind: kind.into(),
            source,
        }
    }

    /// A stored object that does not parse as `kind`.
    pub(crate) fn malformed(
        obj: &crate::api::Object,
        kind: &str,
        source: serde_json::Error,
    ) -> Self {
        Error::Malformed {
            key: ObjectKey::of(obj),
            kind: kind.into(),
            source,
        }
    }
}

/// Every controller of one home.
#[derive(Debug, Clone)]
pub struct Runtime {
    platform: Platform,
    cp: Arc<dyn ControlPlane>,
    state_stores: Arc<state_store::Cache>,
    /// What carries out pipeline runs.
    pipelines: Arc<dyn crate::pipeline::Executor>,
    /// Who this controller instance is, as recorded in the runs it claims.
    executor: run::claims::Executor,
    /// Pipeline runs this instance is carrying out, each in a task of its own.
    running: Arc<Mutex<HashMap<ObjectKey, JoinHandle<()>>>>,
    /// One permit per pipeline run that may execute at once (`Settings::max_parallel`).
    pipeline_slots: Arc<tokio::sync::Semaphore>,
    /// The owners each object was last seen with: a deleted object can no longer be read, yet
    /// its owners (a request waiting for its Works to go, a Destination for its placements)
    /// must hear of its deletion.
    owners_seen: Arc<Mutex<std::collections::HashMap<ObjectKey, Vec<ObjectKey>>>>,
    settings: Settings,
    /// The kinds of the home, kept between reconciles.
    kinds: Arc<kinds::Kinds>,
    /// The requests' status writes of their own reconciles, not to wake them again.
    own_status_writes: Arc<runtime::OwnWrites>,
    /// The Destinations the scheduler chooses from, kept between reconciles.
    destinations: Arc<work::destinations::Destinations>,
    /// Which HealthRecords name which request, kept from what the controllers see.
    health_records: Arc<request::health_index::HealthIndex>,
    /// Reconciles done per controller, and whether the controllers have started.
    metrics: Arc<crate::metrics::Metrics>,
    /// When each written placement was last checked for drift in the store.
    drift: Arc<placement::drift::Clock>,
    /// When set, stopping first carries out what is already set off, for at most this long
    /// (see [`Runtime::draining_on_stop`]).
    drain_on_stop: Option<Duration>,
    /// Folders pipeline sandboxes hide besides the home (see [`Runtime::hiding_also`]).
    also_hidden: Vec<std::path::PathBuf>,
}

impl Runtime {
    pub fn new(platform: Platform) -> Self {
        let cp = platform.control_plane();
        let settings = Settings::from_env();
        Self {
            state_stores: Arc::new(state_store::Cache::new(
                platform.cache_dir(),
                platform.home.clone(),
            )),
            platform,
            cp,
            pipelines: Arc::new(crate::pipeline::Local::default()),
            executor: run::claims::Executor::this_process(),
            running: Arc::new(Mutex::new(HashMap::new())),
            owners_seen: Arc::new(Mutex::new(std::collections::HashMap::new())),
            pipeline_slots: Arc::new(tokio::sync::Semaphore::new(settings.max_parallel)),
            settings,
            kinds: Arc::default(),
            destinations: Arc::default(),
            own_status_writes: Arc::default(),
            health_records: Arc::default(),
            metrics: Arc::default(),
            drift: Arc::default(),
            drain_on_stop: None,
            also_hidden: Vec::new(),
        }
    }

    /// A command that ran the controllers only while it waited stops them once its own objects
    /// have settled; what those changes set off beyond them (Works placed on a Destination it
    /// added, say) must still be written before the process ends, or nothing would write it
    /// until the controllers run again. Stopping then first carries that out, for at most
    /// `limit`.
    pub(crate) fn draining_on_stop(mut self, limit: Duration) -> Self {
        self.drain_on_stop = Some(limit);
        self
    }

    /// Carries out pipeline runs with `executor` (Jobs on Kubernetes) instead of on this machine.
    pub(crate) fn with_executor(mut self, executor: Arc<dyn crate::pipeline::Executor>) -> Self {
        self.pipelines = executor;
        self
    }

    /// Counts into `metrics` instead of metrics of its own.
    pub(crate) fn with_metrics(mut self, metrics: Arc<crate::metrics::Metrics>) -> Self {
        self.metrics = metrics;
        self
    }

    /// Changes the settings read from the environment.
    pub(crate) fn with_settings(mut self, change: impl FnOnce(&mut Settings)) -> Self {
        change(&mut self.settings);
        self
    }

    /// A reconcile wrote `obj`'s status: its change need not wake `obj` again.
    fn wrote_own_status(&self, obj: &crate::api::Object) {
        if let Some(rv) = &obj.metadata.resource_version {
            self.own_status_writes.wrote(ObjectKey::of(obj), rv.clone());
        }
    }

    /// What the controllers count (for `/metrics`).
    pub(crate) fn metrics(&self) -> &Arc<crate::metrics::Metrics> {
        &self.metrics
    }

    pub(crate) fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Opens state stores through `cache` instead of one of its own.
    pub(crate) fn with_state_stores(mut self, cache: Arc<state_store::Cache>) -> Self {
        self.state_stores = cache;
        self
    }

    /// Pipeline sandboxes hide `folder` too, as they hide the home: the home of a platform this
    /// one is a scratch copy of holds the same Secrets.
    pub(crate) fn hiding_also(mut self, folder: std::path::PathBuf) -> Self {
        self.also_hidden.push(folder);
        self
    }

    /// Binds new requests of versioned Promises as `strategy` says, instead of the setting
    /// from the environment.
    pub(crate) fn with_binding_strategy(mut self, strategy: request::binding::Strategy) -> Self {
        self.settings.binding_strategy = strategy;
        self
    }

    /// Lets up to `n` (at least 1) pipeline runs execute at once, instead of the setting from
    /// the environment.
    pub(crate) fn with_max_parallel(mut self, n: usize) -> Self {
        self.settings.max_parallel = n.max(1);
        self.pipeline_slots = Arc::new(tokio::sync::Semaphore::new(self.settings.max_parallel));
        self
    }

    /// Queues what the changed objects affect (each changed object for its change, the others
    /// as its owners); false when that is unknown for one of them (it is queued itself, and
    /// everything should be looked at again).
    async fn queue_affected(&self, queue: &mut Queue, batch: &runtime::ChangeBatch) -> bool {
        let changed = &batch.keys;
        let mut known = true;
        if changed
            .iter()
            .any(|k| k.group == GROUP && k.kind == "Promise")
        {
            self.kinds.forget();
        }
        if changed
            .iter()
            .any(|k| k.group == GROUP && k.kind == "Destination")
        {
            self.destinations.forget();
        }
        // Finding what a change affects may read the control plane (the changed object, its
        // owners): on Kubernetes a round trip each. One after another, a batch of hundreds of
        // changes held the loop (and with it every reconcile waiting to start) for seconds, so
        // they are read together, in the batch's order.
        // Boxed as `Send` each: the loop's future must stay `Send` for every lifetime.
        let reads: Vec<AffectedRead<'_>> = changed
            .iter()
            .map(|key| {
                let modified = batch.modified_only.contains(key);
                let seen = batch.last_seen.get(key);
                async move { (key, self.affected_by(key, modified, seen).await) }.boxed()
            })
            .collect();
        let found: Vec<_> = futures::stream::iter(reads)
            .buffered(AFFECTED_READS_AT_ONCE)
            .collect()
            .await;
        for (key, found) in found {
            // A request's own status, as its reconcile wrote it and nothing else changed it:
            // that reconcile decided from everything else, which wakes it by its own changes.
            let own = batch
                .single
                .get(key)
                .is_some_and(|rv| self.own_status_writes.was_own(key, rv));
            match found {
                Ok(keys) => {
                    for k in keys {
                        let reason = if &k == key {
                            if own {
                                continue;
                            }
                            Reason::Change
                        } else {
                            Reason::Owner
                        };
                        queue.add(k, reason);
                    }
                }
                Err(err) => {
                    warn!(object = %key, error = %ErrorChain(&err), "finding what a change affects failed; looking at everything again");
                    queue.add(key.clone(), Reason::Change);
                    known = false;
                }
            }
        }
        known
    }

    /// Takes in what a reconcile ended with: its key is queued again when it asks to be, or
    /// failed. What is logged of it is logged in its span.
    fn settle(&self, queue: &mut Queue, Finished { key, span, outcome }: Finished) {
        let _in_reconcile = span.enter();
        queue.finish(&key);
        let outcome = outcome.unwrap_or_else(|err| Err(Error::Reconcile(err)));
        let failed = outcome.as_ref().err().map(Error::category);
        self.metrics.record(&key.group, &key.kind, failed);
        match outcome {
            Ok(Next::Done) => {}
            Ok(Next::After(delay)) => queue.add_after(key.clone(), delay, Reason::Requeue),
            Err(err) => {
                let delay = queue.failure_backoff(&key);
                warn!(error = %ErrorChain(&err), "reconcile failed; retrying in {delay:?}");
                queue.add_after(key, delay, Reason::Retry);
                return;
            }
        }
        queue.forget_failures(&key);
    }

    /// Recovers interrupted runs, starts removing old events, queues everything, and opens the
    /// change feed.
    async fn start_up(&self, queue: &mut Queue) -> Result<(ChangeFeed, String), Error> {
        run::recover_interrupted(self).await?;
        crate::events::sweep_in_background(&self.cp);
        self.resync(queue).await
    }

    /// Queues everything and opens a fresh change feed from now; returns it with its start.
    async fn resync(&self, queue: &mut Queue) -> Result<(ChangeFeed, String), Error> {
        let since = self.cp.current_resource_version().await?;
        // Changes may have been missed: what is kept between reconciles is read again.
        self.destinations.forget();
        self.enqueue_everything(queue).await?;
        Ok((self.cp.watch(&[], &since), since))
    }

    async fn enqueue_everything(&self, queue: &mut Queue) -> Result<(), Error> {
        for kind in self.kinds.read(&self.platform).await?.iter() {
            if kind.group.is_empty() {
                continue; // Secrets only matter through the stores that reference them.
            }
            for obj in self.cp.list(kind, None, &Selector::everything()).await? {
                let key = ObjectKey::of(&obj);
                let owners = self.owners(&obj).await?;
                // Everything is queued here (for a resync): former owners need no word of their
                // own.
                self.remember_owners(key.clone(), owners);
                self.health_records.saw(&key, Some(&obj));
                queue.add_background(key);
            }
        }
        Ok(())
    }

    async fn reconcile(&self, key: &ObjectKey) -> Result<Next, Error> {
        let Some(kind) = self.kind_of(key).await? else {
            return Ok(Next::Done);
        };
        let Some(obj) = self
            .cp
            .get(&kind, key.namespace.as_deref(), &key.name)
            .await?
        else {
            return Ok(Next::Done);
        };
        // The object and why it was queued are the span's (see `workers`).
        debug!("reconciling");
        use crate::api::Builtin as B;
        let Some(builtin) = B::of(&kind.group, &kind.kind) else {
            if kind.group == GROUP {
                return Ok(Next::Done);
            }
            return request::reconcile(self, &kind, obj).await;
        };
        match builtin {
            B::Promise => promise::reconcile(self, obj).await,
            B::PipelineRun => run::reconcile(self, obj).await,
            B::Work => work::reconcile(self, obj).await,
            B::WorkPlacement => placement::reconcile(self, obj).await,
            B::Destination => platform_sync::reconcile_destination(self, obj).await,
            B::GitStateStore | B::BucketStateStore => {
                state_store::reconcile(self, &kind, obj).await
            }
            B::PromiseRevision => promise::revision::reconcile(self, obj).await,
            B::PromiseRelease => promise::release::reconcile(self, obj).await,
            // Read by the kinds above; nothing to reconcile of their own.
            B::Secret | B::ConfigMap | B::Namespace | B::ResourceBinding | B::HealthRecord => {
                Ok(Next::Done)
            }
        }
    }

    /// The kind of a stored object.
    async fn kind_of(&self, key: &ObjectKey) -> Result<Option<KindInfo>, Error> {
        Ok(self
            .kinds
            .kind_of(&self.platform, &key.group, &key.kind)
            .await?)
    }

    /// The request kind a Promise defines, from the kinds kept between reconciles: every
    /// change of a run or Work asks it, to find the request that waits on it.
    async fn request_kind_of(&self, promise: &str) -> Result<Option<KindInfo>, Error> {
        Ok(self.kinds.request_kind_of(&self.platform, promise).await?)
    }
}

/// The control plane's changes, as the controllers follow them.
type ChangeFeed = futures::stream::BoxStream<'static, Result<store::Change, store::Error>>;

#[cfg(test)]
mod tests;
