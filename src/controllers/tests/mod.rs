use super::*;
use crate::metrics::ErrorCategory;
use crate::platform::builtin;

mod pipeline_run;
mod platform_destination;
mod state_stores;
mod versions;
mod works;

#[test]
fn each_failure_falls_in_one_bounded_category() {
    let key = ObjectKey::new(crate::api::GROUP, "Promise", None, "p");
    let json = || serde_json::from_str::<serde_json::Value>("{").expect_err("not JSON");
    let cases = [
        (
            Error::Store(store::Error::Conflict {
                key: key.clone(),
                expected: "3".into(),
            }),
            ErrorCategory::ControlPlane,
        ),
        (
            Error::Malformed {
                key: key.clone(),
                kind: "Promise".into(),
                source: json(),
            },
            ErrorCategory::InvalidObject,
        ),
        (
            Error::Destination(destination::error::Error::InvalidPath {
                key: key.clone(),
                source: statestores::KeyError::Invalid {
                    path: "../x".into(),
                    reason: "leaves the store",
                },
            }),
            ErrorCategory::InvalidObject,
        ),
        (
            Error::Workflow(workflow::error::Error::EncodeRun {
                run: "r".into(),
                what: "its status",
                source: json(),
            }),
            ErrorCategory::PipelineRun,
        ),
        (
            Error::Promise(promise::error::Error::InvalidWorkflows {
                key: key.clone(),
                source: crate::api::pipeline::Error::Invalid {
                    path: "spec.workflows.promise.configure[0]".into(),
                    reason: "no containers".into(),
                },
            }),
            ErrorCategory::InvalidObject,
        ),
        (
            Error::Run(run::error::Error::not_carried_out(
                "r",
                run::failure::Error::PromiseNotFound("p".into()),
            )),
            ErrorCategory::PipelineRun,
        ),
        (
            Error::Work(work::error::Error::Refused {
                name: "w".into(),
                source: work::Refusal::StillDeleting {
                    namespace: "default".into(),
                    name: "w".into(),
                },
            }),
            ErrorCategory::PipelineRun,
        ),
        (
            Error::Sweep(crate::pipeline::Error::Sweep {
                owner: "default/t".into(),
                source: "gone".into(),
            }),
            ErrorCategory::Executor,
        ),
    ];
    for (err, want) in cases {
        assert_eq!(err.category(), want, "{err}");
    }
}

/// The writes one reconcile of `key` makes in a world stored beforehand, each as
/// `verb object written`, with the times in them (which change from run to run) left out.
async fn writes_of_one_reconcile(
    rt: &Runtime,
    recording: &recording::Recording,
    key: &ObjectKey,
) -> Vec<String> {
    recording.take();
    rt.reconcile(key).await.expect("the reconcile succeeds");
    recording
        .take()
        .into_iter()
        .map(|w| {
            let mut written = w.written;
            without_times(&mut written);
            format!("{} {} {written}", w.verb, w.object)
        })
        .collect()
}

/// One more reconcile of `key`, with nothing changed since the last: it writes nothing.
async fn nothing_more(rt: &Runtime, recording: &recording::Recording, key: &ObjectKey) {
    assert_eq!(
        writes_of_one_reconcile(rt, recording, key).await,
        Vec::<String>::new(),
        "{key} reconciled again with nothing changed"
    );
}

fn without_times(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            map.retain(|k, _| !k.ends_with("Time") && !k.ends_with("Timestamp"));
            map.values_mut().for_each(without_times);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(without_times),
        _ => {}
    }
}

/// A runtime on a fresh home whose control plane records every write.
fn recorded_runtime() -> (tempfile::TempDir, Runtime, Arc<recording::Recording>) {
    let home = tempfile::tempdir().expect("temporary home");
    let mut platform = Platform::open(home.path()).expect("platform");
    let recording = Arc::new(recording::Recording::new(platform.store.clone()));
    platform.store = recording.clone();
    (home, Runtime::new(platform), recording)
}

/// A GitStateStore named `default` on the repository at `url`, branch `main`.
fn git_store(url: &str) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "platform.kratix.io/v1alpha1",
        "kind": "GitStateStore",
        "metadata": {"name": "default"},
        "spec": {"url": url, "branch": "main"},
    })
}

async fn store(rt: &Runtime, kind: crate::api::Builtin, value: serde_json::Value) -> ObjectKey {
    let obj: crate::api::Object = serde_json::from_value(value).expect("an object");
    let stored = rt.cp.create(&builtin(kind), &obj).await.expect("stored");
    ObjectKey::of(&stored)
}

