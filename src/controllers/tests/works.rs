//! The writes of a Work's reconcile (its finalizer, its WorkPlacements, its status) and of a
//! WorkPlacement's (its finalizer, its files in the state store, its status).

use super::*;

/// The one workload's content, as a Work carries it (gzip, base64).
fn content() -> String {
    crate::api::work::encode_content(b"replicas: 1\n").expect("encoded")
}

/// A Git store on a local bare repository, a Destination on it and a Work of one workload
/// group for it, stored; returns the Work's key.
pub(super) async fn work_world(rt: &Runtime, dir: &std::path::Path) -> ObjectKey {
    let bare = dir.join("store.git");
    testkit::init_bare(&bare).expect("a bare repository");
    store(
        rt,
        crate::api::Builtin::GitStateStore,
        git_store(&bare.display().to_string()),
    )
    .await;
    store(
        rt,
        crate::api::Builtin::Destination,
        serde_json::json!({
            "apiVersion": "platform.kratix.io/v1alpha1",
            "kind": "Destination",
            "metadata": {"name": "worker", "labels": {"env": "dev"}},
            "spec": {"path": "worker", "stateStoreRef": {"kind": "GitStateStore", "name": "default"}},
        }),
    )
    .await;
    store(
        rt,
        crate::api::Builtin::Work,
        serde_json::json!({
            "apiVersion": "platform.kratix.io/v1alpha1",
            "kind": "Work",
            "metadata": {"name": "app-shop-deploy", "namespace": "default", "labels": {
                "kratix.io/promise-name": "app", "kratix.io/resource-name": "shop",
                "kratix.io/pipeline-name": "deploy"}},
            "spec": {"promiseName": "app", "resourceName": "shop", "workloadGroups": [{
                "id": "5058f1af8388633f609cadb75a75dc9d", "directory": ".",
                "workloads": [{"filepath": "app.yaml", "content": content()}]}]},
        }),
    )
    .await
}

#[tokio::test]
async fn a_work_reconcile_names_its_writes() {
    let (home, rt, recording) = recorded_runtime();
    let key = work_world(&rt, home.path()).await;
    let writes = writes_of_one_reconcile(&rt, &recording, &key).await;
    let content = content();
    assert_eq!(
        writes,
        [
            // Its finalizer, so that its WorkPlacements go before it does.
            concat!(
                r#"update Work default/app-shop-deploy {"finalizers":["kratix.io/work-cleanup"],"#,
                r#""labels":{"kratix.io/pipeline-name":"deploy","kratix.io/promise-name":"app","kratix.io/resource-name":"shop"},"#,
                r#""spec":{"promiseName":"app","resourceName":"shop","workloadGroups":[{"directory":".","#,
                r#""id":"5058f1af8388633f609cadb75a75dc9d","workloads":[{"content":"CONTENT","filepath":"app.yaml"}]}]}}"#,
            )
            .replace("CONTENT", &content),
            // Its one placement, on the one Destination. No status yet: the Work reports once
            // its placement is written, which wakes it.
            concat!(
                r#"create_with_status WorkPlacement default/app-shop-deploy.worker-5058f "#,
                r#"{"finalizers":["finalizers.workplacement.kratix.io/repo-cleanup"],"#,
                r#""labels":{"kratix.io/pipeline-name":"deploy","kratix.io/targetDestinationName":"worker","#,
                r#""kratix.io/work":"app-shop-deploy","kratix.io/workload-group-id":"5058f1af8388633f609cadb75a75dc9d"},"#,
                r#""spec":{"generation":1,"id":"5058f1af8388633f609cadb75a75dc9d","promiseName":"app","#,
                r#""resourceName":"shop","targetDestinationName":"worker","#,
                r#""workloads":[{"content":"CONTENT","filepath":"app.yaml"}]}}"#,
            )
            .replace("CONTENT", &content),
        ]
    );
    nothing_more(&rt, &recording, &key).await;
}

