//! The platform Destination through the binary, on a Git store served by `git daemon` and on a
//! bucket store on a real S3 server (testkit::s3): a compound Promise whose promise workflow
//! writes a sub-Promise (`dependencies/`) and whose resource workflow writes a sub-request
//! (`resources/`) for the Destination annotated `kratix-rs.io/apply-to-platform`, which applies
//! them back into the platform: the sub-Promise becomes Available, the sub-request runs its own
//! pipeline to its own Destination, what leaves the store is pruned, a broken document is named
//! while the rest applies, a person's label survives, drift is repaired, and what it did not
//! make is never touched. The scenario is one function; the store is its parameter.

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};
use support::bucket::BucketInspector;
use support::{condition, condition_is, eventually, Kratix};
use testkit::s3::S3Server;

const WAIT: Duration = Duration::from_secs(180);

/// The store every Destination of a test is written to, and a way to change it by hand.
enum Store {
    /// A bare repository served by `git daemon`; files are those of `main`.
    Git {
        _daemon: testkit::GitDaemon,
        bare: PathBuf,
        url: String,
    },
    /// A fresh bucket on the shared S3 server; the store has no `path`, so keys are the
    /// Destinations' paths.
    Bucket {
        bucket: String,
        inspector: BucketInspector,
    },
}

impl Store {
    fn git() -> Self {
        let daemon = testkit::GitDaemon::start().expect("git daemon on loopback");
        let bare = daemon.bare_repo("state.git").expect("a bare repository");
        let url = daemon.url("state.git");
        Store::Git {
            _daemon: daemon,
            bare,
            url,
        }
    }

    fn bucket() -> Self {
        let server = S3Server::shared();
        let bucket = server.new_bucket();
        let inspector = BucketInspector::new(server, &bucket);
        Store::Bucket { bucket, inspector }
    }

    /// The store object `default` (and, for a bucket, its credentials).
    fn yaml(&self) -> String {
        match self {
            Store::Git { url, .. } => format!(
                r#"apiVersion: platform.kratix.io/v1alpha1
kind: GitStateStore
metadata: {{name: default}}
spec: {{url: "{url}", branch: main}}
"#
            ),
            Store::Bucket { bucket, .. } => {
                let server = S3Server::shared();
                format!(
                    r#"apiVersion: v1
kind: Secret
metadata: {{name: bucket-credentials, namespace: default}}
type: Opaque
stringData: {{accessKeyID: "{id}", secretAccessKey: "{secret}"}}
---
apiVersion: platform.kratix.io/v1alpha1
kind: BucketStateStore
metadata: {{name: default}}
spec:
  endpoint: "{endpoint}"
  bucketName: {bucket}
  insecure: true
  authMethod: accessKey
  secretRef: {{name: bucket-credentials, namespace: default}}
"#,
                    id = server.key.id,
                    secret = server.key.secret,
                    endpoint = server.s3_endpoint,
                )
            }
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Store::Git { .. } => "GitStateStore",
            Store::Bucket { .. } => "BucketStateStore",
        }
    }

    /// Every file the store holds: those of `main`, or the bucket's keys.
    fn files(&self) -> Vec<String> {
        match self {
            Store::Git { bare, .. } => {
                testkit::git(&["ls-tree", "-r", "--name-only", "main"], bare)
                    .lines()
                    .map(str::to_string)
                    .collect()
            }
            Store::Bucket { inspector, .. } => inspector.keys().into_iter().collect(),
        }
    }

    /// Writes each `(path, content)` behind kratix-rs's back (one commit on Git).
    fn write_by_hand(&self, files: &[(&str, &str)]) {
        match self {
            Store::Git { url, .. } => push(url, "written by hand", |clone| {
                for (path, content) in files {
                    let file = clone.join(path);
                    if let Some(dir) = file.parent() {
                        std::fs::create_dir_all(dir).expect("mkdir");
                    }
                    std::fs::write(file, content).expect("write");
                }
            }),
            Store::Bucket { inspector, .. } => {
                for (path, content) in files {
                    inspector.put(path, content.to_string());
                }
            }
        }
    }

