//! A pipeline's `status.yaml` carried over into its object's status, with no I/O. The run
//! records the file on itself when it succeeds (checked to fit when it ended); the object's own
//! reconcile merges it into the object's status in its status write, as Kratix's status writer
//! merges it: top-level keys replaced, `conditions` merged by type. The status remembers the
//! newest run it carries (`status.kratix.statusYamlRun`, the run's stored sequence), so that each
//! run's file is merged once, in the order the runs were made; a run that ends after a newer
//! one was carried over is passed over.

use serde_json::{json, Value};

use crate::api::Object;
use crate::controllers::status_value as status;

/// Where a status remembers the newest run whose `status.yaml` it carries.
const CARRIED: &str = "statusYamlRun";

/// The `status.yaml` a stored run recorded, if any.
pub(crate) fn recorded(run: &Object) -> Option<&Value> {
    run.data
        .pointer("/status/statusYaml")
        .filter(|v| v.is_object())
}

/// The `status.yaml` files an object's status is to carry, by their runs' sequence.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct CarryOver<'a> {
    files: Vec<(i64, &'a Value)>,
}

impl<'a> CarryOver<'a> {
    /// From the object's runs: each run's sequence and the `status.yaml` it recorded.
    pub(crate) fn of(runs: impl IntoIterator<Item = (i64, Option<&'a Value>)>) -> Self {
        let mut files: Vec<(i64, &Value)> = runs
            .into_iter()
            .filter_map(|(sequence, file)| Some((sequence, file?)))
            .collect();
        files.sort_by_key(|(sequence, _)| *sequence);
        Self { files }
    }

    /// Merges into `status` the files of runs newer than the one it last carried, oldest first,
    /// and remembers the newest.
    pub(crate) fn apply(&self, s: &mut Value) {
        let since = s
            .pointer(&format!("/kratix/{CARRIED}"))
            .and_then(Value::as_i64);
        let mut newest = None;
        for (sequence, file) in &self.files {
            if since.is_some_and(|since| *sequence <= since) {
                continue;
            }
            merge(s, file);
            newest = Some(*sequence);
        }
        if let Some(newest) = newest {
            if let Some(kratix) = status::object_at(s, "kratix") {
                kratix.insert(CARRIED.into(), json!(newest));
            }
        }
    }
}

/// Merges one `status.yaml` into a status: top-level keys replaced, `conditions` merged by type
/// (a list that is not conditions is left out).
fn merge(s: &mut Value, file: &Value) {
    let Some(fields) = file.as_object() else {
        return;
    };
    for (k, v) in fields {
        if k == "conditions" {
            if let Ok(conditions) = serde_json::from_value::<Vec<crate::api::Condition>>(v.clone())
            {
                status::set_conditions(s, conditions);
            }
        } else {
            status::set_field(s, k, v.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_run_is_carried_over_once_in_the_order_runs_were_made() {
        let first = json!({"ready": false, "url": "a"});
        let second = json!({"ready": true});
        let conditions = json!({"conditions": [{"type": "Db", "status": "True", "reason": "Up",
            "message": "up", "lastTransitionTime": "2026-01-01T00:00:00Z"}]});
        // (case, each run's sequence and file, the status before, after)
        type Case<'a> = (&'a str, Vec<(i64, Option<&'a Value>)>, Value, Value);
        let cases: Vec<Case> = vec![
            (
                "no run wrote one",
                vec![(3, None)],
                json!({"m": 1}),
                json!({"m": 1}),
            ),
            (
                "merged, and the run remembered",
                vec![(3, Some(&first))],
                json!({"m": 1}),
                json!({"m": 1, "ready": false, "url": "a", "kratix": {"statusYamlRun": 3}}),
            ),
            (
                "oldest first, whatever the order they were read in",
                vec![(7, Some(&second)), (3, Some(&first)), (5, None)],
                json!({}),
                json!({"ready": true, "url": "a", "kratix": {"statusYamlRun": 7}}),
            ),
            (
                "a run carried already is not merged again",
                vec![(3, Some(&first)), (7, Some(&second))],
                json!({"ready": "changed since", "kratix": {"statusYamlRun": 3, "workflows": {}}}),
                json!({"ready": true, "kratix": {"statusYamlRun": 7, "workflows": {}}}),
            ),
            (
                "nothing newer: left as it is",
                vec![(3, Some(&first))],
                json!({"ready": "changed since", "kratix": {"statusYamlRun": 3}}),
                json!({"ready": "changed since", "kratix": {"statusYamlRun": 3}}),
            ),
            (
                "a run that ended after a newer one was carried is passed over",
                vec![(3, Some(&first))],
                json!({"kratix": {"statusYamlRun": 4}}),
                json!({"kratix": {"statusYamlRun": 4}}),
            ),
        ];
        for (name, runs, mut status, want) in cases {
            CarryOver::of(runs).apply(&mut status);
            assert_eq!(status, want, "{name}");
        }
        let mut status = json!({"conditions": [{"type": "Reconciled", "status": "True",
            "reason": "r", "message": "m", "lastTransitionTime": "2026-01-01T00:00:00Z"}]});
        CarryOver::of([(1, Some(&conditions))]).apply(&mut status);
        let types: Vec<&str> = status["conditions"]
            .as_array()
            .map(|c| c.iter().filter_map(|c| c["type"].as_str()).collect())
            .unwrap_or_default();
        assert_eq!(types, ["Reconciled", "Db"], "conditions merged by type");
    }

    #[test]
    fn only_a_mapping_recorded_on_a_run_is_a_status_yaml() {
        let run = |status: Value| -> Object {
            serde_json::from_value(json!({"apiVersion": "platform.kratix.io/v1alpha1",
                "kind": "PipelineRun", "metadata": {"name": "r"}, "status": status}))
            .expect("a run")
        };
        let cases = [
            (
                json!({"phase": "Succeeded", "statusYaml": {"a": 1}}),
                Some(json!({"a": 1})),
            ),
            (json!({"phase": "Succeeded"}), None),
            (json!({"phase": "Succeeded", "statusYaml": [1]}), None),
        ];
        for (status, want) in cases {
            assert_eq!(recorded(&run(status.clone())).cloned(), want, "{status}");
        }
    }
}