#[tokio::test]
async fn a_work_placement_reconcile_names_its_writes() {
    let (home, rt, recording) = recorded_runtime();
    let work = work_world(&rt, home.path()).await;
    rt.reconcile(&work).await.expect("the Work is scheduled");
    let key = ObjectKey::new(
        crate::api::GROUP,
        "WorkPlacement",
        Some("default"),
        "app-shop-deploy.worker-5058f",
    );
    let writes = writes_of_one_reconcile(&rt, &recording, &key).await;
    // The commit written now: named rather than spelled out.
    let stored = rt
        .cp
        .get(
            &builtin(crate::api::Builtin::WorkPlacement),
            Some("default"),
            &key.name,
        )
        .await
        .expect("read")
        .expect("the placement");
    let version = stored.data["status"]["versionID"]
        .as_str()
        .expect("a version")
        .to_string();
    let writes: Vec<String> = writes
        .iter()
        .map(|w| w.replace(&version, "VERSION").replace(&version[..12], "V"))
        .collect();
    assert_eq!(
        writes,
        [
            // Both conditions, its files and the write's summary, in one write (its finalizer
            // came with it from the Work).
            concat!(
                r#"update_status WorkPlacement default/app-shop-deploy.worker-5058f {"conditions":["#,
                r#"{"message":"Workloads written to State Store","reason":"WorkloadsWrittenToStateStore","status":"True","type":"WriteSucceeded"},"#,
                r#"{"message":"Ready","reason":"WorkloadsWrittenToTargetDestination","status":"True","type":"Ready"}],"#,
                r#""files":["worker/resources/default/app/shop/deploy/5058f/app.yaml"],"#,
                r#""lastWrite":{"added":["worker/resources/default/app/shop/deploy/5058f/app.yaml"],"changed":[],"deleted":[],"version":"VERSION"},"#,
                r#""observedGeneration":1,"versionID":"VERSION"}"#,
            ),
            r#"create Event {"message":"written to Destination worker at V: 1 added, 0 changed, 0 deleted","reason":"WorkWritten"}"#,
        ]
    );
    nothing_more(&rt, &recording, &key).await;
}

/// A Destination's change wakes the placements it held back while it was refused a path (its
/// admission changes no Work, so nothing else would), and no other placement of it.
#[tokio::test]
async fn a_destinations_change_wakes_the_placements_its_path_held_back() {
    let (_home, rt, _recording) = recorded_runtime();
    let dest = store(
        &rt,
        crate::api::Builtin::Destination,
        serde_json::json!({
            "apiVersion": "platform.kratix.io/v1alpha1",
            "kind": "Destination",
            "metadata": {"name": "worker"},
            "spec": {"path": "worker", "stateStoreRef": {"kind": "GitStateStore", "name": "default"}},
        }),
    )
    .await;
    let placement = |name: &str, reason: &str, target: &str| {
        let status = if reason.is_empty() {
            serde_json::json!({})
        } else {
            serde_json::json!({"conditions": [
                {"type": "WriteSucceeded", "status": "False", "reason": reason, "message": "m",
                 "lastTransitionTime": "2026-01-01T00:00:00Z"}]})
        };
        serde_json::json!({
            "apiVersion": "platform.kratix.io/v1alpha1",
            "kind": "WorkPlacement",
            "metadata": {"name": name, "namespace": "default",
                         "labels": {"kratix.io/targetDestinationName": target}},
            "spec": {"targetDestinationName": target},
            "status": status,
        })
    };
    for (name, reason, target) in [
        ("held", "PathInUse", "worker"),
        ("pathless", "PathRequired", "worker"),
        ("push-refused", "WorkloadsFailedWrite", "worker"),
        ("never-tried", "", "worker"),
        ("elsewhere", "PathInUse", "other"),
    ] {
        let obj: crate::api::Object =
            serde_json::from_value(placement(name, reason, target)).expect("a placement");
        rt.cp
            .create_with_status(&builtin(crate::api::Builtin::WorkPlacement), &obj)
            .await
            .expect("stored with its status");
    }
    let woken: Vec<String> = rt
        .affected_by(&dest, true, None)
        .await
        .expect("the Destination's dependents")
        .into_iter()
        .filter(|k| k.kind == "WorkPlacement")
        .map(|k| k.name)
        .collect();
    assert_eq!(woken, ["held", "pathless"]);
}
