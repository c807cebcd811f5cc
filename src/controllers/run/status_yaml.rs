//! Whether a pipeline's `status.yaml` fits the status of the object it is merged into. A
//! Promise's status is typed (`message` is text, `observedGeneration` a number, …): a field
//! that does not fit would make the Promise unreadable, so the run fails instead, naming the
//! file and each field. A request's status is the pipelines' own, beside `conditions` and
//! `kratix` (refused when the metadata is read).

use serde_json::Value;

use crate::api::{PromiseStatus, WorkflowType};
use crate::pipeline::metadata::STATUS_FILE;

/// Why `status_yaml` cannot be merged into the status of a `workflow_type` workflow's object;
/// `None` when it fits.
pub(crate) fn refusal(workflow_type: WorkflowType, status_yaml: &Value) -> Option<String> {
    if workflow_type != WorkflowType::Promise {
        return None;
    }
    let fields = status_yaml.as_object()?;
    let misfits: Vec<String> = fields
        .iter()
        .filter_map(|(field, value)| {
            let alone = Value::Object([(field.clone(), value.clone())].into_iter().collect());
            serde_json::from_value::<PromiseStatus>(alone)
                .err()
                .map(|e| format!("field {field}: {e}"))
        })
        .collect();
    (!misfits.is_empty()).then(|| {
        format!(
            "metadata/{STATUS_FILE} does not fit a Promise's status: {}",
            misfits.join("; ")
        )
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_promise_status_yaml_must_fit_a_promise_status() {
        let cases = [
            ("pipeline's own fields", WorkflowType::Promise, json!({"ready": 3, "url": "x"}), None),
            ("typed fields that fit", WorkflowType::Promise, json!({"message": "ok", "observedGeneration": 2}), None),
            (
                "a number for a text",
                WorkflowType::Promise,
                json!({"message": 3}),
                Some("metadata/status.yaml does not fit a Promise's status: field message: invalid type: integer `3`, expected a string"),
            ),
            (
                "each misfit is named",
                WorkflowType::Promise,
                json!({"message": 3, "observedGeneration": "nope", "fine": true}),
                Some("metadata/status.yaml does not fit a Promise's status: field message: invalid type: integer `3`, expected a string; field observedGeneration: invalid type: string \"nope\", expected i64"),
            ),
            (
                "conditions are typed too",
                WorkflowType::Promise,
                json!({"conditions": "all good"}),
                Some("metadata/status.yaml does not fit a Promise's status: field conditions: invalid type: string \"all good\", expected a sequence"),
            ),
            ("a request's status is the pipelines'", WorkflowType::Resource, json!({"message": 3}), None),
        ];
        for (name, workflow_type, status_yaml, want) in cases {
            assert_eq!(
                refusal(workflow_type, &status_yaml).as_deref(),
                want,
                "{name}"
            );
        }
    }
}
