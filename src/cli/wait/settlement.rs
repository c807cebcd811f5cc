//! Whether an object has settled, read from its stored status alone: the pure half of waiting
//! (the other half drives the controllers and reads the store until this says so).

use serde_json::Value;

use crate::api::words::{reasons, types};
use crate::api::{condition, Condition, ConditionStatus, KindInfo, Object, GROUP};

/// Where an object stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Settlement {
    Settled,
    Pending(String),
    Failed(String),
}

/// The status of a condition that may be absent.
fn status_of(c: Option<&Condition>) -> Option<ConditionStatus> {
    c.map(|c| c.status)
}

/// The reason and message of a condition that may be absent, empty when it is.
fn said(c: Option<&Condition>) -> (&str, &str) {
    c.map_or(("", ""), |c| (c.reason.as_str(), c.message.as_str()))
}

/// Has the controller looked at the object's current generation?
pub(crate) fn observed_current_generation(obj: &Object) -> bool {
    let observed = obj
        .data
        .pointer("/status/observedGeneration")
        .and_then(Value::as_i64);
    observed.is_some() && observed == obj.metadata.generation
}

/// Whether an applied object has settled: workflows finished and works written for Promises and
/// requests; Ready for Destinations and state stores; at once for everything else.
pub(crate) fn settlement(kind: &KindInfo, obj: &Object) -> Settlement {
    if obj.metadata.deletion_timestamp.is_some() {
        return Settlement::Pending("being deleted".into());
    }
    let is_request = kind.group != GROUP && !kind.group.is_empty();
    let kratix_kind = kind.group == GROUP;
    match kind.kind.as_str() {
        "Promise" if kratix_kind => workflow_settlement(obj),
        "Destination" | "GitStateStore" | "BucketStateStore" if kratix_kind => {
            let ready = condition::get(obj, types::READY);
            if !observed_current_generation(obj) {
                return Settlement::Pending("not reconciled yet".into());
            }
            if let Some(ConditionStatus::True) = status_of(ready.as_ref()) {
                Settlement::Settled
            } else {
                let (reason, message) = said(ready.as_ref());
                Settlement::Pending(format!("Ready: {reason} {message}"))
            }
        }
        "PromiseRelease" if kratix_kind => {
            if !observed_current_generation(obj) {
                return Settlement::Pending("not reconciled yet".into());
            }
            let installed = condition::get(obj, types::INSTALLED);
            match status_of(installed.as_ref()) {
                Some(ConditionStatus::True) => Settlement::Settled,
                Some(ConditionStatus::False) => {
                    let (reason, message) = said(installed.as_ref());
                    Settlement::Failed(format!("{reason}: {message}"))
                }
                _ => Settlement::Pending("not installed yet".into()),
            }
        }
        _ if is_request => workflow_settlement(obj),
        _ => Settlement::Settled,
    }
}

/// Whether the object says it is paused (`Reconciled` of the pause's reason).
pub(super) fn says_paused(obj: &Object) -> bool {
    condition::get(obj, types::RECONCILED)
        .is_some_and(|c| c.reason == reasons::PAUSED_RECONCILIATION)
}

/// Whether `obj` carries `kratix.io/paused: "true"`.
pub(super) fn labelled_paused(obj: &Object) -> bool {
    crate::api::object::label(obj, crate::api::labels::PAUSED) == Some("true")
}

fn workflow_settlement(obj: &Object) -> Settlement {
    // Paused by its own label: nothing runs until the label goes, so there is nothing to wait
    // for, whatever generation its status was written for (a paused object does not claim to
    // have seen a spec changed while paused); `apply` keeps a pause the file does not lift.
    if labelled_paused(obj) && says_paused(obj) {
        return Settlement::Settled;
    }
    if !observed_current_generation(obj) {
        return Settlement::Pending("not reconciled yet".into());
    }
    // The controller clears the label when it starts the re-run; until then the conditions
    // describe the previous run.
    if crate::api::object::label(obj, crate::api::labels::MANUAL_RECONCILIATION) == Some("true") {
        return Settlement::Pending("manual reconciliation requested".into());
    }
    let conditions = condition::of(obj);
    let find = |type_| condition::find(&conditions, type_);
    if let Some(failed) = find(types::CONFIGURE_WORKFLOW_COMPLETED).filter(|c| {
        c.status == ConditionStatus::False && c.reason == reasons::CONFIGURE_WORKFLOW_FAILED
    }) {
        return Settlement::Failed(failed.message.clone());
    }
    // A Promise waiting for its required Promises says which condition holds it.
    let requirements = find(types::REQUIREMENTS_FULFILLED);
    if status_of(requirements) == Some(ConditionStatus::False) {
        let (reason, message) = said(requirements);
        return Settlement::Pending(format!(
            "{}: {message} ({reason})",
            types::REQUIREMENTS_FULFILLED
        ));
    }
    let reconciled = find(types::RECONCILED);
    // Paused by its Promise's label, seen for its current generation.
    if says_paused(obj) {
        return Settlement::Settled;
    }
    if let Some(ConditionStatus::True) = status_of(reconciled) {
        Settlement::Settled
    } else {
        let works = find(types::WORKS_SUCCEEDED);
        let mut reason = format!("{}: {}", types::RECONCILED, said(reconciled).1);
        if status_of(works) == Some(ConditionStatus::False) {
            reason = format!("{}: {}", types::WORKS_SUCCEEDED, said(works).1);
        }
        Settlement::Pending(reason)
    }
}

