//! The bucket backend against a real S3 server on loopback (`SeaweedFS`, or Garage: `testkit::s3)`: the conformance suite, plus what
//! only buckets promise (no request when nothing changed, batched deletes, error meanings).

use std::collections::BTreeMap;

use bytes::Bytes;
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use statestores::conformance::{delete, info, key, put};
use statestores::error_chain::ErrorChain;
use statestores::{Bucket, BucketAuth, BucketOptions, Change, Error, StateStore, WriteOutcome};

use testkit::s3::{self, S3Server};
use testkit::s3_requests::{Counting, DELETED_OBJECTS};

/// A fresh, empty bucket on the shared server, and options to reach it.
async fn fresh_options() -> (BucketOptions, String) {
    tokio::task::spawn_blocking(|| {
        let server = S3Server::shared();
        let name = server.new_bucket();
        (options(server, &name), name)
    })
    .await
    .expect("S3 set-up does not panic")
}

/// Options for `bucket` with the server's key, plain http, region [`s3::REGION`].
fn options(server: &S3Server, bucket: &str) -> BucketOptions {
    BucketOptions {
        endpoint: server.s3_endpoint.clone(),
        bucket_name: bucket.to_string(),
        path_prefix: None,
        insecure: true,
        auth: BucketAuth::AccessKey {
            access_key_id: server.key.id.clone(),
            secret_access_key: server.key.secret.clone(),
        },
        region: Some(s3::REGION.to_string()),
    }
}

async fn fresh_bucket() -> Bucket {
    let (options, _) = fresh_options().await;
    Bucket::open(options).expect("options of the test server are valid")
}

mod conformance {
    use super::fresh_bucket;

    statestores::conformance_suite!(fresh_bucket());
}

/// A second client, independent of the backend, to look at what the bucket really holds.
fn inspector(options: &BucketOptions) -> AmazonS3 {
    let BucketAuth::AccessKey {
        access_key_id,
        secret_access_key,
    } = &options.auth
    else {
        panic!("tests use access keys");
    };
    AmazonS3Builder::new()
        .with_endpoint(format!("http://{}", options.endpoint))
        .with_allow_http(true)
        .with_bucket_name(&options.bucket_name)
        .with_region(s3::REGION)
        .with_access_key_id(access_key_id)
        .with_secret_access_key(secret_access_key)
        .build()
        .expect("inspector client")
}

async fn all_objects(client: &AmazonS3) -> Vec<String> {
    use futures::TryStreamExt;
    let mut names: Vec<String> = client
        .list(None)
        .map_ok(|meta| meta.location.to_string())
        .try_collect()
        .await
        .expect("inspector lists the bucket");
    names.sort();
    names
}

