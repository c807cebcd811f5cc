//! `diff -f PATH` through the binary: the workflows run for real in a scratch copy of the home,
//! and what they would write is shown as unified diffs per Destination, while the state store
//! (a Git branch, an S3 bucket) and the stored objects stay exactly as they were.

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use support::bucket::BucketInspector;
use support::{fixtures, git_destination_yaml, Kratix};
use testkit::git;
use testkit::s3::S3Server;

const NOTE_DIR: &str = "resources/default/note/n1/render/5058f";

fn promise() -> String {
    std::fs::read_to_string(fixtures().join("diff").join("promise.yaml")).expect("diff fixture")
}

fn note(value: &str, extra: bool, more: bool) -> String {
    format!(
        "apiVersion: example.kratix.io/v1alpha1\nkind: Note\nmetadata:\n  name: n1\n  \
         namespace: default\nspec:\n  value: {value}\n  extra: {extra}\n  more: {more}\n"
    )
}

/// Every stored object a diff could touch, as `get -o yaml` prints it.
fn stored_objects(k: &Kratix) -> String {
    let kinds = [
        "promises",
        "notes",
        "pipelineruns",
        "works",
        "workplacements",
        "destinations",
        "gitstatestores",
        "bucketstatestores",
        "secrets",
    ];
    let mut out = String::new();
    for kind in kinds {
        let run = k.run(&["get", kind, "-A", "-o", "yaml"]);
        run.assert_ok();
        out.push_str(&run.stdout);
    }
    out
}

fn diff(k: &Kratix, yaml: &str) -> support::Run {
    k.run_with_stdin(&["diff", "-f", "-"], yaml)
}

/// The three kinds of change, as the diff of `note("a", true, false)` → `note("b", false, true)`
/// under `prefix` (the Destination's root in the store) shows them.
#[track_caller]
fn assert_three_changes(out: &str, prefix: &str, store: &str) {
    let dir = format!("{prefix}/{NOTE_DIR}");
    let expected = [
        format!("# Destination preview ({store}): 1 added, 1 changed, 1 deleted\n"),
        // Changed: a hunk with context around the changed line.
        format!(
            "--- a/{dir}/main.yaml\n+++ b/{dir}/main.yaml\n@@ -4,5 +4,5 @@\n data:\n   \
             first: 1\n   second: 2\n-  value: a\n+  value: b\n   fourth: 4\n"
        ),
        // Deleted.
        format!("--- a/{dir}/extra.yaml\n+++ /dev/null\n@@ -1 +0,0 @@\n-extra: true\n"),
        // Added.
        format!("--- /dev/null\n+++ b/{dir}/more.yaml\n@@ -0,0 +1 @@\n+more: true\n"),
    ];
    for part in expected {
        assert!(out.contains(&part), "missing\n{part}\nin\n{out}");
    }
}

#[test]
fn diff_shows_changed_added_and_deleted_files_and_changes_nothing() {
    let k = Kratix::new();
    k.apply_yaml(
        &git_destination_yaml("store.git", "preview", "{preview: \"yes\"}"),
        &[],
    )
    .assert_ok();
    k.apply_yaml(&promise(), &[]).assert_ok();
    k.apply_yaml(&note("a", true, false), &[]).assert_ok();
    let repo = k.home().join("store.git");
    let head = || git(&["rev-parse", "refs/heads/main"], &repo);
    let (head_before, objects_before) = (head(), stored_objects(&k));

    let run = diff(&k, &note("b", false, true));
    assert_eq!(run.status, 1, "differences exit 1: {run:?}");
    assert_three_changes(&run.stdout, "preview", "GitStateStore default");

    assert_eq!(head(), head_before, "the branch did not move");
    assert_eq!(
        stored_objects(&k),
        objects_before,
        "no stored object changed"
    );

    // What is applied already: nothing would change.
    let same = diff(&k, &note("a", true, false));
    assert_eq!(same.status, 0, "no differences exit 0: {same:?}");
    assert_eq!(same.stdout, "");

    // Errors exit 2 or more, and name what is wrong.
    let missing = k.run(&["diff", "-f", "/no/such/file.yaml"]);
    assert!(missing.status >= 2, "{missing:?}");
    let bad = diff(
        &k,
        "apiVersion: example.kratix.io/v1alpha1\nkind: Note\nmetadata:\n  name: n1\n  \
         namespace: default\nspec:\n  value: [not, a, string]\n",
    );
    assert!(bad.status >= 2, "{bad:?}");
    assert!(bad.stderr.contains("spec.value"), "{}", bad.stderr);
    assert_eq!(head(), head_before);
    assert_eq!(stored_objects(&k), objects_before);
}

