//! What a bucket write sends, counted on the wire, and what it costs against a writer that
//! uploads every named object, measured in the same run on a real S3 server on loopback (`testkit::s3`). Run with
//! `cargo bench -p statestores --bench bucket_write [-- --quick]`; prints a Markdown section.
//!
//! Each write names `NAMED` objects: `CHANGED` of them with new content, the rest identical, and
//! deletes `REMOVED` present objects and `REMOVED` absent ones. PUTs must equal the changed
//! objects and deleted objects the removed ones: requests are counted by the HTTP client's
//! connector, objects in batched deletes from the request bodies.

mod common;

use std::time::Instant;

use bytes::Bytes;
use common::{info, key, median};
use object_store::aws::AmazonS3Builder;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use statestores::{Bucket, BucketAuth, BucketOptions, Change, StateStore};
use testkit::s3::{self, S3Server};
use testkit::s3_requests::{Counting, DELETED_OBJECTS};

const NAMED: usize = 100;
const CHANGED: usize = 10;
const REMOVED: usize = 5;

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

fn object(i: usize) -> String {
    format!("dest/resources/r{}/file-{i}.yaml", i / 10)
}

/// The changes of round `round`: every named object (the first `CHANGED` with new content),
/// `REMOVED` deletes of objects seeded for this round and `REMOVED` of objects never there.
fn round_changes(round: usize) -> Vec<Change> {
    let mut changes: Vec<Change> = (0..NAMED)
        .map(|i| {
            let content = if i < CHANGED {
                format!("round: {round}\n")
            } else {
                format!("stable: {i}\n")
            };
            Change::Put(key(&object(i)), Bytes::from(content))
        })
        .collect();
    for d in 0..REMOVED {
        changes.push(Change::Delete(key(&format!(
            "old/{round}/present-{d}.yaml"
        ))));
        changes.push(Change::Delete(key(&format!("old/{round}/absent-{d}.yaml"))));
    }
    changes
}

fn seed_round(round: usize) -> Vec<Change> {
    (0..REMOVED)
        .map(|d| {
            Change::Put(
                key(&format!("old/{round}/present-{d}.yaml")),
                Bytes::from_static(b"old\n"),
            )
        })
        .collect()
}

#[tokio::main]
// One scenario, read top to bottom: the writes, then the table of what they sent.
#[allow(clippy::too_many_lines)]
async fn main() {
    let rounds = if std::env::args().any(|a| a == "--quick") {
        3
    } else {
        9
    };
    let (server_options, baseline_options) = tokio::task::spawn_blocking(|| {
        let server = S3Server::shared();
        (
            options(server, &server.new_bucket()),
            options(server, &server.new_bucket()),
        )
    })
    .await
    .expect("S3 set-up");
    let counting = Counting::default();
    let store = Bucket::open_with_http_connector(server_options, counting.clone()).expect("bucket");
    store
        .write(&round_changes(0), &info("bench"))
        .await
        .expect("seed");

    let mut samples = Vec::new();
    let (mut puts, mut deleted, mut heads, mut lists) = (0, 0, 0, 0);
    for round in 1..=rounds {
        store
            .write(&seed_round(round), &info("bench"))
            .await
            .expect("seed");
        counting.take();
        let start = Instant::now();
        let outcome = store
            .write(&round_changes(round), &info("bench"))
            .await
            .expect("write");
        samples.push(start.elapsed());
        assert_eq!(
            (outcome.written.len(), outcome.deleted.len()),
            (CHANGED, REMOVED)
        );
        let counts = counting.take();
        let count = |what: &str| counts.get(what).copied().unwrap_or(0);
        puts += count("PUT");
        deleted += count(DELETED_OBJECTS) + count("DELETE");
        heads += count("HEAD");
        lists += count("GET ?list-type");
    }
    let ours = median(samples);

    // The baseline uploads every named object and deletes every named key, one request at a
    // time, without looking first.
    let baseline = baseline_client(&baseline_options);
    let mut samples = Vec::new();
    for round in 1..=rounds {
        let start = Instant::now();
        for change in round_changes(round) {
            match change {
                Change::Put(k, content) => {
                    baseline
                        .put(&Path::from(k.as_str()), PutPayload::from(content))
                        .await
                        .expect("put");
                }
                Change::Delete(k) => {
                    baseline
                        .delete(&Path::from(k.as_str()))
                        .await
                        .expect("delete");
                }
            }
        }
        samples.push(start.elapsed());
    }
    let upload_all = median(samples);

    let per_round = |n: usize| n as f64 / rounds as f64;
    println!("## Bucket writer (S3 server on loopback)\n");
    println!(
        "Each write names {NAMED} objects ({CHANGED} changed, the rest identical) and deletes \
         {REMOVED} present and {REMOVED} absent objects; {rounds} writes. Requests are counted \
         by the S3 client's HTTP connector, deleted objects from the batched delete bodies.\n"
    );
    println!("| figure | measured | floor | ratio |");
    println!("|---|---|---|---|");
    println!(
        "| PUT per write | {} | {CHANGED} changed objects | **{:.2}** |",
        per_round(puts),
        per_round(puts) / CHANGED as f64
    );
    println!(
        "| objects deleted per write | {} | {REMOVED} removed objects | **{:.2}** |",
        per_round(deleted),
        per_round(deleted) / REMOVED as f64
    );
    println!(
        "| HEAD per write | {} | {} named keys | {:.2} |",
        per_round(heads),
        NAMED + 2 * REMOVED,
        per_round(heads) / (NAMED + 2 * REMOVED) as f64
    );
    println!("| LIST per write | {} | 0 | |", per_round(lists));
    println!(
        "| time per write | {:.1} ms | {:.1} ms (uploading every named object, one request at a time) | {:.2} |",
        ours.as_secs_f64() * 1e3,
        upload_all.as_secs_f64() * 1e3,
        ours.as_secs_f64() / upload_all.as_secs_f64()
    );
    println!();
}

fn baseline_client(options: &BucketOptions) -> impl ObjectStore {
    let BucketAuth::AccessKey {
        access_key_id,
        secret_access_key,
    } = &options.auth
    else {
        panic!("the bench uses an access key");
    };
    AmazonS3Builder::new()
        .with_endpoint(format!("http://{}", options.endpoint))
        .with_bucket_name(&options.bucket_name)
        .with_region(options.region.clone().unwrap_or_default())
        .with_access_key_id(access_key_id)
        .with_secret_access_key(secret_access_key)
        .with_allow_http(true)
        .with_virtual_hosted_style_request(false)
        .build()
        .expect("an S3 client")
}