    /// Removes the file at `path` behind kratix-rs's back.
    fn remove_by_hand(&self, path: &str) {
        match self {
            Store::Git { url, .. } => push(url, "removed by hand", |clone| {
                std::fs::remove_file(clone.join(path)).expect("remove");
            }),
            Store::Bucket { inspector, .. } => inspector.delete(path),
        }
    }
}

/// `store`, then the Destinations on it: `platform` (applied back, `environment: platform`,
/// strict) and `worker-1` (`env: dev`).
fn platform_yaml(store: &Store) -> String {
    let kind = store.kind();
    format!(
        r#"{store}---
apiVersion: platform.kratix.io/v1alpha1
kind: Destination
metadata:
  name: platform
  labels: {{environment: platform}}
  annotations: {{kratix-rs.io/apply-to-platform: "true"}}
spec:
  path: platform
  strictMatchLabels: true
  stateStoreRef: {{kind: {kind}, name: default}}
---
apiVersion: platform.kratix.io/v1alpha1
kind: Destination
metadata:
  name: worker-1
  labels: {{env: dev}}
spec:
  path: worker-1
  stateStoreRef: {{kind: {kind}, name: default}}
"#,
        store = store.yaml()
    )
}

/// A Promise of kind `kind` (group `test.kratix.io`) with the given workflows and selectors.
fn promise(name: &str, kind: &str, plural: &str, selectors: Value, workflows: Value) -> Value {
    json!({
        "apiVersion": "platform.kratix.io/v1alpha1",
        "kind": "Promise",
        "metadata": {"name": name},
        "spec": {
            "destinationSelectors": selectors,
            "api": {
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": format!("{plural}.test.kratix.io")},
                "spec": {
                    "group": "test.kratix.io",
                    "names": {"kind": kind, "plural": plural, "singular": name},
                    "scope": "Namespaced",
                    "versions": [{
                        "name": "v1alpha1", "served": true, "storage": true,
                        "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                            "spec": {"type": "object", "properties": {
                                "size": {"type": "integer"},
                            }},
                        }}},
                    }],
                },
            },
            "workflows": workflows,
        },
    })
}

fn pipeline(name: &str, script: &str) -> Value {
    json!({
        "apiVersion": "platform.kratix.io/v1alpha1",
        "kind": "Pipeline",
        "metadata": {"name": name},
        "spec": {"containers": [{
            "name": "main", "image": "local/sh", "command": ["sh", "-c", script],
        }]},
    })
}

/// The sub-Promise `child` (kind `Child`), placed on `env: dev`: one pipeline rendering a
/// ConfigMap.
fn child_promise() -> Value {
    let render = r#"out="${KRATIX_OUTPUT_DIR:-/kratix/output}"
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: default\n' "$KRATIX_OBJECT_NAME" > "$out/cm.yaml""#;
    promise(
        "child",
        "Child",
        "children",
        json!([{"matchLabels": {"env": "dev"}}]),
        json!({"resource": {"configure": [pipeline("render", render)]}}),
    )
}

/// The compound Promise `parent` (kind `Parent`), placed on the platform: its promise workflow
/// writes the sub-Promise, its resource workflow a `Child` of the request's name.
fn parent_promise() -> String {
    let child = serde_json::to_string(&child_promise()).expect("JSON");
    let write_promise = format!(
        "out=\"${{KRATIX_OUTPUT_DIR:-/kratix/output}}\"\ncat > \"$out/child-promise.yaml\" <<'YAML'\n{child}\nYAML"
    );
    let write_request = r#"out="${KRATIX_OUTPUT_DIR:-/kratix/output}"
cat > "$out/child.yaml" <<YAML
apiVersion: test.kratix.io/v1alpha1
kind: Child
metadata:
  name: $KRATIX_OBJECT_NAME
  namespace: $KRATIX_OBJECT_NAMESPACE
  labels:
    kratix.io/component-of-promise-name: parent
    kratix.io/component-of-resource-name: $KRATIX_OBJECT_NAME
    kratix.io/component-of-resource-namespace: $KRATIX_OBJECT_NAMESPACE
spec:
  size: 1
YAML"#;
    promise(
        "parent",
        "Parent",
        "parents",
        json!([{"matchLabels": {"environment": "platform"}}]),
        json!({
            "promise": {"configure": [pipeline("make-child-promise", &write_promise)]},
            "resource": {"configure": [pipeline("make-child", write_request)]},
        }),
    )
    .to_string()
}

