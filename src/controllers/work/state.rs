//! The aggregate state of a workflow's Works, and the `WorksSucceeded` condition it makes.

use crate::api::{condition, Condition, ConditionStatus, Object, WorkStatus};
use crate::controllers::workflow::decide::WorksState;

use crate::controllers::status;

/// What one Work's `Ready` condition says, as far as it counts: conditions only count for the
/// generation they were written for, so a Work that a new run just changed is pending whatever
/// its previous generation said; a Work being deleted (a removed pipeline's) is pending until
/// its files have left the stores.
fn ready_message(work: &Object, going: bool) -> String {
    let s: WorkStatus = status::status_or_default(work);
    if s.observed_generation != work.metadata.generation
        || work.metadata.deletion_timestamp.is_some()
        || going
    {
        return "Pending".to_string();
    }
    match condition::find(&s.conditions, "Ready") {
        Some(c) if c.status == ConditionStatus::True => "Ready".to_string(),
        Some(c) => c.message.clone(),
        None => "Pending".to_string(),
    }
}

/// The aggregate of Works' `Ready` messages, failing before pending before misplaced.
/// Those of `going` (being deleted now) are pending as well.
pub fn works_state_with(works: &[Object], going: &[Object]) -> WorksState {
    if works.is_empty() {
        return WorksState::NoWorks;
    }
    let is_going = |w: &Object| going.iter().any(|g| g.metadata.name == w.metadata.name);
    let messages: Vec<String> = works
        .iter()
        .map(|w| ready_message(w, is_going(w)))
        .collect();
    if messages.iter().any(|m| m == "Failing") {
        WorksState::Failing
    } else if messages.iter().any(|m| m != "Ready" && m != "Misplaced") {
        WorksState::Pending
    } else if messages.iter().any(|m| m == "Misplaced") {
        WorksState::Misplaced
    } else {
        WorksState::Ready
    }
}

pub fn works_succeeded_condition(state: WorksState) -> Condition {
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
    Condition::new("WorksSucceeded", status, reason, message)
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
