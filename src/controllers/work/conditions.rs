//! The conditions a Work reports: `Ready` once every placement is written for its current
//! generation, `ScheduleSucceeded` once every workload group has a Destination.

use super::state::WorkReadiness;
use crate::api::words::types;
use crate::api::{reasons, Condition, ConditionStatus};

/// What a Work's conditions are decided from.
#[derive(Debug, Clone, Default)]
pub(crate) struct Placed<'a> {
    /// Workload groups no Destination matches.
    pub(crate) unscheduled: &'a [&'a str],
    /// Some placement failed to write.
    pub(crate) failing: bool,
    /// Some placement sits on a Destination its selectors no longer match.
    pub(crate) misplaced: bool,
    /// Every placement is written for its current generation.
    pub(crate) all_written: bool,
}

/// `Ready` then `ScheduleSucceeded`. Unscheduled groups come first, then failures, then
/// misplacement, then pending writes.
pub(crate) fn work_conditions(placed: &Placed) -> [Condition; 2] {
    let (readiness, reason) = if !placed.unscheduled.is_empty() {
        (WorkReadiness::Pending, reasons::UNSCHEDULED_WORKLOADS)
    } else if placed.failing {
        (WorkReadiness::Failing, reasons::WORKPLACEMENTS_FAILING)
    } else if placed.misplaced {
        (
            WorkReadiness::Misplaced,
            reasons::DESTINATION_SELECTOR_MISMATCH,
        )
    } else if !placed.all_written {
        (WorkReadiness::Pending, reasons::WORKPLACEMENTS_PENDING)
    } else {
        (WorkReadiness::Ready, reasons::ALL_WORKPLACEMENTS_WRITTEN)
    };
    let ready = match readiness {
        WorkReadiness::Ready => ConditionStatus::True,
        _ => ConditionStatus::False,
    };
    let schedule = if placed.unscheduled.is_empty() {
        Condition::new(
            types::SCHEDULE_SUCCEEDED,
            ConditionStatus::True,
            reasons::ALL_WORKPLACEMENTS_SCHEDULED,
            "All workplacements scheduled successfully",
        )
    } else {
        Condition::new(
            types::SCHEDULE_SUCCEEDED,
            ConditionStatus::False,
            reasons::UNSCHEDULED_WORKLOADS,
            &format!(
                "No matching destination found for workloadGroups: [{}]",
                placed.unscheduled.join(" ")
            ),
        )
    };
    [
        Condition::new(types::READY, ready, reason, readiness.message()),
        schedule,
    ]
}

/// Whether the Work's status is written now. A Work of one workload group whose placement only
/// waits for its write says nothing new by saying so: its placement's write wakes it again, and
/// the status is written with the outcome, once. (A Work of several groups records the
/// generation it scheduled at once: the writer waits for that before writing its placements
/// together.)
pub(crate) fn status_due(groups: usize, placed: &Placed) -> bool {
    let waiting_for_write = placed.unscheduled.is_empty()
        && !placed.failing
        && !placed.misplaced
        && !placed.all_written;
    !(groups <= 1 && waiting_for_write)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A condition's status, reason and message.
    type Said = (&'static str, &'static str, &'static str);

    #[test]
    fn ready_and_scheduled_follow_the_placements() {
        let two = ["a", "b"];
        let base = Placed {
            all_written: true,
            ..Placed::default()
        };
        let cases: Vec<(&str, Placed, Said, Said)> = vec![
            (
                "all written",
                base.clone(),
                ("True", "AllWorkplacementsWritten", "Ready"),
                (
                    "True",
                    "AllWorkplacementsScheduled",
                    "All workplacements scheduled successfully",
                ),
            ),
            (
                "unscheduled wins over failing",
                Placed {
                    unscheduled: &two,
                    failing: true,
                    ..base.clone()
                },
                ("False", "UnscheduledWorkloads", "Pending"),
                (
                    "False",
                    "UnscheduledWorkloads",
                    "No matching destination found for workloadGroups: [a b]",
                ),
            ),
            (
                "failing wins over misplaced",
                Placed {
                    failing: true,
                    misplaced: true,
                    ..base.clone()
                },
                ("False", "WorkplacementsFailing", "Failing"),
                (
                    "True",
                    "AllWorkplacementsScheduled",
                    "All workplacements scheduled successfully",
                ),
            ),
            (
                "misplaced wins over pending",
                Placed {
                    misplaced: true,
                    all_written: false,
                    ..base.clone()
                },
                ("False", "DestinationSelectorMismatch", "Misplaced"),
                (
                    "True",
                    "AllWorkplacementsScheduled",
                    "All workplacements scheduled successfully",
                ),
            ),
            (
                "not all written",
                Placed {
                    all_written: false,
                    ..base.clone()
                },
                ("False", "WorkplacementsPending", "Pending"),
                (
                    "True",
                    "AllWorkplacementsScheduled",
                    "All workplacements scheduled successfully",
                ),
            ),
        ];
        for (name, placed, want_ready, want_schedule) in cases {
            let [ready, schedule] = work_conditions(&placed);
            let got = |c: &Condition| (c.status.as_str(), c.reason.clone(), c.message.clone());
            assert_eq!(ready.type_, "Ready", "{name}");
            assert_eq!(schedule.type_, "ScheduleSucceeded", "{name}");
            let (s, r, m) = got(&ready);
            assert_eq!((s, r.as_str(), m.as_str()), want_ready, "{name}: Ready");
            let (s, r, m) = got(&schedule);
            assert_eq!(
                (s, r.as_str(), m.as_str()),
                want_schedule,
                "{name}: ScheduleSucceeded"
            );
        }
    }

    #[test]
    fn a_one_group_work_waiting_for_its_write_says_so_with_the_outcome() {
        const UNSCHEDULED: [&str; 1] = ["g1"];
        let placed =
            |unscheduled: &'static [&'static str], failing, misplaced, all_written| Placed {
                unscheduled,
                failing,
                misplaced,
                all_written,
            };
        let cases = [
            (
                "one group, waiting",
                1,
                placed(&[], false, false, false),
                false,
            ),
            (
                "one group, written",
                1,
                placed(&[], false, false, true),
                true,
            ),
            (
                "one group, failing",
                1,
                placed(&[], true, false, false),
                true,
            ),
            (
                "one group, misplaced",
                1,
                placed(&[], false, true, false),
                true,
            ),
            (
                "one group, unscheduled",
                1,
                placed(&UNSCHEDULED, false, false, false),
                true,
            ),
            ("no group", 0, placed(&[], false, false, true), true),
            (
                "two groups, waiting",
                2,
                placed(&[], false, false, false),
                true,
            ),
        ];
        for (name, groups, placed, want) in cases {
            assert_eq!(status_due(groups, &placed), want, "{name}");
        }
    }
}
