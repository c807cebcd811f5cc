//! Pipelines that ended with a Work, until that Work is written to each Destination: the
//! latency from a pipeline's end to its commit.

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

/// How many pipeline ends wait for their commit at most; beyond, new ones are not timed (a Work
/// no Destination selects is never written, and must not hold memory for ever).
const MAX_WAITING_ENDS: usize = 10_000;

/// A pipeline end older than this no longer counts when its Work is written: that write was
/// set off by something else (a Destination added later, say).
const STALE_END: Duration = Duration::from_secs(15 * 60);

/// The Work a pipeline makes, as both its run and its placements name it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct WorkRef {
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

#[derive(Debug, Default)]
pub(super) struct Ends(HashMap<WorkRef, End>);

impl Ends {
    /// The pipeline that makes `work` stored it at `at`.
    pub(super) fn ended(&mut self, work: WorkRef, at: Instant) {
        if self.0.len() >= MAX_WAITING_ENDS {
            self.0
                .retain(|_, end| at.saturating_duration_since(end.at) < STALE_END);
        }
        if self.0.len() < MAX_WAITING_ENDS || self.0.contains_key(&work) {
            self.0.insert(
                work,
                End {
                    at,
                    written: BTreeSet::new(),
                },
            );
        }
    }

    /// `work` was written to `destination` at `now`: how long after its pipeline ended, the
    /// first time only, and only when that end is recent.
    pub(super) fn written(
        &mut self,
        work: &WorkRef,
        destination: &str,
        now: Instant,
    ) -> Option<Duration> {
        let end = self.0.get_mut(work)?;
        let took = now.saturating_duration_since(end.at);
        if took >= STALE_END {
            self.0.remove(work);
            return None;
        }
        end.written.insert(destination.to_string()).then_some(took)
    }
}

/// The Work of pipeline `pipeline` of request `default/r1` of Promise `redis`.
#[cfg(test)]
pub(super) fn work(pipeline: &str) -> WorkRef {
    WorkRef {
        namespace: "default".into(),
        promise: "redis".into(),
        resource: "r1".into(),
        pipeline: pipeline.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_end_is_timed_once_per_destination_and_only_while_recent() {
        let start = Instant::now();
        let at = |s: u64| start + Duration::from_secs(s);
        let mut ends = Ends::default();
        ends.ended(work("main"), at(0));
        let cases = [
            (work("main"), "dev", 2, Some(2)),
            (work("main"), "dev", 3, None),
            (work("main"), "prod", 5, Some(5)),
            (work("other"), "dev", 5, None),
            (work("main"), "staging", 15 * 60, None),
            // Forgotten once stale.
            (work("main"), "test", 1, None),
        ];
        for (i, (w, destination, now, want)) in cases.into_iter().enumerate() {
            assert_eq!(
                ends.written(&w, destination, at(now)),
                want.map(Duration::from_secs),
                "case {i}"
            );
        }
        // A new end of the same pipeline is timed again.
        ends.ended(work("main"), at(100));
        assert_eq!(
            ends.written(&work("main"), "dev", at(101)),
            Some(Duration::from_secs(1))
        );
    }
}
