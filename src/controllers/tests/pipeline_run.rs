//! The writes of a PipelineRun's reconcile: a `Pending` run is claimed (`Running`, this
//! executor) by the task the reconcile starts, which records the outcome; a `Running` run whose
//! executor is gone is put back to `Pending`.

use super::*;

fn run(status: serde_json::Value) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "platform.kratix.io/v1alpha1",
        "kind": "PipelineRun",
        "metadata": {"name": "gone-p-1", "namespace": crate::api::SYSTEM_NAMESPACE,
            "labels": {"kratix.io/promise-name": "gone"}},
        "spec": {"sequence": 1, "promiseName": "gone", "pipelineName": "p", "pipelineIndex": 0,
            "workflowType": "promise", "workflowAction": "configure", "hash": "h",
            "pipeline": {}, "last": true},
        "status": status,
    })
}

/// The writes recorded since the last look, as [`writes_of_one_reconcile`] shows them, with the
/// executor (this process, its boot and instance) named rather than spelled out.
fn writes_so_far(rt: &Runtime, recording: &recording::Recording) -> Vec<String> {
    let me = serde_json::to_value(&rt.executor).expect("an executor");
    recording
        .take()
        .into_iter()
        .map(|w| {
            let mut written = w.written;
            if written.get("executor") == Some(&me) {
                written["executor"] = serde_json::json!("this executor");
            }
            without_times(&mut written);
            format!("{} {} {written}", w.verb, w.object)
        })
        .collect()
}

#[tokio::test]
async fn a_pending_run_reconcile_names_its_writes() {
    let (_home, rt, recording) = recorded_runtime();
    let obj: crate::api::Object =
        serde_json::from_value(run(serde_json::json!({"phase": "Pending"}))).expect("a run");
    let stored = rt
        .cp
        .create_with_status(&builtin(crate::api::Builtin::PipelineRun), &obj)
        .await
        .expect("stored");
    let key = ObjectKey::of(&stored);
    recording.take();
    rt.reconcile(&key).await.expect("the reconcile succeeds");
    // The claim and the outcome are the task's, which the reconcile started.
    while rt.is_executing(&key) {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(
        writes_so_far(&rt, &recording),
        [
            // The claim, once a pipeline slot is free.
            r#"update_status PipelineRun kratix-platform-system/gone-p-1 {"executor":"this executor","phase":"Running"}"#,
            // The outcome: its pipeline cannot be read, so it fails before anything runs.
            concat!(
                r#"update_status PipelineRun kratix-platform-system/gone-p-1 {"executor":"this executor","#,
                r#""message":"pipeline run gone-p-1: stored pipeline is invalid: missing field `apiVersion`","phase":"Failed"}"#,
            ),
        ]
    );
}

#[tokio::test]
async fn an_abandoned_run_reconcile_names_its_writes() {
    let (_home, rt, recording) = recorded_runtime();
    let gone = serde_json::json!({"bootId": "a-boot-long-gone", "pid": 1, "processStart": 1,
        "instance": "gone"});
    let obj: crate::api::Object = serde_json::from_value(run(
        serde_json::json!({"phase": "Running", "executor": gone}),
    ))
    .expect("a run");
    let stored = rt
        .cp
        .create_with_status(&builtin(crate::api::Builtin::PipelineRun), &obj)
        .await
        .expect("stored");
    let key = ObjectKey::of(&stored);
    let writes = writes_of_one_reconcile(&rt, &recording, &key).await;
    // Back to `Pending`, the dead executor's claim dropped, to be run again.
    assert_eq!(
        writes,
        [
            r#"update_status PipelineRun kratix-platform-system/gone-p-1 {"message":"interrupted; run again","phase":"Pending"}"#
        ]
    );
}