#[tokio::test]
async fn a_destination_reconcile_names_its_writes() {
    let (_home, rt, recording) = recorded_runtime();
    let key = store(
        &rt,
        crate::api::Builtin::Destination,
        serde_json::json!({
            "apiVersion": "platform.kratix.io/v1alpha1",
            "kind": "Destination",
            "metadata": {"name": "worker", "labels": {"env": "dev"}},
            "spec": {"path": "worker", "stateStoreRef": {"kind": "GitStateStore", "name": "missing"}},
        }),
    )
    .await;
    let writes = writes_of_one_reconcile(&rt, &recording, &key).await;
    assert_eq!(
        writes,
        [
            // Its finalizer, so that its files go before it does.
            r#"update Destination worker {"finalizers":["kratix.io/destination-cleanup"],"labels":{"env":"dev"},"spec":{"path":"worker","stateStoreRef":{"kind":"GitStateStore","name":"missing"}}}"#,
            // `Ready`, from its state store, for its generation.
            r#"update_status Destination worker {"conditions":[{"message":"GitStateStore \"missing\" not found","reason":"StateStoreNotFound","status":"False","type":"Ready"}],"observedGeneration":1}"#,
        ]
    );
}

#[tokio::test]
async fn a_promise_reconcile_names_its_writes() {
    let (_home, rt, recording) = recorded_runtime();
    let key = store(
        &rt,
        crate::api::Builtin::Promise,
        serde_json::json!({
            "apiVersion": "platform.kratix.io/v1alpha1",
            "kind": "Promise",
            "metadata": {"name": "plain"},
            "spec": {},
        }),
    )
    .await;
    let writes = writes_of_one_reconcile(&rt, &recording, &key).await;
    assert_eq!(
        writes,
        [
            // Its finalizer, so that its delete workflow runs and its Works go before it does.
            r#"update Promise plain {"finalizers":["kratix.io/workflows-cleanup"],"labels":null,"spec":{}}"#,
            // Its whole status in one write: no workflow to run, so available at once.
            concat!(
                r#"update_status Promise plain {"conditions":["#,
                r#"{"message":"Reconciled","reason":"Reconciled","status":"True","type":"Reconciled"},"#,
                r#"{"message":"Ready to fulfil resource requests","reason":"PromiseAvailable","status":"True","type":"Available"},"#,
                r#"{"message":"All works associated with this resource are ready","reason":"WorksSucceeded","status":"True","type":"WorksSucceeded"}],"#,
                r#""kratix":{"status":"Available","version":"not-set"},"observedGeneration":1,"pipelines":[],"#,
                r#""status":"Available","version":"not-set","workflows":0,"workflowsFailed":0,"workflowsSucceeded":0}"#,
            ),
            // Users are told it became available.
            r#"create Event {"message":"Ready to fulfil resource requests","reason":"PromiseAvailable"}"#,
        ]
    );
}

#[tokio::test]
async fn a_request_reconcile_names_its_writes() {
    let (_home, rt, recording) = recorded_runtime();
    let promise = store(
        &rt,
        crate::api::Builtin::Promise,
        serde_json::json!({
            "apiVersion": "platform.kratix.io/v1alpha1",
            "kind": "Promise",
            "metadata": {"name": "thing"},
            "spec": {"api": {
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": "things.test.kratix.io"},
                "spec": {
                    "group": "test.kratix.io",
                    "names": {"kind": "Thing", "plural": "things", "singular": "thing"},
                    "scope": "Namespaced",
                    "versions": [{"name": "v1alpha1", "served": true, "storage": true,
                        "schema": {"openAPIV3Schema": {"type": "object"}}}],
                },
            }},
        }),
    )
    .await;
    rt.reconcile(&promise)
        .await
        .expect("the Promise is reconciled");
    let stored = rt
        .cp
        .get(&builtin(crate::api::Builtin::Promise), None, &promise.name)
        .await
        .expect("read")
        .expect("the Promise");
    let thing = crate::api::promise_api::kinds_from_promises(&[stored])
        .into_iter()
        .next()
        .expect("the request kind");
    let obj: crate::api::Object = serde_json::from_value(serde_json::json!({
        "apiVersion": "test.kratix.io/v1alpha1",
        "kind": "Thing",
        "metadata": {"name": "a", "namespace": "default"},
        "spec": {"size": 1},
    }))
    .expect("a request");
    let stored = rt.cp.create(&thing, &obj).await.expect("stored");
    let key = ObjectKey::of(&stored);
    let writes = writes_of_one_reconcile(&rt, &recording, &key).await;
    assert_eq!(
        writes,
        [
            // Its finalizer and its Promise's label, in one write.
            r#"update Thing default/a {"finalizers":["kratix.io/workflows-cleanup"],"labels":{"kratix.io/promise-name":"thing"},"spec":{"size":1}}"#,
            // Its whole status in one write: no workflow to run, so reconciled at once.
            concat!(
                r#"update_status Thing default/a {"conditions":["#,
                r#"{"message":"Reconciled","reason":"Reconciled","status":"True","type":"Reconciled"},"#,
                r#"{"message":"Promise is available","reason":"PromiseAvailable","status":"True","type":"PromiseAvailable"},"#,
                r#"{"message":"All works associated with this resource are ready","reason":"WorksSucceeded","status":"True","type":"WorksSucceeded"}],"#,
                r#""message":"Resource requested","observedGeneration":1,"observedPromiseGeneration":1,"pipelines":[],"workflows":0}"#,
            ),
        ]
    );

    // Paused, with a spec changed meanwhile: the pause's conditions, and nothing that claims
    // the new generation was seen.
    let mut current = rt
        .cp
        .get(&thing, Some("default"), "a")
        .await
        .expect("read")
        .expect("the request");
    current
        .metadata
        .labels
        .get_or_insert_with(Default::default)
        .insert(crate::api::labels::PAUSED.into(), "true".into());
    current.data["spec"] = serde_json::json!({"size": 2});
    rt.cp.update(&thing, &current).await.expect("paused");
    let writes = writes_of_one_reconcile(&rt, &recording, &key).await;
    assert_eq!(
        writes,
        [concat!(
            r#"update_status Thing default/a {"conditions":["#,
            r#"{"message":"Paused","reason":"PausedReconciliation","status":"Unknown","type":"Reconciled"},"#,
            r#"{"message":"Promise is available","reason":"PromiseAvailable","status":"True","type":"PromiseAvailable"},"#,
            r#"{"message":"All works associated with this resource are ready","reason":"WorksSucceeded","status":"True","type":"WorksSucceeded"}],"#,
            r#""message":"Resource requested","observedGeneration":1,"observedPromiseGeneration":1,"pipelines":[],"workflows":0}"#,
        )]
    );
}

