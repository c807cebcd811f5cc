//! The writes of a state store's reconcile: its `Ready` condition and status word, for its
//! generation, in one status write; nothing when nothing changed.

use super::*;

#[tokio::test]
async fn a_git_store_reconcile_names_its_writes() {
    let daemon = testkit::GitDaemon::start().expect("git daemon");
    daemon.bare_repo("store.git").expect("a bare repository");
    let (_home, rt, recording) = recorded_runtime();
    let key = store(
        &rt,
        crate::api::Builtin::GitStateStore,
        git_store(&daemon.url("store.git")),
    )
    .await;
    let writes = writes_of_one_reconcile(&rt, &recording, &key).await;
    // `Ready`, the status word beside it and the generation seen, in one write.
    assert_eq!(
        writes,
        [concat!(
            r#"update_status GitStateStore default {"conditions":[{"message":"State store is ready","#,
            r#""reason":"StateStoreReady","status":"True","type":"Ready"}],"observedGeneration":1,"status":"Ready"}"#,
        )]
    );
    nothing_more(&rt, &recording, &key).await;
}

#[tokio::test]
async fn a_bucket_store_reconcile_names_its_writes() {
    let s3 = testkit::s3::S3Server::shared();
    let bucket = s3.new_bucket();
    let (_home, rt, recording) = recorded_runtime();
    store(
        &rt,
        crate::api::Builtin::Secret,
        serde_json::json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "s3", "namespace": "default"},
            "stringData": {"accessKeyID": s3.key.id, "secretAccessKey": s3.key.secret},
        }),
    )
    .await;
    let key = store(
        &rt,
        crate::api::Builtin::BucketStateStore,
        serde_json::json!({
            "apiVersion": "platform.kratix.io/v1alpha1",
            "kind": "BucketStateStore",
            "metadata": {"name": "bucket"},
            "spec": {"endpoint": s3.s3_endpoint, "bucketName": bucket, "insecure": true,
                "authMethod": "accessKey", "secretRef": {"name": "s3", "namespace": "default"}},
        }),
    )
    .await;
    let writes = writes_of_one_reconcile(&rt, &recording, &key).await;
    assert_eq!(
        writes,
        [concat!(
            r#"update_status BucketStateStore bucket {"conditions":[{"message":"State store is ready","#,
            r#""reason":"StateStoreReady","status":"True","type":"Ready"}],"observedGeneration":1,"status":"Ready"}"#,
        )]
    );
    nothing_more(&rt, &recording, &key).await;
}

#[tokio::test]
async fn an_unreachable_store_reconcile_names_its_writes() {
    // A port nothing listens on: the store cannot be reached.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let url = format!("git://{}/store.git", closed.local_addr().expect("address"));
    drop(closed);
    let (_home, rt, recording) = recorded_runtime();
    let key = store(&rt, crate::api::Builtin::GitStateStore, git_store(&url)).await;
    let writes = writes_of_one_reconcile(&rt, &recording, &key).await;
    // Not ready, saying why, in the same one write.
    assert_eq!(
        writes,
        [format!(
            "{}{url}#main: unreachable: could not connect for push: failed to connect to 127.0.0.1: \
             Connection refused; class=Os (2)\",{}",
            r#"update_status GitStateStore default {"conditions":[{"message":"write permission validation failed: "#,
            r#""reason":"ErrorValidatingPermissions","status":"False","type":"Ready"}],"observedGeneration":1,"status":"NotReady"}"#,
        )]
    );
}
