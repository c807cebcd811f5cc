//! Counts of reconciles per controller, for the metrics endpoint of `kratix-rs controller`.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

use crate::api::GROUP;

/// Reconciles done and failed, per controller, since the process started.
#[derive(Debug, Default)]
pub struct ReconcileMetrics {
    counts: Mutex<BTreeMap<&'static str, Counts>>,
    started: AtomicBool,
}

/// Reconciles of one controller.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub total: u64,
    pub errors: u64,
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

impl ReconcileMetrics {
    pub fn record(&self, group: &str, kind: &str, ok: bool) {
        let mut counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        let c = counts.entry(controller_of(group, kind)).or_default();
        c.total += 1;
        if !ok {
            c.errors += 1;
        }
    }

    /// Counts per controller, by controller name.
    pub fn snapshot(&self) -> BTreeMap<&'static str, Counts> {
        self.counts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Records that the controllers have started: everything was listed and the change feed
    /// is open.
    pub fn set_started(&self, started: bool) {
        self.started.store(started, Ordering::SeqCst);
    }

    pub fn started(&self) -> bool {
        self.started.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reconciles_count_per_controller_with_few_labels() {
        let m = ReconcileMetrics::default();
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
}
