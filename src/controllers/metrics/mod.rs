//! What the controllers did, for the `/metrics` endpoint of `serve` and `controller`: reconciles,
//! pipeline runs, the queue, writes to state stores and their pushes. Every label takes a few
//! fixed values (never an object's name), so the number of series stays small however many
//! objects there are.

mod endpoint;
mod histogram;
mod text;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::api::GROUP;

pub use endpoint::{bind, serve, Answer, Error};
use histogram::Histogram;

/// How many pipeline ends wait for their commit at most; beyond, new ones are not timed (a Work
/// no Destination selects is never written, and must not hold memory for ever).
const MAX_WAITING_ENDS: usize = 10_000;

/// A pipeline end older than this no longer counts when its Work is written: that write was
/// set off by something else (a Destination added later, say).
const STALE_END: Duration = Duration::from_secs(15 * 60);

/// Everything the controllers of one process count, since the process started.
#[derive(Debug)]
pub struct Metrics {
    reconciles: Mutex<BTreeMap<&'static str, Counts>>,
    started: AtomicBool,
    runs: Mutex<BTreeMap<RunLabels, Histogram>>,
    queue_depth: AtomicU64,
    /// Pipelines that ended with a Work, until that Work is written to each Destination.
    ends: Mutex<HashMap<WorkRef, End>>,
    end_to_commit: Mutex<Histogram>,
    commits_per_push: Mutex<Histogram>,
    writes: Mutex<BTreeMap<(&'static str, WriteResult), u64>>,
    push_conflicts: AtomicU64,
    push_retries: AtomicU64,
}

impl Default for Metrics {
    fn default() -> Self {
        Self {
            reconciles: Mutex::default(),
            started: AtomicBool::new(false),
            runs: Mutex::default(),
            queue_depth: AtomicU64::new(0),
            ends: Mutex::default(),
            end_to_commit: Mutex::new(Histogram::new(histogram::SECONDS)),
            commits_per_push: Mutex::new(Histogram::new(histogram::COUNTS)),
            writes: Mutex::default(),
            push_conflicts: AtomicU64::new(0),
            push_retries: AtomicU64::new(0),
        }
    }
}

/// Reconciles of one controller.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub total: u64,
    pub errors: u64,
}

/// The labels of a pipeline run: its workflow's type and action, and how it ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct RunLabels {
    pub workflow_type: &'static str,
    pub action: &'static str,
    pub result: &'static str,
}

impl RunLabels {
    /// From a run's `workflowType` and `workflowAction` as stored; anything unexpected is
    /// counted as `other` rather than becoming a label value of its own.
    pub fn of(workflow_type: &str, action: &str, succeeded: bool) -> Self {
        Self {
            workflow_type: match workflow_type {
                "resource" => "resource",
                "promise" => "promise",
                _ => "other",
            },
            action: match action {
                "configure" => "configure",
                "delete" => "delete",
                _ => "other",
            },
            result: if succeeded { "succeeded" } else { "failed" },
        }
    }
}

/// How a write of a Work's placements to a state store went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum WriteResult {
    /// Something changed: a commit, or objects uploaded or deleted.
    Changed,
    /// The store already held exactly that.
    Unchanged,
    Failed,
}

impl WriteResult {
    /// How a store's answer to a write counts.
    pub fn of<E>(written: &Result<statestores::WriteOutcome, E>) -> Self {
        match written {
            Err(_) => WriteResult::Failed,
            Ok(o) if o.version.is_some() || o.changed() => WriteResult::Changed,
            Ok(_) => WriteResult::Unchanged,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            WriteResult::Changed => "changed",
            WriteResult::Unchanged => "unchanged",
            WriteResult::Failed => "failed",
        }
    }
}

/// The Work a pipeline makes, as both its run and its placements name it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WorkRef {
    pub namespace: String,
    pub promise: String,
    /// Empty for a promise workflow.
    pub resource: String,
    pub pipeline: String,
}

