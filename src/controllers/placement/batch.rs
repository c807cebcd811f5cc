//! When the placements of one Work on one Destination are complete enough to write together.
//!
//! The Work controller creates, updates and deletes a Work's placements one after another, and
//! each change wakes the writer on its own. Writing as soon as the first placement changes would
//! split one pipeline's output over several commits; the writer waits until the Work controller
//! has finished with the Work instead. Only a Work of several workload groups can have several
//! placements on one Destination; one of a single group is written at once.

use crate::api::{Object, WorkStatus};

use crate::controllers::status;

/// What the writer does with a batch it found.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Batch {
    /// Write it now: it holds everything the Work's current scheduling decided.
    Write,
    /// The Work controller is still changing the placements: look again shortly.
    Wait,
}

/// Decides from the Work (if it still exists) and every placement of it on the Destination.
pub(super) fn decide(work: Option<&Object>, placements: &[Object]) -> Batch {
    let Some(work) = work else {
        // Nothing will change the placements any more: write what there is.
        return Batch::Write;
    };
    // One workload group makes one placement per Destination: unless it had more before, there
    // is nothing to wait for.
    if workload_groups(work) <= 1 && placements.len() <= 1 {
        return Batch::Write;
    }
    if work.metadata.deletion_timestamp.is_some() {
        // The Work controller deletes every placement of a Work being deleted.
        return if placements
            .iter()
            .all(|p| p.metadata.deletion_timestamp.is_some())
        {
            Batch::Write
        } else {
            Batch::Wait
        };
    }
    // The Work controller records the generation it scheduled after its last placement change.
    let observed = status::status_or_default::<WorkStatus>(work).observed_generation;
    if observed == work.metadata.generation {
        Batch::Write
    } else {
        Batch::Wait
    }
}

fn workload_groups(work: &Object) -> usize {
    work.data
        .pointer("/spec/workloadGroups")
        .and_then(serde_json::Value::as_array)
        .map_or(0, Vec::len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(generation: i64, observed: Option<i64>, deleting: bool) -> Object {
        with_groups(2, generation, observed, deleting)
    }

    fn with_groups(
        groups: usize,
        generation: i64,
        observed: Option<i64>,
        deleting: bool,
    ) -> Object {
        let deleted = deleting.then_some("2026-01-01T00:00:00Z");
        let groups: Vec<_> = (0..groups).map(|i| json!({"id": i.to_string()})).collect();
        serde_json::from_value(json!({
            "apiVersion": "platform.kratix.io/v1alpha1",
            "kind": "Work",
            "metadata": {
                "name": "w",
                "namespace": "default",
                "generation": generation,
                "deletionTimestamp": deleted,
            },
            "spec": {"workloadGroups": groups},
            "status": {"observedGeneration": observed},
        }))
        .expect("object")
    }

    #[test]
    fn a_batch_is_written_once_the_work_controller_is_done_with_it() {
        let live = || object(1, Some(1), false);
        let gone = || object(1, Some(1), true);
        let cases = [
            ("Work gone", None, vec![live()], Batch::Write),
            (
                "Work scheduled",
                Some(object(2, Some(2), false)),
                vec![live()],
                Batch::Write,
            ),
            (
                "Work changed, not scheduled yet",
                Some(object(3, Some(2), false)),
                vec![live()],
                Batch::Wait,
            ),
            (
                "Work never scheduled",
                Some(object(1, None, false)),
                vec![live()],
                Batch::Wait,
            ),
            (
                "Work deleting, all placements deleting",
                Some(gone()),
                vec![gone(), gone()],
                Batch::Write,
            ),
            (
                "Work deleting, one placement not yet",
                Some(gone()),
                vec![gone(), live()],
                Batch::Wait,
            ),
        ];
        for (name, work, placements, want) in cases {
            assert_eq!(decide(work.as_ref(), &placements), want, "{name}");
        }
    }
}
