//! What the process did, for the `/metrics` endpoint of `serve` and `controller`: reconciles,
//! pipeline runs, the queue, writes to state stores and their pushes, and (`controller`) whether
//! this replica leads. The families are those of docs/metrics.md; every label takes a few fixed
//! values (never an object's name), so the number of series stays small however many objects
//! there are. The registry, the metric types and the text format are `prometheus_client`'s.

mod endpoint;
mod ends;
mod labels;
mod ordered;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use prometheus_client::encoding::prometheus_text;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

pub(crate) use endpoint::{bind, scrape, serve, Answer};
use ends::Ends;
pub(crate) use ends::WorkRef;
pub(crate) use labels::{Controller, ErrorCategory, RunLabels, SyncOutcome, WriteResult};
use labels::{ControllerLabels, FailureLabels, SyncLabels, WriteLabels};
use ordered::Ordered;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The address is not `host:port` or cannot be listened on.
    #[error("listening on {addr}")]
    Listen {
        addr: String,
        #[source]
        source: std::io::Error,
    },
    /// The registry could not be written out as text.
    #[error("writing the metrics in Prometheus' text format")]
    Encode(#[source] std::fmt::Error),
}

/// The `Content-Type` of [`Metrics::render`]'s text: Prometheus' text format, version 0.0.4.
pub(crate) const CONTENT_TYPE: &str = prometheus_text::CONTENT_TYPE;

/// Buckets in seconds, for pipeline runs and the latency from a pipeline's end to its commit.
const SECONDS: [f64; 13] = [
    0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0,
];

/// Buckets of small counts, for commits per push.
const COUNTS: [f64; 7] = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0];

fn seconds() -> Histogram {
    Histogram::new(SECONDS)
}

/// Everything one process counts, since it started.
#[derive(Debug)]
pub(crate) struct Metrics {
    /// Holds a clone of each metric below (they share their values), in the order they are
    /// written out.
    registry: Registry,
    /// Not a metric: whether the controllers have listed everything and opened their change
    /// feed, for `controller`'s readiness.
    started: AtomicBool,
    reconciles: Ordered<ControllerLabels, Counter>,
    reconcile_errors: Ordered<ControllerLabels, Counter>,
    reconcile_failures: Ordered<FailureLabels, Counter>,
    runs: Ordered<RunLabels, Counter>,
    run_durations: Ordered<RunLabels, Histogram>,
    queue_depth: Gauge,
    ends: Mutex<Ends>,
    end_to_commit: Histogram,
    writes: Ordered<WriteLabels, Counter>,
    commits_per_push: Histogram,
    push_conflicts: Counter,
    push_retries: Counter,
    platform_sync: Ordered<SyncLabels, Counter>,
    /// `controller` only (see [`Metrics::with_leader`]).
    leader: Option<Gauge>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new(None)
    }
}

impl Metrics {
    /// The metrics of `controller`: those of the controllers and `kratix_leader`.
    pub(crate) fn with_leader() -> Self {
        Self::new(Some(Gauge::default()))
    }

    fn new(leader: Option<Gauge>) -> Self {
        let m = Metrics {
            registry: Registry::default(),
            started: AtomicBool::new(false),
            reconciles: Ordered::new(Counter::default),
            reconcile_errors: Ordered::new(Counter::default),
            reconcile_failures: Ordered::new(Counter::default),
            runs: Ordered::new(Counter::default),
            run_durations: Ordered::new(seconds),
            queue_depth: Gauge::default(),
            ends: Mutex::default(),
            end_to_commit: seconds(),
            writes: Ordered::new(Counter::default),
            commits_per_push: Histogram::new(COUNTS),
            push_conflicts: Counter::default(),
            push_retries: Counter::default(),
            platform_sync: Ordered::new(Counter::default),
            leader,
        };
        m.registered()
    }

