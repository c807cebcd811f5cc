//! The writes of a platform Destination's reconcile: the Destination's own (finalizer, `Ready`),
//! then the sync's (the documents applied here, `PlatformSynced`, the sync's record).

use super::*;

#[tokio::test]
async fn a_platform_sync_reconcile_names_its_writes() {
    let (home, rt, recording) = recorded_runtime();
    let bare = home.path().join("store.git");
    testkit::init_bare(&bare).expect("a bare repository");
    // The store holds one document for the platform Destination.
    let work = home.path().join("work");
    testkit::git(
        &[
            "clone",
            &bare.display().to_string(),
            &work.display().to_string(),
        ],
        home.path(),
    );
    let doc = work.join("platform/resources/settings.yaml");
    std::fs::create_dir_all(doc.parent().expect("a folder")).expect("folder");
    std::fs::write(
        &doc,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: default\ndata:\n  a: \"1\"\n",
    )
    .expect("written");
    testkit::git(&["checkout", "-b", "main"], &work);
    testkit::git(&["add", "."], &work);
    testkit::git(&["commit", "-m", "settings"], &work);
    testkit::git(&["push", "origin", "main"], &work);
    store(
        &rt,
        crate::api::Builtin::GitStateStore,
        git_store(&bare.display().to_string()),
    )
    .await;
    let key = store(
        &rt,
        crate::api::Builtin::Destination,
        serde_json::json!({
            "apiVersion": "platform.kratix.io/v1alpha1",
            "kind": "Destination",
            "metadata": {"name": "platform",
                "annotations": {"kratix-rs.io/apply-to-platform": "true"}},
            "spec": {"path": "platform", "stateStoreRef": {"kind": "GitStateStore", "name": "default"}},
        }),
    )
    .await;
    let writes = writes_of_one_reconcile(&rt, &recording, &key).await;
    assert_eq!(
        without_revision(&rt, &writes).await,
        [
            // As any Destination: its finalizer, then `Ready` once its canary files are written.
            concat!(
                r#"update Destination platform {"finalizers":["kratix.io/destination-cleanup"],"labels":null,"#,
                r#""spec":{"path":"platform","stateStoreRef":{"kind":"GitStateStore","name":"default"}}}"#,
            ),
            concat!(
                r#"update_status Destination platform {"conditions":[{"message":"Test documents written to State Store","#,
                r#""reason":"TestDocumentsWritten","status":"True","type":"Ready"}],"observedGeneration":1}"#,
            ),
            // The sync: each document of its folder (the canary files too) applied here,
            // labelled with the Destination, and one event saying so.
            r#"create Namespace kratix-worker-system {"finalizers":null,"labels":{"kratix-rs.io/platform-destination":"platform"},"spec":{}}"#,
            r#"create ConfigMap kratix-worker-system/kratix-info {"finalizers":null,"labels":{"kratix-rs.io/platform-destination":"platform"},"spec":null}"#,
            r#"create ConfigMap default/settings {"finalizers":null,"labels":{"kratix-rs.io/platform-destination":"platform"},"spec":null}"#,
            concat!(
                r#"create Event {"message":"revision REV: applied Namespace kratix-worker-system, "#,
                r#"ConfigMap kratix-worker-system/kratix-info, ConfigMap default/settings","reason":"PlatformApplied"}"#,
            ),
            // `PlatformSynced` and the sync's record (inventory, churn, revision): a second
            // status write of the Destination in the same reconcile.
            concat!(
                r#"update_status Destination platform {"conditions":[{"message":"Test documents written to State Store","#,
                r#""reason":"TestDocumentsWritten","status":"True","type":"Ready"},"#,
                r#"{"message":"revision REV: every document applied (3 applied, 0 pruned, 0 waiting, 0 failed)","#,
                r#""reason":"Applied","status":"True","type":"PlatformSynced"}],"observedGeneration":1,"#,
                r#""platformSync":{"applied":3,"churn":["#,
                r#"{"apiVersion":"v1","changes":1,"kind":"Namespace","name":"kratix-worker-system"},"#,
                r#"{"apiVersion":"v1","changes":1,"kind":"ConfigMap","name":"kratix-info","namespace":"kratix-worker-system"},"#,
                r#"{"apiVersion":"v1","changes":1,"kind":"ConfigMap","name":"settings","namespace":"default"}],"#,
                r#""failed":0,"inventory":["#,
                r#"{"apiVersion":"v1","kind":"ConfigMap","name":"settings","namespace":"default"},"#,
                r#"{"apiVersion":"v1","kind":"ConfigMap","name":"kratix-info","namespace":"kratix-worker-system"},"#,
                r#"{"apiVersion":"v1","kind":"Namespace","name":"kratix-worker-system"}],"#,
                r#""pruned":0,"revision":"REVISION","waiting":0}}"#,
            ),
        ]
    );
    // Reconciled again with nothing changed: no status write, no event, and no object is
    // written again (each merges to what it already holds, so `apply` writes nothing).
    nothing_more(&rt, &recording, &key).await;
}

/// `writes` with the store's revision (a commit made now, by the canary write) and the churn
/// window's start (a time) named rather than spelled out.
async fn without_revision(rt: &Runtime, writes: &[String]) -> Vec<String> {
    let stored = rt
        .cp
        .get(&builtin(crate::api::Builtin::Destination), None, "platform")
        .await
        .expect("read")
        .expect("the Destination");
    let revision = stored.data["status"]["platformSync"]["revision"]
        .as_str()
        .expect("a revision")
        .to_string();
    writes
        .iter()
        .map(|w| {
            let since = regex_free_since(w);
            since
                .replace(&revision, "REVISION")
                .replace(&revision[..12], "REV")
        })
        .collect()
}

/// `w` without the `sinceMs` of each churn entry.
fn regex_free_since(w: &str) -> String {
    let mut out = String::new();
    let mut rest = w;
    while let Some(at) = rest.find(",\"sinceMs\":") {
        out.push_str(&rest[..at]);
        let after = &rest[at + ",\"sinceMs\":".len()..];
        let end = after
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(after.len());
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}
