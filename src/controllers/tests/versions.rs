//! The writes of a PromiseRevision's reconcile (its finalizer, `status.latest`) and of a
//! PromiseRelease's (its finalizer, `Installed`). ResourceBindings and HealthRecords have no
//! reconcile of their own: the request's and the Promise's reconciles read and write them.

use super::*;

#[tokio::test]
async fn a_promise_revision_reconcile_names_its_writes() {
    let (_home, rt, recording) = recorded_runtime();
    let key = store(
        &rt,
        crate::api::Builtin::PromiseRevision,
        serde_json::json!({
            "apiVersion": "platform.kratix.io/v1alpha1",
            "kind": "PromiseRevision",
            "metadata": {"name": "app-v1", "labels": {
                "kratix.io/promise-name": "app", "kratix.io/latest-revision": "true"}},
            "spec": {"promiseRef": {"name": "app"}, "promiseSpec": {}, "version": "v1"},
        }),
    )
    .await;
    let writes = writes_of_one_reconcile(&rt, &recording, &key).await;
    assert_eq!(
        writes,
        [
            // Its finalizer, so that its deletion is seen and reported.
            concat!(
                r#"update PromiseRevision app-v1 {"finalizers":["kratix.io/promise-revision-deletion"],"#,
                r#""labels":{"kratix.io/latest-revision":"true","kratix.io/promise-name":"app"},"#,
                r#""spec":{"promiseRef":{"name":"app"},"promiseSpec":{},"version":"v1"}}"#,
            ),
            // `latest`, from its label.
            r#"update_status PromiseRevision app-v1 {"latest":true}"#,
        ]
    );
    nothing_more(&rt, &recording, &key).await;
}

#[tokio::test]
async fn a_promise_release_reconcile_names_its_writes() {
    let (_home, rt, recording) = recorded_runtime();
    // Its Promise is installed at its version already.
    store(
        &rt,
        crate::api::Builtin::Promise,
        serde_json::json!({
            "apiVersion": "platform.kratix.io/v1alpha1",
            "kind": "Promise",
            "metadata": {"name": "app", "labels": {
                "kratix.io/promise-release-name": "app", "kratix.io/promise-version": "v1"}},
            "spec": {},
        }),
    )
    .await;
    let key = store(
        &rt,
        crate::api::Builtin::PromiseRelease,
        serde_json::json!({
            "apiVersion": "platform.kratix.io/v1alpha1",
            "kind": "PromiseRelease",
            "metadata": {"name": "app"},
            "spec": {"version": "v1",
                "sourceRef": {"type": "http", "url": "http://127.0.0.1:1/app.yaml"}},
        }),
    )
    .await;
    let writes = writes_of_one_reconcile(&rt, &recording, &key).await;
    assert_eq!(
        writes,
        [
            // Its finalizer, so that its Promise goes with it.
            concat!(
                r#"update PromiseRelease app {"finalizers":["kratix.io/promise-cleanup"],"labels":null,"#,
                r#""spec":{"sourceRef":{"type":"http","url":"http://127.0.0.1:1/app.yaml"},"version":"v1"}}"#,
            ),
            // Installed: its Promise is there at its version, so nothing is fetched.
            concat!(
                r#"update_status PromiseRelease app {"conditions":[{"message":"Installed successfully","#,
                r#""reason":"InstalledSuccessfully","status":"True","type":"Installed"}],"#,
                r#""observedGeneration":1,"status":"Installed"}"#,
            ),
        ]
    );
    nothing_more(&rt, &recording, &key).await;
}
