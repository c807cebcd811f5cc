//! State-store drift repair through the binary: with
//! `KRATIX_STATE_STORE_RECONCILIATION_INTERVAL` set, files of ours that someone else changed or
//! deleted in the store are restored (in Git, in one commit), their own files are left alone, and
//! nothing is written while nothing drifted.

mod support;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use serde_json::json;
use support::bucket::BucketInspector;
use support::{eventually, git_destination_yaml, things, Kratix};
use testkit::s3::S3Server;

const WAIT: Duration = Duration::from_secs(120);
const INTERVAL: &str = "2s";

/// The `thing` Promise whose one pipeline writes two files, `a.yaml` and `b.yaml`.
fn two_files_promise() -> String {
    let script = r#"out="${KRATIX_OUTPUT_DIR:-/kratix/output}"
for f in a b; do
  printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: default\n' "$f" > "$out/$f.yaml"
done"#;
    things::promise_with(&[("render", vec!["sh".into(), "-c".into(), script.into()])])
}

fn kratix() -> Kratix {
    Kratix::new().with_env("KRATIX_STATE_STORE_RECONCILIATION_INTERVAL", INTERVAL)
}

/// Applies the Promise and a request, waiting until their files are written.
fn fulfil(k: &Kratix) {
    k.apply_yaml(&two_files_promise(), &["--timeout", "120"])
        .assert_ok();
    k.apply_yaml(&things::request("one", 1), &["--timeout", "120"])
        .assert_ok();
}

/// `(a, b)`: our two files among `keys`.
fn ours(keys: &BTreeSet<String>) -> (String, String) {
    let find = |name: &str| {
        keys.iter()
            .find(|k| k.ends_with(&format!("/{name}")) && k.contains("/resources/"))
            .unwrap_or_else(|| panic!("no {name} among {keys:#?}"))
            .clone()
    };
    (find("a.yaml"), find("b.yaml"))
}

fn git(repo: &Path, args: &[&str]) -> String {
    testkit::git(args, repo).trim().to_string()
}

fn tree(repo: &Path) -> BTreeSet<String> {
    git(repo, &["ls-tree", "-r", "--name-only", "main"])
        .lines()
        .map(str::to_string)
        .collect()
}

fn show(repo: &Path, path: &str) -> Option<String> {
    testkit::hermetic_git_command(repo)
        .args(["show", &format!("main:{path}")])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
}

#[test]
fn git_files_changed_or_deleted_by_others_are_restored_in_one_commit() {
    let mut k = kratix();
    k.apply_yaml(
        &git_destination_yaml("state-store.git", "worker-1", "{env: dev}"),
        &["--timeout", "60"],
    )
    .assert_ok();
    fulfil(&k);
    let repo = k.home().join("state-store.git");
    let (a, b) = ours(&tree(&repo));
    let a_content = show(&repo, &a).expect("a.yaml written");
    let b_content = show(&repo, &b).expect("b.yaml written");
    k.start_serve();

    // Someone else changes one of our files, deletes the other and adds their own.
    let clone_dir = tempfile::tempdir().expect("a folder");
    let url = repo.display().to_string();
    testkit::git(
        &["clone", "-q", "-b", "main", &url, "clone"],
        clone_dir.path(),
    );
    let clone = clone_dir.path().join("clone");
    std::fs::write(clone.join(&a), "changed by hand\n").expect("change a.yaml");
    std::fs::remove_file(clone.join(&b)).expect("delete b.yaml");
    std::fs::write(clone.join("theirs.yaml"), "their own\n").expect("their file");
    git(&clone, &["add", "-A"]);
    git(&clone, &["commit", "-q", "-m", "someone else"]);
    git(&clone, &["push", "-q", "origin", "main"]);
    let theirs = git(&clone, &["rev-parse", "HEAD"]);

    eventually("our files restored", WAIT, || {
        (show(&repo, &a).as_deref() == Some(a_content.as_str())
            && show(&repo, &b).as_deref() == Some(b_content.as_str()))
        .then_some(())
    });
    let range = format!("{theirs}..main");
    assert_eq!(
        git(&repo, &["rev-list", "--count", &range]),
        "1",
        "one commit restores both"
    );
    let restored: BTreeSet<String> = git(&repo, &["diff", "--name-only", &theirs, "main"])
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(restored, BTreeSet::from([a.clone(), b.clone()]));
    assert_eq!(show(&repo, "theirs.yaml").as_deref(), Some("their own\n"));

    // Several intervals with nothing drifted: no commit, and the placements stay as they are.
    let placements = || {
        k.list_json("workplacements", &["-A"])
            .iter()
            .map(|p| p["metadata"]["resourceVersion"].clone())
            .collect::<Vec<_>>()
    };
    let tip = git(&repo, &["rev-parse", "main"]);
    eventually("the placement records the restoring commit", WAIT, || {
        k.list_json("workplacements", &["-A"])
            .iter()
            .any(|p| p["status"]["versionID"] == tip.as_str())
            .then_some(())
    });
    let before = placements();
    std::thread::sleep(Duration::from_secs(6));
    assert_eq!(git(&repo, &["rev-list", "--count", &range]), "1");
    assert_eq!(
        placements(),
        before,
        "no status written for an unchanged store"
    );
}

#[test]
fn bucket_objects_changed_or_deleted_by_others_are_restored() {
    let server = S3Server::shared();
    let bucket = server.new_bucket();
    let mut k = kratix();
    let platform = json!([
        {"apiVersion": "v1", "kind": "Secret",
         "metadata": {"name": "garage", "namespace": "default"},
         "stringData": {"accessKeyID": server.key.id, "secretAccessKey": server.key.secret}},
        {"apiVersion": "platform.kratix.io/v1alpha1", "kind": "BucketStateStore",
         "metadata": {"name": "bucket"},
         "spec": {"endpoint": server.s3_endpoint, "bucketName": bucket, "insecure": true,
                  "authMethod": "accessKey",
                  "secretRef": {"name": "garage", "namespace": "default"}}},
        {"apiVersion": "platform.kratix.io/v1alpha1", "kind": "Destination",
         "metadata": {"name": "worker-1"},
         "spec": {"path": "worker-1",
                  "stateStoreRef": {"kind": "BucketStateStore", "name": "bucket"}}},
    ]);
    let documents: Vec<String> = platform
        .as_array()
        .expect("a list")
        .iter()
        .map(std::string::ToString::to_string)
        .collect();
    k.apply_yaml(&documents.join("\n---\n"), &["--timeout", "60"])
        .assert_ok();
    fulfil(&k);
    let inspector = BucketInspector::new(server, &bucket);
    let (a, b) = ours(&inspector.keys());
    let a_content = inspector.get(&a);
    let b_content = inspector.get(&b);
    k.start_serve();

    inspector.put(&a, "changed by hand\n".into());
    inspector.delete(&b);
    inspector.put("theirs.yaml", "their own\n".into());

    eventually("our objects restored", WAIT, || {
        let keys = inspector.keys();
        (keys.contains(&b) && inspector.get(&a) == a_content && inspector.get(&b) == b_content)
            .then_some(())
    });
    assert_eq!(inspector.get("theirs.yaml"), "their own\n");
    // Nothing drifted since: nothing is uploaded again.
    let written = |key: &str| inspector.head(key).last_modified;
    let before = (written(&a), written(&b));
    std::thread::sleep(Duration::from_secs(5));
    assert_eq!((written(&a), written(&b)), before);
}
