//! The Promise status fields beside its conditions, as Kratix fills them
//! (<https://github.com/syntasso/kratix/blob/ae170e22e974e45bb7cfda00986057e01b3ccfde/internal/controller/promise_controller.go>):
//! `requiredBy` (`markRequiredPromiseAsRequired`), `lastAvailableTime`
//! (`setPromiseStatusToAvailable`), the workflow counters (`generateWorkflowsCounterStatus`),
//! the `Available` condition and `status.kratix`, which repeats the top-level fields Kratix
//! owns. Pure functions; the Promise controller writes what they return.

use serde_json::{json, Map, Value};

use crate::api::promise::{PromiseVersionRef, RequiredBy};
use crate::api::words::types;
use crate::api::{labels, Condition, ConditionStatus, Object, Promise};
use crate::controllers::workflow::decide::Step;

/// The version a Promise records in `status.version`: its `kratix.io/promise-version` label,
/// else Kratix's `not-set`.
pub(crate) fn version_of(promise: &Object) -> String {
    crate::api::object::label(promise, labels::PROMISE_VERSION)
        .unwrap_or("not-set")
        .to_string()
}

/// `status.requiredBy` of the Promise `name`: every other Promise whose `spec.requiredPromises`
/// names it, with that Promise's version and the version it asks for, sorted by name. Kratix
/// adds an entry when the requiring Promise checks its requirements and never takes one away;
/// here the list is what the Promises require now, so a Promise deleted or no longer requiring
/// it drops out.
pub(crate) fn required_by(name: &str, promises: &[(Object, Promise)]) -> Vec<RequiredBy> {
    let mut out: Vec<RequiredBy> = promises
        .iter()
        .filter(|(obj, _)| obj.metadata.name.as_deref() != Some(name))
        .filter_map(|(obj, typed)| {
            let wanted = typed
                .spec
                .required_promises
                .iter()
                .find(|r| r.name == name)?;
            Some(RequiredBy {
                promise: PromiseVersionRef {
                    name: obj.metadata.name.clone().unwrap_or_default(),
                    version: version_of(obj),
                },
                required_version: wanted.version.clone(),
            })
        })
        .collect();
    out.sort_by(|a, b| a.promise.name.cmp(&b.promise.name));
    out
}

/// `status.lastAvailableTime`: `now` when the Promise becomes available (or is available without
/// one, as after an upgrade), otherwise what it was: it keeps the last time the Promise became
/// available while it is unavailable.
pub(crate) fn last_available_time(
    before: Option<&str>,
    was_available: bool,
    available: bool,
    now: &str,
) -> Option<String> {
    if available && (!was_available || before.is_none()) {
        return Some(now.to_string());
    }
    before.map(str::to_string)
}

/// `status.workflows`, `workflowsSucceeded`, `workflowsFailed`: the number of promise configure
/// pipelines, all of them succeeded once the workflow completed (else none). As in Kratix, which
/// deprecates these counters, `workflowsFailed` stays 0: a failure shows in the conditions and
/// in `status.pipelines`.
pub(crate) fn workflow_counters(pipelines: usize, completed: bool) -> (i64, i64, i64) {
    let total = i64::try_from(pipelines).unwrap_or(i64::MAX);
    (total, if completed { total } else { 0 }, 0)
}

/// The values `status.kratix` repeats from the top level of a Promise's status.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Summary {
    /// `Available` or `Unavailable`.
    pub(crate) status: &'static str,
    pub(crate) version: String,
    /// The request kind and its lower-case `group/version`, for a Promise with an API.
    pub(crate) api: Option<(String, String)>,
    pub(crate) last_available_time: Option<String>,
}

/// Sets `field` to a list, or removes it when the list is empty.
pub(crate) fn set_list(status: &mut Value, field: &str, list: &Value) {
    let Some(map) = status.as_object_mut() else {
        return;
    };
    match list {
        Value::Array(items) if items.is_empty() => {
            map.remove(field);
        }
        _ => {
            map.insert(field.to_string(), list.clone());
        }
    }
}

/// Writes the summary into `status.kratix`, keeping whatever else is there (its `workflows`
/// are each workflow's own, keyed by action).
pub(crate) fn set_kratix(status: &mut Value, summary: &Summary) {
    let Some(kratix) = crate::controllers::status_value::object_at(status, "kratix") else {
        return;
    };
    kratix.insert("status".into(), json!(summary.status));
    kratix.insert("version".into(), json!(summary.version));
    if let Some((kind, api_version)) = &summary.api {
        kratix.insert("kind".into(), json!(kind));
        kratix.insert("apiVersion".into(), json!(api_version));
    }
    set_or_remove(
        kratix,
        "lastAvailableTime",
        summary.last_available_time.as_ref().map(|at| json!(at)),
    );
}

fn set_or_remove(map: &mut Map<String, Value>, field: &str, value: Option<Value>) {
    match value {
        Some(value) => map.insert(field.to_string(), value),
        None => map.remove(field),
    };
}