/// The Promise of kind `Thing` (no workflows) stored with `labels`, reconciled when `reconcile`
/// (then available), and its request kind.
async fn thing_promise(
    rt: &Runtime,
    labels: serde_json::Value,
    reconcile: bool,
) -> crate::api::KindInfo {
    let api = serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "things.test.kratix.io"},
        "spec": {
            "group": "test.kratix.io",
            "names": {"kind": "Thing", "plural": "things", "singular": "thing"},
            "scope": "Namespaced",
            "versions": [{"name": "v1alpha1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object"}}}],
        },
    });
    let promise = store(
        rt,
        crate::api::Builtin::Promise,
        serde_json::json!({
            "apiVersion": "platform.kratix.io/v1alpha1",
            "kind": "Promise",
            "metadata": {"name": "thing", "labels": labels},
            "spec": {"api": api},
        }),
    )
    .await;
    if reconcile {
        rt.reconcile(&promise)
            .await
            .expect("the Promise is reconciled");
    } else {
        rt.cp.register_kind("thing", &api).await.expect("the kind");
    }
    let stored = rt
        .cp
        .get(&builtin(crate::api::Builtin::Promise), None, &promise.name)
        .await
        .expect("read")
        .expect("the Promise");
    crate::api::promise_api::kinds_from_promises(&[stored])
        .into_iter()
        .next()
        .expect("the request kind")
}

async fn thing_request(rt: &Runtime, thing: &crate::api::KindInfo) -> ObjectKey {
    let obj: crate::api::Object = serde_json::from_value(serde_json::json!({
        "apiVersion": "test.kratix.io/v1alpha1",
        "kind": "Thing",
        "metadata": {"name": "a", "namespace": "default"},
        "spec": {"size": 1},
    }))
    .expect("a request");
    let stored = rt.cp.create(thing, &obj).await.expect("stored");
    ObjectKey::of(&stored)
}

#[tokio::test]
async fn a_request_waiting_for_its_promise_names_its_writes() {
    let (_home, rt, recording) = recorded_runtime();
    let thing = thing_promise(&rt, serde_json::json!({}), true).await;
    let promises = builtin(crate::api::Builtin::Promise);
    let mut promise = rt
        .cp
        .get(&promises, None, "thing")
        .await
        .expect("read")
        .expect("the Promise");
    promise.data["status"]["status"] = serde_json::json!("Unavailable");
    rt.cp
        .update_status(&promises, &promise)
        .await
        .expect("unavailable");
    let key = thing_request(&rt, &thing).await;
    let writes = writes_of_one_reconcile(&rt, &recording, &key).await;
    assert_eq!(
        writes,
        [
            r#"update Thing default/a {"finalizers":["kratix.io/workflows-cleanup"],"labels":{"kratix.io/promise-name":"thing"},"spec":{"size":1}}"#,
            // Waiting, and saying for which Promise.
            concat!(
                r#"update_status Thing default/a {"conditions":["#,
                r#"{"message":"Promise thing is not available yet","reason":"PromiseNotAvailable","status":"False","type":"PromiseAvailable"},"#,
                r#"{"message":"Pending","reason":"PromiseNotAvailable","status":"Unknown","type":"Reconciled"}],"#,
                r#""message":"Pending"}"#,
            ),
        ]
    );
}