#[test]
fn diff_beside_a_running_serve_leaves_its_home_alone() {
    let mut k = Kratix::new();
    k.apply_yaml(
        &git_destination_yaml("store.git", "preview", "{preview: \"yes\"}"),
        &[],
    )
    .assert_ok();
    k.apply_yaml(&promise(), &[]).assert_ok();
    k.apply_yaml(&note("a", true, false), &[]).assert_ok();
    k.start_serve();
    let repo = k.home().join("store.git");
    let head_before = git(&["rev-parse", "refs/heads/main"], &repo);
    let runs_before = k.list_json("pipelineruns", &["-A"]).len();

    let run = diff(&k, &note("b", false, true));
    assert_eq!(run.status, 1, "{run:?}");
    assert_three_changes(&run.stdout, "preview", "GitStateStore default");

    // The serve saw no new object (no run was stored in its home) and wrote nothing.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(k.list_json("pipelineruns", &["-A"]).len(), runs_before);
    assert_eq!(git(&["rev-parse", "refs/heads/main"], &repo), head_before);
    let serve = k.serve_child().expect("serve was started");
    assert!(
        serve.try_wait().expect("serve's state").is_none(),
        "serve still runs"
    );
    assert!(!k.serve_log().contains("ERROR"), "{}", k.serve_log());
}

#[test]
fn diff_against_a_bucket_reads_it_and_writes_nothing() {
    let server = S3Server::shared();
    let bucket = server.new_bucket();
    let inspector = BucketInspector::new(server, &bucket);
    let k = Kratix::new();
    let platform = format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n  namespace: default\n\
         stringData:\n  accessKeyID: {id}\n  secretAccessKey: {secret}\n---\n\
         apiVersion: platform.kratix.io/v1alpha1\nkind: BucketStateStore\nmetadata:\n  \
         name: garage\nspec:\n  endpoint: {endpoint}\n  bucketName: {bucket}\n  path: platform\n  \
         insecure: true\n  authMethod: accessKey\n  secretRef:\n    name: creds\n    \
         namespace: default\n---\napiVersion: platform.kratix.io/v1alpha1\nkind: Destination\n\
         metadata:\n  name: preview\n  labels:\n    preview: \"yes\"\nspec:\n  path: preview\n  \
         stateStoreRef:\n    kind: BucketStateStore\n    name: garage\n",
        id = server.key.id,
        secret = server.key.secret,
        endpoint = server.s3_endpoint,
    );
    k.apply_yaml(&platform, &[]).assert_ok();
    k.apply_yaml(&promise(), &[]).assert_ok();
    k.apply_yaml(&note("a", true, false), &[]).assert_ok();
    let contents = || -> BTreeMap<String, String> {
        inspector
            .keys()
            .into_iter()
            .map(|key| {
                let body = inspector.get(&key);
                (key, body)
            })
            .collect()
    };
    let (bucket_before, objects_before) = (contents(), stored_objects(&k));
    let uploads_before = server.unfinished_uploads(&bucket);
    assert!(
        bucket_before.contains_key(&format!("platform/preview/{NOTE_DIR}/extra.yaml")),
        "{bucket_before:?}"
    );

    let run = diff(&k, &note("b", false, true));
    assert_eq!(run.status, 1, "{run:?}");
    assert_three_changes(&run.stdout, "platform/preview", "BucketStateStore garage");
    for output in [&run.stdout, &run.stderr] {
        assert!(!output.contains(&server.key.secret), "no credential shown");
    }

    assert_eq!(contents(), bucket_before, "the bucket is as it was");
    assert_eq!(
        server.unfinished_uploads(&bucket),
        uploads_before,
        "not even an upload begun"
    );
    assert_eq!(stored_objects(&k), objects_before);
}

#[test]
fn diff_of_a_new_platform_previews_every_file_and_creates_no_repository() {
    let k = Kratix::new();
    let quickstart = fixtures().join("quickstart").display().to_string();
    let run = k.run(&["diff", "-f", &quickstart]);
    assert_eq!(run.status, 1, "{run:?}");
    assert!(
        run.stdout.starts_with(
            "# Destination worker-1 (GitStateStore default): 8 added, 0 changed, 0 deleted\n"
        ),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(
            "--- /dev/null\n+++ b/worker-1/resources/default/webapp/shop/deployment/5058f/deployment.yaml\n"
        ),
        "{}",
        run.stdout
    );
    assert!(
        !k.home().join("state-store.git").exists(),
        "the store's repository is not created"
    );
    assert!(k.list_json("promises", &[]).is_empty(), "nothing stored");
}

#[test]
fn diff_against_a_remote_repository_only_fetches() {
    let daemon = testkit::GitDaemon::start().expect("git daemon on loopback");
    let bare = daemon.bare_repo("state.git").expect("a bare repository");
    let k = Kratix::new();
    k.apply_yaml(
        &git_destination_yaml(&daemon.url("state.git"), "preview", "{preview: \"yes\"}"),
        &[],
    )
    .assert_ok();
    k.apply_yaml(&promise(), &[]).assert_ok();
    k.apply_yaml(&note("a", true, false), &[]).assert_ok();
    let refs = || git(&["for-each-ref"], &bare);
    let (refs_before, objects_before) = (refs(), stored_objects(&k));

    let run = diff(&k, &note("b", false, true));
    assert_eq!(run.status, 1, "{run:?}");
    assert_three_changes(&run.stdout, "preview", "GitStateStore default");
    assert_eq!(refs(), refs_before, "no branch moved, none was added");
    assert_eq!(stored_objects(&k), objects_before);
}