#[derive(Debug)]
struct End {
    at: Instant,
    /// The Destinations it has been written to since.
    written: BTreeSet<String>,
}

/// The controller that reconciles objects of `kind` in `group`: one per built-in kind, and one
/// for every request kind (so that the metric's labels stay few however many Promises there are).
pub fn controller_of(group: &str, kind: &str) -> &'static str {
    if group != GROUP {
        return "request";
    }
    match kind {
        "Promise" => "promise",
        "PipelineRun" => "pipelinerun",
        "Work" => "work",
        "WorkPlacement" => "workplacement",
        "Destination" => "destination",
        "GitStateStore" | "BucketStateStore" => "statestore",
        "PromiseRevision" => "promiserevision",
        "PromiseRelease" => "promiserelease",
        _ => "other",
    }
}

fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Metrics {
    pub fn record(&self, group: &str, kind: &str, ok: bool) {
        let mut counts = locked(&self.reconciles);
        let c = counts.entry(controller_of(group, kind)).or_default();
        c.total += 1;
        if !ok {
            c.errors += 1;
        }
    }

    /// Counts per controller, by controller name.
    pub fn snapshot(&self) -> BTreeMap<&'static str, Counts> {
        locked(&self.reconciles).clone()
    }

    /// Records that the controllers have started: everything was listed and the change feed
    /// is open.
    pub fn set_started(&self, started: bool) {
        self.started.store(started, Ordering::SeqCst);
    }

    pub fn started(&self) -> bool {
        self.started.load(Ordering::SeqCst)
    }

    /// A pipeline run ended after `took`.
    pub fn run_finished(&self, labels: RunLabels, took: Duration) {
        locked(&self.runs)
            .entry(labels)
            .or_insert_with(|| Histogram::new(histogram::SECONDS))
            .observe(took.as_secs_f64());
    }

    /// How many objects wait in the controllers' queue.
    pub fn set_queue_depth(&self, depth: usize) {
        self.queue_depth
            .store(u64::try_from(depth).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    /// A pipeline stored its Work now: its writes to state stores are timed from here.
    pub fn pipeline_ended(&self, work: WorkRef) {
        let now = Instant::now();
        let mut ends = locked(&self.ends);
        if ends.len() >= MAX_WAITING_ENDS {
            ends.retain(|_, end| now.duration_since(end.at) < STALE_END);
        }
        if ends.len() < MAX_WAITING_ENDS || ends.contains_key(&work) {
            ends.insert(
                work,
                End {
                    at: now,
                    written: BTreeSet::new(),
                },
            );
        }
    }

    /// A write of `work`'s placements on `destination` to a store of kind `store` (`git`,
    /// `bucket`, ...) went as `result`.
    pub fn placement_written(
        &self,
        store: &'static str,
        work: &WorkRef,
        destination: &str,
        result: WriteResult,
    ) {
        *locked(&self.writes).entry((store, result)).or_default() += 1;
        if result == WriteResult::Failed {
            return;
        }
        let latency = {
            let mut ends = locked(&self.ends);
            let Some(end) = ends.get_mut(work) else {
                return;
            };
            let took = end.at.elapsed();
            if took >= STALE_END {
                ends.remove(work);
                return;
            }
            if !end.written.insert(destination.to_string()) {
                return;
            }
            took
        };
        locked(&self.end_to_commit).observe(latency.as_secs_f64());
    }

    /// The metrics in Prometheus' text format.
    pub fn render(&self) -> String {
        text::render(self)
    }
}

impl statestores::PushEvents for Metrics {
    fn pushed(&self, commits: usize) {
        locked(&self.commits_per_push).observe(commits as f64);
    }

    fn conflict(&self) {
        self.push_conflicts.fetch_add(1, Ordering::Relaxed);
    }

    fn retry(&self) {
        self.push_retries.fetch_add(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reconciles_count_per_controller_with_few_labels() {
        let m = Metrics::default();
        let cases = [
            (GROUP, "Promise", true),
            (GROUP, "Promise", false),
            ("example.com", "Thing", true),
            ("other.org", "Database", false),
            (GROUP, "BucketStateStore", true),
            (GROUP, "GitStateStore", true),
        ];
        for (group, kind, ok) in cases {
            m.record(group, kind, ok);
        }
        let got: Vec<(&str, u64, u64)> = m
            .snapshot()
            .into_iter()
            .map(|(k, c)| (k, c.total, c.errors))
            .collect();
        assert_eq!(
            got,
            [("promise", 2, 1), ("request", 2, 1), ("statestore", 2, 0)]
        );
    }

    #[test]
    fn run_labels_take_fixed_values_only() {
        let cases = [
            (
                "resource",
                "configure",
                true,
                ("resource", "configure", "succeeded"),
            ),
            ("promise", "delete", false, ("promise", "delete", "failed")),
            (
                "Resource",
                "reconfigure",
                true,
                ("other", "other", "succeeded"),
            ),
            ("", "", false, ("other", "other", "failed")),
        ];
        for (workflow_type, action, ok, (t, a, r)) in cases {
            let got = RunLabels::of(workflow_type, action, ok);
            assert_eq!(
                (got.workflow_type, got.action, got.result),
                (t, a, r),
                "{workflow_type} {action} {ok}"
            );
        }
    }

    #[test]
    fn a_write_counts_as_changed_only_when_the_store_changed() {
        use statestores::{Key, Version, WriteOutcome};
        let key = Key::parse("a/b.yaml").expect("key");
        let cases: [(Result<WriteOutcome, ()>, WriteResult); 4] = [
            (Err(()), WriteResult::Failed),
            (Ok(WriteOutcome::default()), WriteResult::Unchanged),
            (
                Ok(WriteOutcome {
                    version: Some(Version("abc".into())),
                    written: vec![key.clone()],
                    deleted: vec![],
                }),
                WriteResult::Changed,
            ),
            (
                Ok(WriteOutcome {
                    version: None,
                    written: vec![],
                    deleted: vec![key],
                }),
                WriteResult::Changed,
            ),
        ];
        for (written, want) in cases {
            assert_eq!(WriteResult::of(&written), want, "{written:?}");
        }
    }

    fn work(pipeline: &str) -> WorkRef {
        WorkRef {
            namespace: "default".into(),
            promise: "redis".into(),
            resource: "r1".into(),
            pipeline: pipeline.into(),
        }
    }

    #[test]
    fn a_pipeline_end_is_timed_once_per_destination_and_failures_are_not_timed() {
        let m = Metrics::default();
        m.pipeline_ended(work("main"));
        let cases = [
            (work("main"), "dev", WriteResult::Failed, 0),
            (work("main"), "dev", WriteResult::Changed, 1),
            (work("main"), "dev", WriteResult::Changed, 1),
            (work("main"), "prod", WriteResult::Unchanged, 2),
            (work("other"), "dev", WriteResult::Changed, 2),
        ];
        for (i, (w, destination, result, timed)) in cases.into_iter().enumerate() {
            m.placement_written("git", &w, destination, result);
            assert_eq!(locked(&m.end_to_commit).count(), timed, "case {i}");
        }
        let writes = locked(&m.writes).clone();
        assert_eq!(writes.get(&("git", WriteResult::Changed)), Some(&3));
        assert_eq!(writes.get(&("git", WriteResult::Unchanged)), Some(&1));
        assert_eq!(writes.get(&("git", WriteResult::Failed)), Some(&1));
        // A new end of the same pipeline is timed again.
        m.pipeline_ended(work("main"));
        m.placement_written("git", &work("main"), "dev", WriteResult::Changed);
        assert_eq!(locked(&m.end_to_commit).count(), 3);
    }
}
