//! The aggregate state of a workflow's Works, and the `WorksSucceeded` condition it makes.

use crate::api::words::{readiness, types};
use crate::api::{condition, Condition, ConditionStatus, Object, WorkStatus};

use crate::controllers::status_value as status;

/// The aggregate of an object's Works' readiness.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum WorksState {
    /// Some Work is not scheduled or not written yet.
    Pending,
    Failing,
    Misplaced,
    Ready,
    /// The object has no Works at all (its pipelines produced no output).
    NoWorks,
}

/// Where one Work stands, from its `Ready` condition (whose message is Kratix's word for it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum WorkReadiness {
    Ready,
    /// Not scheduled or not written yet, or written for another generation.
    Pending,
    /// A placement's write failed.
    Failing,
    /// A workload group sits on a Destination that no longer matches.
    Misplaced,
}

impl WorkReadiness {
    /// The `Ready` condition's message for it, as Kratix writes it.
    pub(crate) fn message(self) -> &'static str {
        match self {
            Self::Ready => readiness::READY,
            Self::Pending => readiness::PENDING,
            Self::Failing => readiness::FAILING,
            Self::Misplaced => readiness::MISPLACED,
        }
    }

    /// The readiness a `Ready` condition's message says.
    fn from_message(message: &str) -> Self {
        match message {
            readiness::READY => Self::Ready,
            readiness::FAILING => Self::Failing,
            readiness::MISPLACED => Self::Misplaced,
            _ => Self::Pending,
        }
    }
}

/// What one Work's `Ready` condition says, as far as it counts: conditions only count for the
/// generation they were written for, so a Work that a new run just changed is pending whatever
/// its previous generation said; a Work being deleted (a removed pipeline's) is pending until
/// its files have left the stores.
fn readiness(work: &Object, going: bool) -> WorkReadiness {
    let s: WorkStatus = status::status_or_default(work);
    if s.observed_generation != work.metadata.generation
        || work.metadata.deletion_timestamp.is_some()
        || going
    {
        return WorkReadiness::Pending;
    }
    match condition::find(&s.conditions, types::READY) {
        Some(c) if c.status == ConditionStatus::True => WorkReadiness::Ready,
        Some(c) => WorkReadiness::from_message(&c.message),
        None => WorkReadiness::Pending,
    }
}

/// The aggregate of Works' `Ready` messages, failing before pending before misplaced.
/// Those of `going` (being deleted now) are pending as well.
pub(crate) fn works_state_with(works: &[Object], going: &[Object]) -> WorksState {
    if works.is_empty() {
        return WorksState::NoWorks;
    }
    let is_going = |w: &Object| going.iter().any(|g| g.metadata.name == w.metadata.name);
    let states: Vec<WorkReadiness> = works.iter().map(|w| readiness(w, is_going(w))).collect();
    if states.contains(&WorkReadiness::Failing) {
        WorksState::Failing
    } else if states.contains(&WorkReadiness::Pending) {
        WorksState::Pending
    } else if states.contains(&WorkReadiness::Misplaced) {
        WorksState::Misplaced
    } else {
        WorksState::Ready
    }
}

pub(crate) fn works_succeeded_condition(state: WorksState) -> Condition {
    let (status, reason, message) = match state {
        WorksState::Ready | WorksState::NoWorks => (
            ConditionStatus::True,
            "WorksSucceeded",
            "All works associated with this resource are ready",
        ),
        WorksState::Pending => (
            ConditionStatus::Unknown,
            "WorksPending",
            "Some works associated with this resource are not ready",
        ),
        WorksState::Failing => (
            ConditionStatus::False,
            "WorksFailing",
            "Some works associated with this resource failed",
        ),
        WorksState::Misplaced => (
            ConditionStatus::False,
            "WorksMisplaced",
            "Some works associated with this resource are misplaced",
        ),
    };
    Condition::new(types::WORKS_SUCCEEDED, status, reason, message)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::api::API_VERSION;

    fn work(generation: i64, observed: i64, ready: &str, message: &str) -> Object {
        serde_json::from_value(json!({
            "apiVersion": API_VERSION, "kind": "Work",
            "metadata": {"name": "w", "namespace": "default", "generation": generation},
            "status": {"observedGeneration": observed, "conditions": [
                {"type": "Ready", "status": ready, "message": message}]},
        }))
        .expect("valid Work")
    }

    fn deleting(w: Object) -> Object {
        let mut v = serde_json::to_value(w).expect("a Work serializes");
        v["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        serde_json::from_value(v).expect("valid Work")
    }

    #[test]
    fn works_state_counts_only_conditions_of_the_current_generation() {
        let cases: Vec<(&str, Vec<Object>, WorksState)> = vec![
            ("no works", vec![], WorksState::NoWorks),
            (
                "all ready",
                vec![work(1, 1, "True", "Ready"), work(2, 2, "True", "Ready")],
                WorksState::Ready,
            ),
            (
                "ready for an older generation",
                vec![work(2, 1, "True", "Ready")],
                WorksState::Pending,
            ),
            (
                "ready but being deleted",
                vec![deleting(work(1, 1, "True", "Ready"))],
                WorksState::Pending,
            ),
            (
                "pending",
                vec![work(1, 1, "True", "Ready"), work(1, 1, "False", "Pending")],
                WorksState::Pending,
            ),
            (
                "failing wins",
                vec![
                    work(1, 1, "False", "Pending"),
                    work(1, 1, "False", "Failing"),
                ],
                WorksState::Failing,
            ),
            (
                "misplaced",
                vec![
                    work(1, 1, "True", "Ready"),
                    work(1, 1, "False", "Misplaced"),
                ],
                WorksState::Misplaced,
            ),
            (
                "pending before misplaced",
                vec![
                    work(1, 1, "False", "Misplaced"),
                    work(3, 2, "True", "Ready"),
                ],
                WorksState::Pending,
            ),
        ];
        for (name, works, want) in cases {
            assert_eq!(works_state_with(&works, &[]), want, "{name}");
        }
    }

    #[test]
    fn works_succeeded_says_what_the_works_do() {
        let cases = [
            (WorksState::Ready, ConditionStatus::True, "WorksSucceeded"),
            (WorksState::NoWorks, ConditionStatus::True, "WorksSucceeded"),
            (
                WorksState::Pending,
                ConditionStatus::Unknown,
                "WorksPending",
            ),
            (WorksState::Failing, ConditionStatus::False, "WorksFailing"),
            (
                WorksState::Misplaced,
                ConditionStatus::False,
                "WorksMisplaced",
            ),
        ];
        for (state, status, reason) in cases {
            let c = works_succeeded_condition(state);
            assert_eq!(c.type_, "WorksSucceeded", "{state:?}");
            assert_eq!(c.status, status, "{state:?}");
            assert_eq!(c.reason, reason, "{state:?}");
        }
    }
}