/// A request's settlement given the Promise generation its status was written for (`observed`)
/// and the Promise's current one: a status written for an older Promise says nothing yet,
/// whether it reads settled or failed.
pub(super) fn for_promise_generation(
    settled: Settlement,
    observed: Option<i64>,
    current: Option<i64>,
    promise_name: &str,
) -> Settlement {
    match current {
        Some(current) if observed != Some(current) => Settlement::Pending(format!(
            "not reconciled yet for the latest change of Promise {promise_name}"
        )),
        _ => settled,
    }
}
/// `--for condition=TYPE[=STATUS]`: has the condition that status for the current generation?
pub(crate) fn condition_met(obj: &Object, type_: &str, status: &str) -> bool {
    observed_current_generation(obj)
        && condition::get(obj, type_)
            .is_some_and(|c| c.status.as_str().eq_ignore_ascii_case(status))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::test_objects::{redis as request, redis_kind as request_kind};
    use serde_json::json;

    #[test]
    fn a_request_status_counts_only_for_the_current_promise_generation() {
        let failed = || Settlement::Failed("b".into());
        let cases = [
            (
                "settled, same generation",
                Settlement::Settled,
                Some(2),
                Some(2),
                "settled",
            ),
            (
                "settled, older generation",
                Settlement::Settled,
                Some(1),
                Some(2),
                "pending",
            ),
            (
                "failed, same generation",
                failed(),
                Some(2),
                Some(2),
                "failed",
            ),
            (
                "failed, older generation",
                failed(),
                Some(1),
                Some(2),
                "pending",
            ),
            ("failed, never observed", failed(), None, Some(2), "pending"),
            ("Promise gone", failed(), Some(1), None, "failed"),
        ];
        for (name, settled, observed, current, want) in cases {
            let got = match for_promise_generation(settled, observed, current, "p") {
                Settlement::Settled => "settled",
                Settlement::Pending(_) => "pending",
                Settlement::Failed(_) => "failed",
            };
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn settlement_follows_conditions_of_the_current_generation() {
        let cases = [
            ("no status", json!({}), 1, "pending"),
            (
                "reconciled for an older generation",
                json!({"observedGeneration": 1, "conditions": [{"type": "Reconciled", "status": "True"}]}),
                2,
                "pending",
            ),
            (
                "reconciled",
                json!({"observedGeneration": 2, "conditions": [{"type": "Reconciled", "status": "True"}]}),
                2,
                "settled",
            ),
            (
                "paused, the new generation seen",
                json!({"observedGeneration": 2, "conditions": [
                    {"type": "Reconciled", "status": "Unknown", "reason": "PausedReconciliation", "message": "Paused"}]}),
                2,
                "settled",
            ),
            (
                "paused, the new generation not seen yet",
                json!({"observedGeneration": 1, "conditions": [
                    {"type": "Reconciled", "status": "Unknown", "reason": "PausedReconciliation", "message": "Paused"}]}),
                2,
                "pending",
            ),
            (
                "pipeline failed",
                json!({"observedGeneration": 2, "conditions": [
                    {"type": "ConfigureWorkflowCompleted", "status": "False", "reason": "ConfigureWorkflowFailed", "message": "A Configure Pipeline has failed: b"}]}),
                2,
                "failed",
            ),
        ];
        for (name, status, generation, want) in cases {
            let got = match settlement(&request_kind(), &request(generation, status)) {
                Settlement::Settled => "settled",
                Settlement::Pending(_) => "pending",
                Settlement::Failed(_) => "failed",
            };
            assert_eq!(got, want, "{name}");
        }
    }

    /// A paused object keeps the generation it last acted on: held by its own label it has
    /// settled whatever generation its status was written for; once the label goes, the
    /// condition the pause left says nothing until the controller has looked again.
    #[test]
    fn an_object_paused_by_its_own_label_has_settled_at_any_generation() {
        let paused = json!({"observedGeneration": 1, "conditions": [
            {"type": "Reconciled", "status": "Unknown", "reason": "PausedReconciliation", "message": "Paused"}]});
        let cases = [
            (Some("true"), paused.clone(), "settled"),
            (None, paused.clone(), "pending"),
            (Some("false"), paused, "pending"),
            (
                Some("true"),
                json!({"observedGeneration": 1, "conditions": [{"type": "Reconciled", "status": "True"}]}),
                "pending",
            ),
        ];
        for (label, status, want) in cases {
            let mut obj = request(2, status);
            if let Some(value) = label {
                obj.metadata.labels = Some(
                    [(crate::api::labels::PAUSED.to_string(), value.to_string())]
                        .into_iter()
                        .collect(),
                );
            }
            let got = match settlement(&request_kind(), &obj) {
                Settlement::Settled => "settled",
                Settlement::Pending(_) => "pending",
                Settlement::Failed(_) => "failed",
            };
            assert_eq!(got, want, "{label:?} {:#}", obj.data);
        }
    }
}
