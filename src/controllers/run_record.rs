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
