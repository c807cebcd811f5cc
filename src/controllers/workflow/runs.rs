//! A workflow's runs: reading a stored PipelineRun back as the record the workflow decisions work
//! on, listing an object's runs, and deleting them when the object goes.

use crate::api::{Object, ObjectKey, PipelineRunSpec, PipelineRunStatus};
use crate::controllers::workflow::decide::RunPhase;
use crate::controllers::workflow::decide::RunRecord;
use crate::controllers::workflow::decide::Suspension;
use crate::platform::builtin;

use serde::Deserialize;

use crate::controllers::kube_time::parse_ms;
use crate::controllers::subject::Subject;
use crate::controllers::{status, Error, Runtime};
use crate::store::Selector;

/// A run record read back from a stored PipelineRun; `None` when its spec does not parse. A
/// status this version cannot read (an unknown phase) counts as not started.
pub(crate) fn run_record(run: &Object) -> Option<RunRecord> {
    let spec = PipelineRunSpec::deserialize(run.data.get("spec")?).ok()?;
    let status: PipelineRunStatus =
        crate::controllers::status::typed_status(run).unwrap_or_default();
    let phase = RunPhase::from(status.phase);
    // A pending run's message says why it is pending again, not what it is doing.
    let progress = (phase == RunPhase::Running)
        .then(|| status.message.clone())
        .flatten();
    let suspend = status
        .workflow_control
        .filter(|c| c.suspend)
        .map(|c| Suspension {
            retry_after_ms: c.retry_after_ms,
            message: c.message,
        });
    Some(RunRecord {
        sequence: spec.sequence,
        pipeline_name: spec.pipeline_name,
        pipeline_index: usize::try_from(spec.pipeline_index).ok()?,
        action: spec.workflow_action,
        hash: spec.hash,
        phase,
        completion_time_ms: status.completion_time.as_deref().and_then(parse_ms),
        suspend,
        progress,
        attempt: spec.attempt,
    })
}

/// Every stored run of the subject's workflow type, with its record.
pub(crate) async fn runs_of(
    rt: &Runtime,
    subject: &Subject,
) -> Result<Vec<(Object, RunRecord)>, Error> {
    let sel_labels = subject.selector_labels();
    let selector = Selector::from_labels(sel_labels.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let runs = rt
        .cp
        .list(
            &builtin(crate::api::Builtin::PipelineRun),
            Some(&subject.run_namespace()),
            &selector,
        )
        .await?;
    Ok(runs
        .into_iter()
        .filter_map(|r| run_record(&r).map(|rec| (r, rec)))
        .collect())
}

/// Deletes the run records (and their folders) of a Promise or request that is going away.
pub(crate) async fn delete_runs(rt: &Runtime, subject: &Subject) -> Result<(), Error> {
    let kind = builtin(crate::api::Builtin::PipelineRun);
    for (run, _) in runs_of(rt, subject).await? {
        crate::controllers::run::folder::remove(rt.platform.run_dir(&run), &ObjectKey::of(&run))
            .await;
        status::delete_if_present(rt.cp.as_ref(), &kind, &run).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::api::Action;

    fn stored(spec: Value, status: Value) -> Object {
        serde_json::from_value(json!({
            "apiVersion": crate::api::API_VERSION, "kind": "PipelineRun",
            "metadata": {"name": "r", "namespace": "default"},
            "spec": spec, "status": status,
        }))
        .expect("valid PipelineRun")
    }

    fn spec(action: &str) -> Value {
        json!({"sequence": 7, "promiseName": "p", "pipelineName": "main", "pipelineIndex": 1,
               "workflowType": "promise", "workflowAction": action, "hash": "h", "pipeline": {}})
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
            progress: None,
            attempt: 0,
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
                "running, saying what it does",
                stored(
                    spec("configure"),
                    json!({"phase": "Running", "message": "pulling image x:1"}),
                ),
                Some(RunRecord {
                    progress: Some("pulling image x:1".into()),
                    ..record(RunPhase::Running)
                }),
            ),
            (
                "pending again: its message is no progress",
                stored(
                    spec("configure"),
                    json!({"phase": "Pending", "message": "interrupted; run again"}),
                ),
                Some(record(RunPhase::Pending)),
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
                "a retry, numbered",
                stored(
                    {
                        let mut spec = spec("configure");
                        spec["attempt"] = json!(3);
                        spec
                    },
                    json!({"phase": "Pending"}),
                ),
                Some(RunRecord {
                    attempt: 3,
                    ..record(RunPhase::Pending)
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
                    json!({"promiseName": "p", "pipelineName": "main", "pipelineIndex": 1,
                           "workflowType": "promise", "workflowAction": "configure", "hash": "h",
                           "pipeline": {}}),
                    json!({}),
                ),
                None,
            ),
            (
                "negative index: not a record",
                stored(
                    json!({"sequence": 7, "promiseName": "p", "pipelineName": "main", "pipelineIndex": -1,
                           "workflowType": "promise", "workflowAction": "configure", "hash": "h",
                           "pipeline": {}}),
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