    /// Registers every metric. Counters are named without `_total`: the text format adds it.
    fn registered(mut self) -> Self {
        let r = &mut self.registry;
        r.register(
            "kratix_reconcile",
            "Reconciles by controller",
            self.reconciles.clone(),
        );
        r.register(
            "kratix_reconcile_errors",
            "Reconciles that failed, by controller",
            self.reconcile_errors.clone(),
        );
        r.register(
            "kratix_reconcile_failures",
            "Reconciles that failed, by controller and what they failed on",
            self.reconcile_failures.clone(),
        );
        r.register(
            "kratix_pipeline_runs",
            "Pipeline runs that ended, by workflow type, action and result",
            self.runs.clone(),
        );
        r.register_with_unit(
            "kratix_pipeline_run_duration",
            "How long pipeline runs took, by workflow type, action and result",
            Unit::Seconds,
            self.run_durations.clone(),
        );
        r.register(
            "kratix_queue_depth",
            "Objects waiting in the controllers' queue",
            self.queue_depth.clone(),
        );
        r.register_with_unit(
            "kratix_pipeline_end_to_commit",
            "From a pipeline storing its Work to that Work written to a Destination's state store (once per Destination)",
            Unit::Seconds,
            self.end_to_commit.clone(),
        );
        r.register(
            "kratix_state_store_writes",
            "Writes of a Work's placements to a state store, by store kind and result (changed, unchanged: a no-op, failed)",
            self.writes.clone(),
        );
        r.register(
            "kratix_git_commits_per_push",
            "Commits published by one push to a Git state store",
            self.commits_per_push.clone(),
        );
        r.register(
            "kratix_git_push_conflicts",
            "Pushes refused because the branch had moved (the commits are re-applied on its tip)",
            self.push_conflicts.clone(),
        );
        r.register(
            "kratix_git_push_retries",
            "Pushes made again after waiting, the branch having moved under a freshly fetched tip",
            self.push_retries.clone(),
        );
        r.register(
            "kratix_platform_sync_documents",
            "Documents and inventory entries the platform Destinations' sync handled, by outcome",
            self.platform_sync.clone(),
        );
        if let Some(leader) = &self.leader {
            r.register(
                "kratix_leader",
                "Whether this replica is the leader (1) or a standby (0)",
                leader.clone(),
            );
        }
        self
    }

    /// The platform sync handled `n` documents or entries with `outcome`.
    pub(crate) fn synced(&self, outcome: SyncOutcome, n: usize) {
        self.platform_sync
            .get(&SyncLabels { outcome })
            .inc_by(n as u64);
    }

    /// A reconcile of an object of `kind` in `group` ended: well, or failing on `failed`.
    pub(crate) fn record(&self, group: &str, kind: &str, failed: Option<ErrorCategory>) {
        let controller = Controller::of(group, kind);
        let labels = ControllerLabels { controller };
        self.reconciles.get(&labels).inc();
        // Made with the first reconcile, so that the errors of a controller read 0, not nothing.
        let errors = self.reconcile_errors.get(&labels);
        if let Some(category) = failed {
            errors.inc();
            self.reconcile_failures
                .get(&FailureLabels {
                    controller,
                    category,
                })
                .inc();
        }
    }

    /// Records that the controllers have started: everything was listed and the change feed
    /// is open.
    pub(crate) fn set_started(&self, started: bool) {
        self.started.store(started, Ordering::SeqCst);
    }

    pub(crate) fn started(&self) -> bool {
        self.started.load(Ordering::SeqCst)
    }

    /// A pipeline run ended after `took`.
    pub(crate) fn run_finished(&self, labels: RunLabels, took: Duration) {
        self.runs.get(&labels).inc();
        self.run_durations.get(&labels).observe(took.as_secs_f64());
    }

    /// How many objects wait in the controllers' queue.
    pub(crate) fn set_queue_depth(&self, depth: usize) {
        self.queue_depth
            .set(i64::try_from(depth).unwrap_or(i64::MAX));
    }

    /// Whether this replica leads; nothing for metrics made without `kratix_leader`.
    pub(crate) fn set_leader(&self, leads: bool) {
        if let Some(leader) = &self.leader {
            leader.set(i64::from(leads));
        }
    }

    /// A pipeline stored its Work now: its writes to state stores are timed from here.
    pub(crate) fn pipeline_ended(&self, work: WorkRef) {
        self.pipeline_ended_at(work, Instant::now());
    }

    fn pipeline_ended_at(&self, work: WorkRef, at: Instant) {
        self.ends().ended(work, at);
    }

    /// A write of `work`'s placements on `destination` to a store of kind `store` (`git`,
    /// `bucket`, ...) went as `result`.
    pub(crate) fn placement_written(
        &self,
        store: &'static str,
        work: &WorkRef,
        destination: &str,
        result: WriteResult,
    ) {
        self.placement_written_at(store, work, destination, result, Instant::now());
    }

    fn placement_written_at(
        &self,
        store: &'static str,
        work: &WorkRef,
        destination: &str,
        result: WriteResult,
        now: Instant,
    ) {
        self.writes.get(&WriteLabels { store, result }).inc();
        if result == WriteResult::Failed {
            return;
        }
        if let Some(latency) = self.ends().written(work, destination, now) {
            self.end_to_commit.observe(latency.as_secs_f64());
        }
    }

    fn ends(&self) -> std::sync::MutexGuard<'_, Ends> {
        self.ends.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The metrics in Prometheus' text format (served as [`CONTENT_TYPE`]).
    pub(crate) fn render(&self) -> Result<String, Error> {
        let mut text = String::new();
        prometheus_text::encode(&mut text, &self.registry).map_err(Error::Encode)?;
        Ok(text)
    }
}

impl statestores::PushEvents for Metrics {
    fn pushed(&self, commits: usize) {
        self.commits_per_push.observe(commits as f64);
    }

    fn conflict(&self) {
        self.push_conflicts.inc();
    }

    fn retry(&self) {
        self.push_retries.inc();
    }
}

#[cfg(test)]
mod tests;