fn parent_request(name: &str) -> String {
    json!({
        "apiVersion": "test.kratix.io/v1alpha1",
        "kind": "Parent",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"size": 1},
    })
    .to_string()
}

fn platform_destination(k: &Kratix) -> Value {
    k.get_json("destination", "platform", None)
        .expect("the platform Destination")
}

/// Commits a change made by `change` in a fresh clone and pushes it, again on a new clone when
/// the branch moved meanwhile.
fn push(url: &str, what: &str, change: impl Fn(&Path)) {
    for _ in 0..20 {
        let dir = tempfile::tempdir().expect("a folder");
        testkit::git(&["clone", "-q", "-b", "main", url, "c"], dir.path());
        let clone: PathBuf = dir.path().join("c");
        change(&clone);
        testkit::git(&["add", "-A"], &clone);
        testkit::git(&["commit", "-q", "-m", what], &clone);
        let pushed = testkit::hermetic_git_command(&clone)
            .args(["push", "-q", "origin", "main"])
            .status()
            .expect("git push runs");
        if pushed.success() {
            return;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("could not push {what}");
}

fn child_exists(k: &Kratix, name: &str) -> Option<Value> {
    k.get_json("child", name, Some("default"))
}

#[test]
fn a_compound_promise_is_applied_back_into_the_platform_from_git() {
    compound_promise_applied_back(&Store::git());
}

#[test]
fn a_compound_promise_is_applied_back_into_the_platform_from_a_bucket() {
    compound_promise_applied_back(&Store::bucket());
}

/// The parent/child scenario on `store`: every file the sync applies is read back from it.
fn compound_promise_applied_back(store: &Store) {
    let mut k = Kratix::new().with_env("KRATIX_PLATFORM_SYNC_INTERVAL", "1");
    k.start_serve();
    k.apply_yaml(&platform_yaml(store), &["--timeout", "120"])
        .assert_ok();
    k.apply_yaml(&parent_promise(), &["--timeout", "120"])
        .assert_ok();

    // The sub-Promise written to dependencies/ is applied and becomes Available.
    let sub = eventually("the sub-Promise Available", WAIT, || {
        k.get_json("promise", "child", None)
            .filter(|p| p["status"]["status"] == "Available")
    });
    assert_eq!(
        sub["metadata"]["labels"]["kratix-rs.io/platform-destination"],
        "platform"
    );

    // The sub-request written to resources/ is applied and runs its own pipeline to worker-1.
    k.apply_yaml(&parent_request("p1"), &["--timeout", "120"])
        .assert_ok();
    let child = eventually("the sub-request reconciled", WAIT, || {
        child_exists(&k, "p1").filter(|c| condition_is(c, "Reconciled", "True"))
    });
    assert_eq!(
        child["metadata"]["labels"]["kratix.io/component-of-resource-name"],
        "p1"
    );
    eventually("the sub-request's file on worker-1", WAIT, || {
        store.files().into_iter().find(|f| {
            f.starts_with("worker-1/resources/default/child/p1/") && f.ends_with("/cm.yaml")
        })
    });
    // The canaries are applied too: they are Kratix's Namespace and ConfigMap.
    eventually("the platform in sync", WAIT, || {
        let dest = platform_destination(&k);
        condition_is(&dest, "PlatformSynced", "True").then_some(dest)
    });
    assert!(k
        .get_json("namespace", "kratix-worker-system", None)
        .is_some());

    // A person's label on an applied object survives the next syncs.
    k.run(&["label", "child", "p1", "team=platform"])
        .assert_ok();
    k.apply_yaml(&parent_request("p2"), &["--timeout", "120"])
        .assert_ok();
    eventually("the second sub-request", WAIT, || child_exists(&k, "p2"));

    // `tree` and `describe` of the parent show the sub-request down to its commit and files.
    let tree = eventually("the compound tree", WAIT, || {
        let tree = k.run(&["tree", "parent", "p2"]);
        tree.assert_ok();
        tree.stdout
            .contains("worker-1/resources/default/child/p2/")
            .then_some(tree.stdout)
    });
    assert!(tree.contains("Child/default/p2"), "{tree}");
    assert!(tree.contains("PipelineRun/child-p2-render"), "{tree}");
    let described = k.run(&["describe", "parent", "p2"]);
    described.assert_ok();
    assert!(
        described.stdout.contains("Sub-requests:") && described.stdout.contains("Child/default/p2"),
        "{}",
        described.stdout
    );
    std::thread::sleep(Duration::from_secs(3));
    let p1 = child_exists(&k, "p1").expect("p1 stays");
    assert_eq!(p1["metadata"]["labels"]["team"], "platform");

    // A broken document written by hand is named on the Destination; the rest still applies.
    store.write_by_hand(&[("platform/resources/broken.yaml", "a: [\n")]);
    let dest = eventually("the broken document named", WAIT, || {
        let dest = platform_destination(&k);
        condition(&dest, "PlatformSynced")
            .filter(|c| c["status"] == "False")
            .filter(|c| {
                c["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("platform/resources/broken.yaml"))
            })
            .map(|_| dest.clone())
    });
    assert_eq!(
        condition(&dest, "PlatformSynced").expect("the condition")["reason"],
        "Unparseable"
    );
    assert!(child_exists(&k, "p1").is_some());

    // Drift: the sub-request deleted by hand comes back within the interval (the broken file
    // holds pruning, not applying).
    k.run(&["delete", "child", "p1", "--timeout", "120"])
        .assert_ok();
    eventually("the deleted sub-request made again", WAIT, || {
        child_exists(&k, "p1").filter(|c| c["metadata"]["uid"] != p1["metadata"]["uid"])
    });
    store.remove_by_hand("platform/resources/broken.yaml");
    eventually("the platform in sync again", WAIT, || {
        condition_is(&platform_destination(&k), "PlatformSynced", "True").then_some(())
    });

    // Deleting the parent request prunes its sub-request and the sub-request's files.
    k.run(&["delete", "parent", "p1", "--timeout", "120"])
        .assert_ok();
    eventually("the sub-request pruned", WAIT, || {
        child_exists(&k, "p1").is_none().then_some(())
    });
    eventually("the sub-request's files gone", WAIT, || {
        (!store
            .files()
            .iter()
            .any(|f| f.starts_with("worker-1/resources/default/child/p1/")))
        .then_some(())
    });

    // Deleting the parent Promise removes its requests, their sub-requests and the sub-Promise.
    k.run(&["delete", "promise", "parent", "--timeout", "180"])
        .assert_ok();
    eventually("the sub-Promise pruned", WAIT, || {
        k.get_json("promise", "child", None).is_none().then_some(())
    });
    assert!(child_exists(&k, "p2").is_none());
    let events = k.run(&["events", "destination", "platform"]);
    events.assert_ok();
    assert!(
        events.stdout.contains("PlatformPruned"),
        "{}",
        events.stdout
    );
}

#[test]
fn what_the_sync_did_not_make_is_a_conflict_and_cluster_kinds_are_reported() {
    let store = Store::git();
    let mut k = Kratix::new().with_env("KRATIX_PLATFORM_SYNC_INTERVAL", "1");
    // Someone's own ConfigMap, of the name a file in the platform's folder will give.
    k.apply_yaml(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: default}\ndata: {owner: someone}\n",
        &[],
    )
    .assert_ok();
    k.start_serve();
    k.apply_yaml(&platform_yaml(&store), &["--timeout", "120"])
        .assert_ok();
    store.write_by_hand(&[
        (
            "platform/resources/a-settings.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: default}\ndata: {owner: platform}\n",
        ),
        (
            "platform/resources/b-app.yaml",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: app, namespace: default}\n",
        ),
    ]);
    let message = eventually("the conflict named", WAIT, || {
        let dest = platform_destination(&k);
        condition(&dest, "PlatformSynced")
            .filter(|c| c["reason"] == "Conflict")
            .and_then(|c| c["message"].as_str().map(str::to_string))
    });
    assert!(
        message.contains("platform/resources/a-settings.yaml document 1")
            && message.contains("ConfigMap default/settings exists"),
        "{message}"
    );
    let theirs = k
        .get_json("configmap", "settings", Some("default"))
        .expect("their ConfigMap");
    assert_eq!(theirs["data"]["owner"], "someone");
    let dest = platform_destination(&k);
    assert_eq!(dest["status"]["platformSync"]["failed"], 2, "{dest}");

    // Once theirs is gone, the platform's applies; the Deployment stays reported.
    k.run(&["delete", "configmap", "settings"]).assert_ok();
    let message = eventually("the Deployment reported", WAIT, || {
        let dest = platform_destination(&k);
        condition(&dest, "PlatformSynced")
            .filter(|c| c["reason"] == "NotServedHere")
            .and_then(|c| c["message"].as_str().map(str::to_string))
    });
    assert!(
        message.contains("platform/resources/b-app.yaml document 1 (Deployment app)"),
        "{message}"
    );
    let ours = k
        .get_json("configmap", "settings", Some("default"))
        .expect("the platform's ConfigMap");
    assert_eq!(ours["data"]["owner"], "platform");
}

#[test]
fn deleting_a_platform_destination_prunes_what_it_applied_only_with_cleanup_all() {
    let store = Store::git();
    let mut k = Kratix::new().with_env("KRATIX_PLATFORM_SYNC_INTERVAL", "1");
    let configmap = |name: &str, owner: &str| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: default}}\ndata: {{owner: {owner}}}\n")
    };
    // Someone's own ConfigMap, which a file of the deleted Destination's folder also names.
    k.apply_yaml(&configmap("theirs", "someone"), &[])
        .assert_ok();
    k.start_serve();
    let kind = store.kind();
    let destination = |name: &str, spec: &str| {
        format!(
            "apiVersion: platform.kratix.io/v1alpha1\nkind: Destination\nmetadata:\n  name: {name}\n  annotations: {{kratix-rs.io/apply-to-platform: \"true\"}}\nspec:\n  path: {name}\n  stateStoreRef: {{kind: {kind}, name: default}}\n{spec}"
        )
    };
    let yaml = format!(
        "{}---\n{}---\n{}",
        store.yaml(),
        destination("cleans", "  cleanup: all\n"),
        // Without canaries: both would apply Kratix's Namespace, and only one may hold it.
        destination("keeps", "  initWorkloads: {enabled: false}\n"),
    );
    k.apply_yaml(&yaml, &["--timeout", "120"]).assert_ok();
    store.write_by_hand(&[
        (
            "cleans/resources/cleaned.yaml",
            &configmap("cleaned", "cleans"),
        ),
        (
            "cleans/resources/theirs.yaml",
            &configmap("theirs", "cleans"),
        ),
        ("keeps/resources/kept.yaml", &configmap("kept", "keeps")),
    ]);
    let applied_by = |name: &str| {
        k.get_json("configmap", name, Some("default"))
            .and_then(|cm| {
                cm["metadata"]["labels"]["kratix-rs.io/platform-destination"]
                    .as_str()
                    .map(str::to_string)
            })
    };
    eventually("both folders applied", WAIT, || {
        (applied_by("cleaned").as_deref() == Some("cleans")
            && applied_by("kept").as_deref() == Some("keeps"))
        .then_some(())
    });
    let cleans = k
        .get_json("destination", "cleans", None)
        .expect("the Destination");
    let inventory = cleans["status"]["platformSync"]["inventory"].to_string();
    assert!(
        inventory.contains("cleaned") && inventory.contains("kratix-worker-system"),
        "{inventory}"
    );

    // With cleanup: all, what it applied goes with it; what it did not make stays.
    k.run(&["delete", "destination", "cleans", "--timeout", "120"])
        .assert_ok();
    assert!(k.get_json("destination", "cleans", None).is_none());
    assert!(k
        .get_json("configmap", "cleaned", Some("default"))
        .is_none());
    assert!(k
        .get_json("namespace", "kratix-worker-system", None)
        .is_none());
    let theirs = k
        .get_json("configmap", "theirs", Some("default"))
        .expect("their ConfigMap stays");
    assert_eq!(theirs["data"]["owner"], "someone");

    // Without it, the files stay in the store and their objects on the platform.
    k.run(&["delete", "destination", "keeps", "--timeout", "120"])
        .assert_ok();
    assert!(k.get_json("destination", "keeps", None).is_none());
    assert_eq!(applied_by("kept").as_deref(), Some("keeps"));
    assert!(store
        .files()
        .iter()
        .any(|f| f == "keeps/resources/kept.yaml"));
}