fn counts(pairs: &[(&str, usize)]) -> BTreeMap<String, usize> {
    pairs.iter().map(|(k, n)| ((*k).to_string(), *n)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identical_rewrite_sends_no_put_and_no_delete() {
    let (options, _) = fresh_options().await;
    let counting = Counting::default();
    let store =
        Bucket::open_with_http_connector(options.clone(), counting.clone()).expect("valid options");
    let inspector = inspector(&options);

    let seed = [put("d/gone-1", "x"), put("d/gone-2", "y")];
    store.write(&seed, &info("seed")).await.expect("seed");
    counting.take();

    let changes = [
        put("d/a.yaml", "A\n"),
        put("d/sub/b.yaml", "B\n"),
        put("d/c.yaml", "C\n"),
        delete("d/gone-1"),
        delete("d/gone-2"),
        delete("d/never-there"),
    ];
    let first = store
        .write(&changes, &info("first"))
        .await
        .expect("first write");
    assert_eq!(first.written.len(), 3, "{first:?}");
    assert_eq!(first.deleted, [key("d/gone-1"), key("d/gone-2")]);
    assert_eq!(
        counting.take(),
        counts(&[
            ("HEAD", 6),
            ("PUT", 3),
            ("POST ?delete", 1),
            (DELETED_OBJECTS, 2)
        ]),
        "one HEAD per key, one PUT per new object, one batched delete of the present objects"
    );

    let mut before = Vec::new();
    for name in ["d/a.yaml", "d/sub/b.yaml", "d/c.yaml"] {
        before.push(inspector.head(&Path::from(name)).await.expect("uploaded"));
    }

    let again = store
        .write(&changes, &info("again"))
        .await
        .expect("second write");
    assert_eq!(
        again,
        WriteOutcome::default(),
        "nothing changed, no version"
    );
    assert_eq!(
        counting.take(),
        counts(&[("HEAD", 6)]),
        "an identical re-run only looks: no PUT, no DELETE, no POST, no LIST"
    );
    for old in before {
        let now = inspector.head(&old.location).await.expect("still there");
        assert_eq!(now.e_tag, old.e_tag, "{}", old.location);
        assert_eq!(
            now.last_modified, old.last_modified,
            "{} not rewritten",
            old.location
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_written_by_another_client_are_recognised_by_their_etag() {
    let (options, _) = fresh_options().await;
    let inspector = inspector(&options);
    // Uploaded without our sha256 metadata, as Kratix's own writer would have: only the
    // ETag (the md5 of the content) can say it is unchanged.
    inspector
        .put(&Path::from("d/a.yaml"), PutPayload::from_static(b"A\n"))
        .await
        .expect("plain upload");
    let counting = Counting::default();
    let store = Bucket::open_with_http_connector(options, counting.clone()).expect("valid");

    let outcome = store
        .write(&[put("d/a.yaml", "A\n")], &info("same as Kratix wrote"))
        .await
        .expect("write");
    assert_eq!(outcome, WriteOutcome::default());
    assert_eq!(counting.take(), counts(&[("HEAD", 1)]));

    let changed = store
        .write(&[put("d/a.yaml", "A2\n")], &info("new content"))
        .await
        .expect("write");
    assert_eq!(changed.written, [key("d/a.yaml")]);
    assert_eq!(counting.take(), counts(&[("HEAD", 1), ("PUT", 1)]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn version_is_a_sha256_chain_that_follows_content() {
    let store = fresh_bucket().await;
    let v = |o: WriteOutcome| o.version.expect("changed").0;
    let one = v(store.write(&[put("a", "1")], &info("1")).await.expect("w"));
    let two = v(store.write(&[put("a", "2")], &info("2")).await.expect("w"));
    let back = v(store
        .write(&[put("a", "1")], &info("1 again"))
        .await
        .expect("w"));
    assert_eq!(one.len(), 64);
    assert!(one.bytes().all(|b| b.is_ascii_hexdigit()), "{one}");
    assert_ne!(one, two);
    assert_eq!(
        one, back,
        "the same upload of the same key gives the same version"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn path_prefix_scopes_every_key() {
    let (mut options, _) = fresh_options().await;
    let inspector = inspector(&options);
    inspector
        .put(
            &Path::from("outside.yaml"),
            PutPayload::from_static(b"theirs"),
        )
        .await
        .expect("foreign object");
    options.path_prefix = Some("/platform/dest/".to_string());
    let store = Bucket::open(options).expect("valid");

    store
        .write(&[put("a.yaml", "A"), put("sub/b.yaml", "B")], &info("w"))
        .await
        .expect("write");
    assert_eq!(
        all_objects(&inspector).await,
        [
            "outside.yaml",
            "platform/dest/a.yaml",
            "platform/dest/sub/b.yaml"
        ]
    );
    let listed = store.list(&key("")).await.expect("list");
    assert_eq!(listed, [key("a.yaml"), key("sub/b.yaml")]);
    assert_eq!(
        store.read(&key("a.yaml")).await.expect("read").as_deref(),
        Some(&b"A"[..])
    );
    store.check_access().await.expect("allowed");
    store
        .write(&[delete("a.yaml"), delete("sub/b.yaml")], &info("d"))
        .await
        .expect("delete");
    assert_eq!(all_objects(&inspector).await, ["outside.yaml"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_access_leaves_no_object_and_no_upload_behind() {
    let (options, bucket) = fresh_options().await;
    let store = Bucket::open(options.clone()).expect("valid");
    store.check_access().await.expect("allowed");
    store.check_access().await.expect("twice is fine");
    let inspector = inspector(&options);
    assert!(all_objects(&inspector).await.is_empty());
    let server = S3Server::shared();
    assert_eq!(
        server.unfinished_uploads(&bucket),
        0,
        "the upload was aborted"
    );

    // The same observation sees an upload that is left open, so the zero above means something.
    let _open = inspector
        .put_multipart(&Path::from("left-open"))
        .await
        .expect("start an upload");
    assert_eq!(
        server.unfinished_uploads(&bucket),
        1,
        "an open upload shows"
    );
}

fn assert_no_secret(err: &Error, secret: &str) {
    let shown = format!("{err} {err:?} {}", ErrorChain(err));
    assert!(!shown.contains(secret), "the secret leaked: {shown}");
}

async fn assert_every_operation_fails(store: &Bucket, want: fn(&Error) -> bool, secret: &str) {
    let results: [(&str, Result<(), Error>); 4] = [
        ("check_access", store.check_access().await),
        (
            "write",
            store.write(&[put("a", "a")], &info("w")).await.map(|_| ()),
        ),
        ("read", store.read(&key("a")).await.map(|_| ())),
        ("list", store.list(&key("")).await.map(|_| ())),
    ];
    for (operation, result) in results {
        match result {
            Ok(()) => panic!("{operation} succeeded"),
            Err(err) => {
                assert!(
                    want(&err),
                    "{operation}: unexpected error {}",
                    ErrorChain(&err)
                );
                assert_no_secret(&err, secret);
            }
        }
    }
}

fn unauthorized(err: &Error) -> bool {
    matches!(err, Error::Unauthorized { .. })
}

fn unreachable(err: &Error) -> bool {
    matches!(err, Error::Unreachable { .. })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_secret_is_unauthorized() {
    let (mut options, _) = fresh_options().await;
    let BucketAuth::AccessKey { access_key_id, .. } = options.auth.clone() else {
        panic!("tests use access keys");
    };
    let secret = s3::random_hex(32);
    options.auth = BucketAuth::AccessKey {
        access_key_id,
        secret_access_key: secret.clone(),
    };
    let store = Bucket::open(options).expect("valid");
    assert_every_operation_fails(&store, unauthorized, &secret).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_access_key_is_unauthorized() {
    let (mut options, _) = fresh_options().await;
    let secret = s3::random_hex(32);
    options.auth = BucketAuth::AccessKey {
        access_key_id: format!("GK{}", s3::random_hex(12)),
        secret_access_key: secret.clone(),
    };
    let store = Bucket::open(options).expect("valid");
    assert_every_operation_fails(&store, unauthorized, &secret).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_without_permission_on_the_bucket_is_unauthorized() {
    let (mut options, _) = fresh_options().await;
    let other = tokio::task::spawn_blocking(|| S3Server::shared().key_without_permissions())
        .await
        .expect("key created");
    options.auth = BucketAuth::AccessKey {
        access_key_id: other.id,
        secret_access_key: other.secret.clone(),
    };
    let store = Bucket::open(options).expect("valid");
    assert_every_operation_fails(&store, unauthorized, &other.secret).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_bucket_is_unreachable() {
    let (mut options, _) = fresh_options().await;
    options.bucket_name = format!("never-created-{}", s3::random_hex(4));
    let BucketAuth::AccessKey {
        secret_access_key, ..
    } = options.auth.clone()
    else {
        panic!("tests use access keys");
    };
    let store = Bucket::open(options).expect("valid");
    assert_every_operation_fails(&store, unreachable, &secret_access_key).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_port_is_unreachable() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("bound").port()
    }; // Closed again: connections are refused.
    let secret = s3::random_hex(32);
    let store = Bucket::open(BucketOptions {
        endpoint: format!("127.0.0.1:{port}"),
        bucket_name: "nothing-listens".to_string(),
        path_prefix: None,
        insecure: true,
        auth: BucketAuth::AccessKey {
            access_key_id: "GK0123".to_string(),
            secret_access_key: secret.clone(),
        },
        region: Some(s3::REGION.to_string()),
    })
    .expect("valid");
    assert_every_operation_fails(&store, unreachable, &secret).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoint_may_carry_its_scheme() {
    let (mut options, _) = fresh_options().await;
    options.endpoint = format!("http://{}", options.endpoint);
    let store = Bucket::open(options).expect("valid");
    store
        .check_access()
        .await
        .expect("reachable through an http:// endpoint");
}

#[tokio::test]
async fn plain_http_needs_insecure() {
    let (mut options, _) = fresh_options().await;
    options.endpoint = format!("http://{}", options.endpoint);
    options.insecure = false;
    let err = Bucket::open(options).expect_err("http without insecure");
    assert!(matches!(err, Error::Config { .. }), "{}", ErrorChain(&err));
}

#[tokio::test]
async fn debug_output_hides_the_secret() {
    let (options, _) = fresh_options().await;
    let BucketAuth::AccessKey {
        secret_access_key, ..
    } = options.auth.clone()
    else {
        panic!("tests use access keys");
    };
    let store = Bucket::open(options.clone()).expect("valid");
    for shown in [format!("{store:?}"), format!("{options:?}")] {
        assert!(!shown.contains(&secret_access_key), "{shown}");
    }
}

/// Two handles (two processes, in effect) write at once: nothing is lost. Unlike the
/// conformance case, which shares one handle, they cannot tell which of them deleted a key both
/// deleted: S3 answers a DELETE the same whether or not the object was there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_handles_writing_at_once_lose_nothing() {
    let (options, _) = fresh_options().await;
    let first = Bucket::open(options.clone()).expect("valid");
    let second = Bucket::open(options).expect("valid");
    let writes = |store: Bucket, name: &'static str| async move {
        for i in 0..4 {
            let changes: Vec<Change> = vec![
                put(&format!("conc/{name}/{i}"), name),
                put("conc/shared", &format!("{name}-{i}")),
            ];
            store.write(&changes, &info(name)).await.expect("write");
        }
        store
    };
    let (first, second) = tokio::join!(writes(first, "one"), writes(second, "two"));
    for store in [&first, &second] {
        let listed = store.list(&key("conc")).await.expect("list");
        assert_eq!(listed.len(), 9, "{listed:?}");
        let shared = store.read(&key("conc/shared")).await.expect("read");
        assert!(
            shared == Some(Bytes::from("one-3")) || shared == Some(Bytes::from("two-3")),
            "{shared:?}"
        );
    }
}