/// `Available` once the promise configure workflow has nothing left to run; while a pipeline
/// suspends it, Kratix's `WorkflowSuspended`
/// (<https://github.com/syntasso/kratix/blob/ae170e22e974e45bb7cfda00986057e01b3ccfde/internal/controller/promise_controller.go>,
/// `reconcileSuspendedWorkflow`).
pub(crate) fn available_condition(step: &Step) -> Condition {
    match step {
        Step::Completed { .. } | Step::NothingToRun => Condition::new(
            types::AVAILABLE,
            ConditionStatus::True,
            "PromiseAvailable",
            "Ready to fulfil resource requests",
        ),
        Step::Suspended { .. } => Condition::new(
            types::AVAILABLE,
            ConditionStatus::False,
            "WorkflowSuspended",
            "Suspended",
        ),
        _ => Condition::new(
            types::AVAILABLE,
            ConditionStatus::False,
            "PromiseUnavailable",
            "Promise configure workflow has not completed",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn promise(name: &str, version: Option<&str>, requires: &[(&str, &str)]) -> (Object, Promise) {
        let mut data = json!({
            "apiVersion": "platform.kratix.io/v1alpha1",
            "kind": "Promise",
            "metadata": {"name": name},
            "spec": {"requiredPromises": requires
                .iter()
                .map(|(n, v)| json!({"name": n, "version": v}))
                .collect::<Vec<_>>()},
        });
        if let Some(v) = version {
            data["metadata"]["labels"] = json!({"kratix.io/promise-version": v});
        }
        let obj: Object = serde_json::from_value(data).expect("an object");
        let typed: Promise = crate::api::object::to_typed(&obj).expect("a Promise");
        (obj, typed)
    }

    fn entry(name: &str, version: &str, required: &str) -> RequiredBy {
        RequiredBy {
            promise: PromiseVersionRef {
                name: name.into(),
                version: version.into(),
            },
            required_version: required.into(),
        }
    }

    #[test]
    fn required_by_lists_the_promises_that_require_it() {
        let all = vec![
            promise("db", Some("v1"), &[]),
            promise("webapp", Some("v2"), &[("db", "v1"), ("cache", "")]),
            promise("app", None, &[("db", "")]),
            promise("cache", None, &[]),
            promise("self", None, &[("self", "")]),
        ];
        let cases = [
            (
                "db",
                vec![entry("app", "not-set", ""), entry("webapp", "v2", "v1")],
            ),
            ("cache", vec![entry("webapp", "v2", "")]),
            ("webapp", vec![]),
            ("self", vec![]),
            ("missing", vec![]),
        ];
        for (name, want) in cases {
            assert_eq!(required_by(name, &all), want, "{name}");
        }
    }

    #[test]
    fn last_available_time_moves_when_the_promise_becomes_available() {
        let cases = [
            // (before, was available, available, want)
            (None, false, true, Some("now")),
            (Some("then"), false, true, Some("now")),
            (Some("then"), true, true, Some("then")),
            (Some("then"), true, false, Some("then")),
            (Some("then"), false, false, Some("then")),
            (None, false, false, None),
            // Available before the field existed: it gets one.
            (None, true, true, Some("now")),
        ];
        for (before, was, now_available, want) in cases {
            assert_eq!(
                last_available_time(before, was, now_available, "now").as_deref(),
                want,
                "{before:?} {was} {now_available}"
            );
        }
    }

    #[test]
    fn counters_say_how_many_pipelines_succeeded() {
        let cases = [
            ((0, false), (0, 0, 0)),
            ((0, true), (0, 0, 0)),
            ((3, false), (3, 0, 0)),
            ((3, true), (3, 3, 0)),
        ];
        for ((pipelines, completed), want) in cases {
            assert_eq!(
                workflow_counters(pipelines, completed),
                want,
                "{pipelines} {completed}"
            );
        }
    }

    #[test]
    fn kratix_repeats_the_top_level_and_keeps_the_rest() {
        let summary = Summary {
            status: "Available",
            version: "v1".into(),
            api: Some(("Thing".into(), "test.kratix.io/v1alpha1".into())),
            last_available_time: Some("2026-01-01T00:00:00Z".into()),
        };
        let workflows =
            json!({"configure": {"pipelines": [{"name": "setup", "phase": "Succeeded"}]}});
        let mut status = json!({"kratix": {"other": 1, "workflows": workflows}});
        set_kratix(&mut status, &summary);
        assert_eq!(
            status,
            json!({"kratix": {
                "other": 1,
                "status": "Available",
                "version": "v1",
                "kind": "Thing",
                "apiVersion": "test.kratix.io/v1alpha1",
                "lastAvailableTime": "2026-01-01T00:00:00Z",
                "workflows": workflows,
            }})
        );

        let waiting = Summary {
            status: "Unavailable",
            api: None,
            last_available_time: None,
            ..summary
        };
        set_kratix(&mut status, &waiting);
        assert_eq!(status["kratix"]["status"], "Unavailable");
        assert_eq!(status["kratix"]["kind"], "Thing", "kept without an API");
        assert!(status["kratix"].get("lastAvailableTime").is_none());
        assert_eq!(
            status["kratix"]["workflows"], workflows,
            "left to the workflows"
        );

        let mut odd = json!({"kratix": "not an object"});
        set_kratix(&mut odd, &waiting);
        assert_eq!(odd["kratix"]["status"], "Unavailable");
    }

    #[test]
    fn available_once_configured() {
        let cases = [
            (
                Step::Completed {
                    last_run_sequence: 1,
                },
                ConditionStatus::True,
                "PromiseAvailable",
            ),
            (
                Step::NothingToRun,
                ConditionStatus::True,
                "PromiseAvailable",
            ),
            (Step::Wait, ConditionStatus::False, "PromiseUnavailable"),
            (
                Step::Failed {
                    index: 0,
                    pipeline: "p".into(),
                    attempts: 1,
                    retry_at_ms: None,
                },
                ConditionStatus::False,
                "PromiseUnavailable",
            ),
            (
                Step::Suspended {
                    index: 0,
                    retry_at_ms: None,
                    message: "approve".into(),
                },
                ConditionStatus::False,
                "WorkflowSuspended",
            ),
        ];
        for (step, status, reason) in cases {
            let c = available_condition(&step);
            assert_eq!(c.type_, "Available");
            assert_eq!((c.status, c.reason.as_str()), (status, reason), "{step:?}");
        }
    }
}
