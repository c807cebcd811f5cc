//! The conditions a WorkPlacement reports: `WriteSucceeded` and `Ready`, once its files are
//! written or when they could not be.

use crate::api::destination_paths::PathRefusal;
use crate::api::words::{readiness, types};
use crate::api::{reasons, Condition, ConditionStatus};

/// A placement's conditions once its files are written: `Ready` unless it is misplaced.
pub(crate) fn written_conditions(misplaced: bool) -> [Condition; 2] {
    let ready = if misplaced {
        Condition::new(
            types::READY,
            ConditionStatus::False,
            reasons::DESTINATION_SELECTOR_MISMATCH,
            readiness::MISPLACED,
        )
    } else {
        Condition::new(
            types::READY,
            ConditionStatus::True,
            reasons::WORKLOADS_WRITTEN_TO_TARGET_DESTINATION,
            readiness::READY,
        )
    };
    [
        Condition::new(
            types::WRITE_SUCCEEDED,
            ConditionStatus::True,
            reasons::WORKLOADS_WRITTEN_TO_STATE_STORE,
            "Workloads written to State Store",
        ),
        ready,
    ]
}

/// A placement's conditions when its files could not be written: failing, for `reason`.
pub(crate) fn failed_conditions(reason: &str, message: &str) -> [Condition; 2] {
    [
        Condition::new(
            types::WRITE_SUCCEEDED,
            ConditionStatus::False,
            reason,
            message,
        ),
        Condition::new(
            types::READY,
            ConditionStatus::False,
            reason,
            readiness::FAILING,
        ),
    ]
}

/// Whether a placement is held back because its Destination was refused a path (its
/// `WriteSucceeded` is `False` for that reason): its Destination's change wakes it, since its
/// Destination being admitted changes no Work.
pub(crate) fn held_by_path_refusal(conditions: &[Condition]) -> bool {
    conditions.iter().any(|c| {
        c.type_ == types::WRITE_SUCCEEDED
            && c.status == ConditionStatus::False
            && PathRefusal::is_reason(&c.reason)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_placement_held_by_its_destinations_path_waits_for_it() {
        let cases = [
            ("never written", vec![], false),
            ("written", written_conditions(false).to_vec(), false),
            (
                "push refused",
                failed_conditions("WorkloadsFailedWrite", "push refused").to_vec(),
                false,
            ),
            (
                "no path",
                failed_conditions("PathRequired", "a path is required").to_vec(),
                true,
            ),
            (
                "path held by another",
                failed_conditions("PathInUse", "in use").to_vec(),
                true,
            ),
        ];
        for (name, conditions, held) in cases {
            assert_eq!(held_by_path_refusal(&conditions), held, "{name}");
        }
    }

    fn summary(conditions: &[Condition; 2]) -> Vec<(String, &'static str, String, String)> {
        conditions
            .iter()
            .map(|c| {
                (
                    c.type_.clone(),
                    c.status.as_str(),
                    c.reason.clone(),
                    c.message.clone(),
                )
            })
            .collect()
    }

    fn row(t: &str, s: &'static str, r: &str, m: &str) -> (String, &'static str, String, String) {
        (t.into(), s, r.into(), m.into())
    }

    #[test]
    fn placement_conditions_say_whether_files_are_in_place() {
        let written = row(
            "WriteSucceeded",
            "True",
            "WorkloadsWrittenToStateStore",
            "Workloads written to State Store",
        );
        let cases = vec![
            (
                "written",
                written_conditions(false),
                vec![
                    written.clone(),
                    row(
                        "Ready",
                        "True",
                        "WorkloadsWrittenToTargetDestination",
                        "Ready",
                    ),
                ],
            ),
            (
                "written but misplaced",
                written_conditions(true),
                vec![
                    written.clone(),
                    row("Ready", "False", "DestinationSelectorMismatch", "Misplaced"),
                ],
            ),
            (
                "write failed",
                failed_conditions("WorkloadsFailedWrite", "push refused"),
                vec![
                    row(
                        "WriteSucceeded",
                        "False",
                        "WorkloadsFailedWrite",
                        "push refused",
                    ),
                    row("Ready", "False", "WorkloadsFailedWrite", "Failing"),
                ],
            ),
        ];
        for (name, got, want) in cases {
            assert_eq!(summary(&got), want, "{name}");
        }
    }
}