#[tokio::test]
async fn a_request_whose_binding_names_no_revision_names_its_writes() {
    let (_home, rt, recording) = recorded_runtime();
    // A versioned Promise none of whose revisions is stored yet.
    let thing = thing_promise(
        &rt,
        serde_json::json!({"kratix.io/promise-version": "v1"}),
        false,
    )
    .await;
    let key = thing_request(&rt, &thing).await;
    let writes = writes_of_one_reconcile(&rt, &recording, &key).await;
    assert_eq!(
        writes,
        [
            r#"update_status Thing default/a {"message":"cannot find any PromiseRevision for Promise thing with status.latest set to true"}"#
        ]
    );
}

#[tokio::test]
async fn a_request_delete_step_names_its_writes() {
    let (_home, rt, recording) = recorded_runtime();
    let thing = thing_promise(&rt, serde_json::json!({}), true).await;
    let key = thing_request(&rt, &thing).await;
    rt.reconcile(&key).await.expect("the request is reconciled");
    rt.cp
        .delete(&thing, Some("default"), "a")
        .await
        .expect("deleted");
    let writes = writes_of_one_reconcile(&rt, &recording, &key).await;
    assert_eq!(
        writes,
        [
            // The delete workflow (none here) completed, under its own key.
            concat!(
                r#"update_status Thing default/a {"conditions":["#,
                r#"{"message":"Reconciled","reason":"Reconciled","status":"True","type":"Reconciled"},"#,
                r#"{"message":"Promise is available","reason":"PromiseAvailable","status":"True","type":"PromiseAvailable"},"#,
                r#"{"message":"All works associated with this resource are ready","reason":"WorksSucceeded","status":"True","type":"WorksSucceeded"},"#,
                r#"{"message":"Delete pipelines completed","reason":"PipelinesExecutedSuccessfully","status":"True","type":"DeleteWorkflowCompleted"}],"#,
                r#""message":"Resource requested","observedGeneration":1,"observedPromiseGeneration":1,"pipelines":[],"workflows":0}"#,
            ),
            // Nothing left: the finalizer goes, and the request with it.
            r#"update Thing default/a {"finalizers":[],"labels":{"kratix.io/promise-name":"thing"},"spec":{"size":1}}"#,
            r#"create Event {"message":"delete workflow ran and every file of the request was removed","reason":"Deleted"}"#,
        ]
    );
}

#[tokio::test]
async fn a_paused_promise_names_its_writes() {
    let (_home, rt, recording) = recorded_runtime();
    let key = store(
        &rt,
        crate::api::Builtin::Promise,
        serde_json::json!({
            "apiVersion": "platform.kratix.io/v1alpha1",
            "kind": "Promise",
            "metadata": {"name": "plain", "labels": {"kratix.io/paused": "true"}},
            "spec": {},
        }),
    )
    .await;
    let writes = writes_of_one_reconcile(&rt, &recording, &key).await;
    assert_eq!(
        writes,
        [concat!(
            r#"update_status Promise plain {"conditions":["#,
            r#"{"message":"Paused","reason":"PausedReconciliation","status":"Unknown","type":"Reconciled"},"#,
            r#"{"message":"Paused","reason":"PausedReconciliation","status":"False","type":"Available"}],"#,
            r#""status":"Unavailable"}"#,
        )]
    );
    // Unpaused: the label that runs the workflow again first, then the pending condition.
    let promises = builtin(crate::api::Builtin::Promise);
    let mut current = rt
        .cp
        .get(&promises, None, "plain")
        .await
        .expect("read")
        .expect("the Promise");
    current.metadata.labels = None;
    rt.cp.update(&promises, &current).await.expect("unpaused");
    let writes = writes_of_one_reconcile(&rt, &recording, &key).await;
    assert_eq!(
        writes,
        [
            r#"update Promise plain {"finalizers":null,"labels":{"kratix.io/manual-reconciliation":"true"},"spec":{}}"#,
            concat!(
                r#"update_status Promise plain {"conditions":["#,
                r#"{"message":"Pending","reason":"Unpaused","status":"Unknown","type":"Reconciled"},"#,
                r#"{"message":"Paused","reason":"PausedReconciliation","status":"False","type":"Available"}],"#,
                r#""status":"Unavailable"}"#,
            ),
        ]
    );
}
