//! Pausing: the label `kratix.io/paused: "true"` on a request or on its Promise stops the
//! object's workflows. A pipeline already running finishes; nothing new starts, deletion
//! included, until the label goes. Then the configure workflow runs again from its first
//! pipeline. Conditions and messages are Kratix's:
//! <https://github.com/syntasso/kratix/blob/ae170e22e974e45bb7cfda00986057e01b3ccfde/internal/controller/promise_controller.go>
//! (`setPausedReconciliationStatusConditions`, `resumedFromPause`) and
//! <https://github.com/syntasso/kratix/blob/ae170e22e974e45bb7cfda00986057e01b3ccfde/internal/controller/dynamic_resource_request_controller.go>
//! (`reconcileIfPaused`).
//!
//! With no I/O: what pausing decides; the object's reconcile writes it.

use crate::api::object::label;
use crate::api::{labels, Condition, ConditionStatus, Object};
use crate::controllers::workflow::decide::RECONCILED;

/// The reason of the conditions a pause sets.
pub(crate) use crate::api::words::reasons::PAUSED_RECONCILIATION as PAUSED_REASON;

/// Which label holds the object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PausedBy {
    Itself,
    ItsPromise,
}

/// What the controller does about pausing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Nothing to do with pausing: reconcile as usual.
    Proceed,
    /// Paused: record it and do nothing else.
    Pause(PausedBy),
    /// The pause ended: run the configure workflow again from its first pipeline.
    Resume,
}

/// Decides from the object's label, its Promise's label (for requests) and its `Reconciled`
/// condition (`(status, reason)`), which remembers a pause that has ended.
pub(crate) fn decide(
    own_label: Option<&str>,
    promise_label: Option<&str>,
    reconciled: Option<(&str, &str)>,
) -> Decision {
    if own_label == Some("true") {
        return Decision::Pause(PausedBy::Itself);
    }
    if promise_label == Some("true") {
        return Decision::Pause(PausedBy::ItsPromise);
    }
    match reconciled {
        Some(("Unknown", PAUSED_REASON)) => Decision::Resume,
        _ => Decision::Proceed,
    }
}

/// The decision for `obj`; `promise` is the Promise of a request, `None` for a Promise.
pub(crate) fn decision_for(obj: &Object, promise: Option<&Object>) -> Decision {
    let reconciled = crate::api::condition::get(obj, RECONCILED);
    decide(
        label(obj, labels::PAUSED),
        promise.and_then(|p| label(p, labels::PAUSED)),
        reconciled
            .as_ref()
            .map(|c| (c.status.as_str(), c.reason.as_str())),
    )
}

/// The condition of an object whose pause ended, until its workflow runs again.
pub(crate) fn unpaused_condition() -> Condition {
    Condition::new(
        RECONCILED,
        ConditionStatus::Unknown,
        "Unpaused",
        crate::api::words::phases::PENDING,
    )
}

/// The conditions of a paused object: `Reconciled`, and for a Promise also `Available`.
pub(crate) fn paused_conditions(is_promise: bool) -> Vec<Condition> {
    let mut out = vec![Condition::new(
        RECONCILED,
        ConditionStatus::Unknown,
        PAUSED_REASON,
        "Paused",
    )];
    if is_promise {
        out.push(Condition::new(
            crate::api::words::types::AVAILABLE,
            ConditionStatus::False,
            PAUSED_REASON,
            "Paused",
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions() {
        let paused = Some(("Unknown", PAUSED_REASON));
        let cases = [
            ("no labels", None, None, None, Decision::Proceed),
            (
                "itself",
                Some("true"),
                None,
                None,
                Decision::Pause(PausedBy::Itself),
            ),
            (
                "its Promise",
                None,
                Some("true"),
                None,
                Decision::Pause(PausedBy::ItsPromise),
            ),
            (
                "both",
                Some("true"),
                Some("true"),
                paused,
                Decision::Pause(PausedBy::Itself),
            ),
            (
                "only \"true\" pauses",
                Some("yes"),
                Some("1"),
                None,
                Decision::Proceed,
            ),
            (
                "still paused",
                Some("true"),
                None,
                paused,
                Decision::Pause(PausedBy::Itself),
            ),
            ("label gone", None, None, paused, Decision::Resume),
            ("label false", Some("false"), None, paused, Decision::Resume),
            (
                "reconciled",
                None,
                None,
                Some(("True", "Reconciled")),
                Decision::Proceed,
            ),
            (
                "pending for another reason",
                None,
                None,
                Some(("Unknown", "Unpaused")),
                Decision::Proceed,
            ),
        ];
        for (name, own, promise, reconciled, want) in cases {
            assert_eq!(decide(own, promise, reconciled), want, "{name}");
        }
    }

    #[test]
    fn a_paused_promise_is_unavailable() {
        let types = |c: Vec<Condition>| -> Vec<(String, ConditionStatus, String, String)> {
            c.into_iter()
                .map(|c| (c.type_, c.status, c.reason, c.message))
                .collect()
        };
        let reconciled = (
            "Reconciled".to_string(),
            ConditionStatus::Unknown,
            PAUSED_REASON.to_string(),
            "Paused".to_string(),
        );
        let available = (
            "Available".to_string(),
            ConditionStatus::False,
            PAUSED_REASON.to_string(),
            "Paused".to_string(),
        );
        assert_eq!(types(paused_conditions(false)), vec![reconciled.clone()]);
        assert_eq!(types(paused_conditions(true)), vec![reconciled, available]);
    }
}
