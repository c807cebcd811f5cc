//! Reading a stored PipelineRun back as the record the workflow decisions work on.

use serde_json::Value;

use crate::api::Object;
use crate::workflow::{RunPhase, RunRecord, Suspension};

use super::kube_time::parse_ms;

/// A run record read back from a stored PipelineRun.
pub fn run_record(run: &Object) -> Option<RunRecord> {
    let spec = run.data.get("spec")?;
    let status = run.data.get("status");
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_string();
    let phase = match status.and_then(|s| s.get("phase")).and_then(Value::as_str) {
        Some("Running") => RunPhase::Running,
        Some("Succeeded") => RunPhase::Succeeded,
        Some("Failed") => RunPhase::Failed,
        _ => RunPhase::Pending,
    };
    let control = status.and_then(|s| s.get("workflowControl"));
    let suspend = control
        .filter(|c| c.get("suspend").and_then(Value::as_bool) == Some(true))
        .map(|c| Suspension {
            retry_after_ms: c.get("retryAfterMs").and_then(Value::as_i64),
            message: text(c.get("message")),
        });
    Some(RunRecord {
        sequence: spec.get("sequence").and_then(Value::as_i64)?,
        pipeline_name: text(spec.get("pipelineName")),
        pipeline_index: usize::try_from(spec.get("pipelineIndex").and_then(Value::as_i64)?).ok()?,
        action: text(spec.get("workflowAction")).parse().ok()?,
        hash: text(spec.get("hash")),
        phase,
        completion_time_ms: status
            .and_then(|s| s.get("completionTime"))
            .and_then(Value::as_str)
            .and_then(parse_ms),
        suspend,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::workflow::Action;

    fn stored(spec: Value, status: Value) -> Object {
        serde_json::from_value(json!({
            "apiVersion": crate::api::API_VERSION, "kind": "PipelineRun",
            "metadata": {"name": "r", "namespace": "default"},
            "spec": spec, "status": status,
        }))
        .expect("valid PipelineRun")
    }

    fn spec(action: &str) -> Value {
        json!({"sequence": 7, "pipelineName": "main", "pipelineIndex": 1,
               "workflowAction": action, "hash": "h"})
    }

    fn record(phase: RunPhase) -> RunRecord {
        RunRecord {
            sequence: 7,
            pipeline_name: "main".into(),
            pipeline_index: 1,
            action: Action::Configure,
            hash: "h".into(),
            phase,
            completion_time_ms: None,
            suspend: None,
        }
    }

    #[test]
    fn records_read_back_what_was_stored() {
        let cases: Vec<(&str, Object, Option<RunRecord>)> = vec![
            (
                "no status yet: pending",
                stored(spec("configure"), json!({})),
                Some(record(RunPhase::Pending)),
            ),
            (
                "unknown phase: pending",
                stored(spec("configure"), json!({"phase": "Odd"})),
                Some(record(RunPhase::Pending)),
            ),
            (
                "running",
                stored(spec("configure"), json!({"phase": "Running"})),
                Some(record(RunPhase::Running)),
            ),
            (
                "failed, with its completion time",
                stored(
                    spec("configure"),
                    json!({"phase": "Failed", "completionTime": "2026-01-01T00:00:00Z"}),
                ),
                Some(RunRecord {
                    completion_time_ms: Some(1_767_225_600_000),
                    ..record(RunPhase::Failed)
                }),
            ),
            (
                "succeeded and suspending",
                stored(
                    spec("delete"),
                    json!({"phase": "Succeeded", "workflowControl":
                        {"suspend": true, "retryAfterMs": 5000, "message": "wait"}}),
                ),
                Some(RunRecord {
                    action: Action::Delete,
                    suspend: Some(Suspension {
                        retry_after_ms: Some(5000),
                        message: "wait".into(),
                    }),
                    ..record(RunPhase::Succeeded)
                }),
            ),
            (
                "control without suspend: not suspended",
                stored(
                    spec("configure"),
                    json!({"phase": "Succeeded", "workflowControl": {"suspend": false}}),
                ),
                Some(record(RunPhase::Succeeded)),
            ),
            (
                "unknown action: not a record",
                stored(spec("explode"), json!({})),
                None,
            ),
            (
                "no sequence: not a record",
                stored(
                    json!({"pipelineName": "main", "pipelineIndex": 1, "workflowAction": "configure"}),
                    json!({}),
                ),
                None,
            ),
            (
                "negative index: not a record",
                stored(
                    json!({"sequence": 7, "pipelineName": "main", "pipelineIndex": -1, "workflowAction": "configure"}),
                    json!({}),
                ),
                None,
            ),
        ];
        for (name, run, want) in cases {
            assert_eq!(run_record(&run), want, "{name}");
        }
    }
}
