//! `apply` merges as `kubectl apply` does, through the `kratix-rs` binary: what the file sets
//! wins, what it set last time and no longer sets goes, what it never set (labels of `label`,
//! annotations of `annotate`, a pause, defaults) stays; lists are replaced whole. The history is
//! kubectl's last-applied annotation, so an object moved to a Kubernetes API server keeps it
//! (the test against a control plane of scripts/testworld, run with `--ignored`).

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::things::{self, runs, step_command};
use support::{condition, eventually, git_destination_yaml, Kratix};
use testkit::git;

const PATIENCE: Duration = Duration::from_secs(60);
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The Promise `thing` of the other tests, its kind `Thing` given `spec.size` (default 1,
/// which its one `step.sh` pipeline `a` writes to the state store), `spec.color`, `spec.ports`
/// (a list) and `spec.tags` (a map).
fn promise() -> String {
    let workflows = json!({"resource": {"configure": [things::pipeline("a", &step_command())]}});
    let mut promise: Value =
        serde_json::from_str(&things::promise_with_workflows(workflows)).expect("promise JSON");
    let ports = json!({"type": "array", "items": {"type": "object", "properties": {
        "name": {"type": "string"}, "port": {"type": "integer"}}}});
    let tags = json!({"type": "object", "additionalProperties": {"type": "string"}});
    promise["spec"]["api"]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
        ["spec"]["properties"] = json!({
        "size": {"type": "integer", "default": 1},
        "color": {"type": "string"},
        "ports": ports,
        "tags": tags,
    });
    promise.to_string()
}

/// The request `x` in namespace `default` with `metadata` and `spec` as given.
fn app(metadata: Value, spec: Value) -> String {
    let mut metadata = metadata;
    metadata["name"] = json!("x");
    json!({"apiVersion": "test.kratix.io/v1alpha1", "kind": "Thing", "metadata": metadata, "spec": spec})
        .to_string()
}

/// Applies without waiting (no controllers run, so only `apply` writes); returns its verb.
#[track_caller]
fn apply(k: &Kratix, yaml: &str) -> String {
    let run = k.apply_yaml(yaml, &["--no-wait"]);
    run.assert_ok();
    run.stdout.trim().to_string()
}

fn x(k: &Kratix) -> Value {
    k.get_json("thing", "x", None).expect("app x")
}

fn labels(obj: &Value) -> Value {
    obj["metadata"]["labels"].clone()
}

/// The annotations but the last-applied one.
fn annotations(obj: &Value) -> Value {
    let mut a = obj["metadata"]["annotations"].clone();
    if let Some(map) = a.as_object_mut() {
        map.remove(LAST_APPLIED);
    }
    a
}

#[test]
fn labels_the_file_drops_go_and_labels_and_annotations_others_set_stay() {
    let k = Kratix::new();
    apply(&k, &promise());
    let file = app(
        json!({"labels": {"team": "a", "tier": "web"}, "annotations": {"note": "one"}}),
        json!({"color": "red"}),
    );
    assert_eq!(apply(&k, &file), "thing/x created");
    k.run(&["label", "thing", "x", "extra=1"]).assert_ok();
    k.run(&["annotate", "thing", "x", "owner=ops"]).assert_ok();

    assert_eq!(
        apply(&k, &file),
        "thing/x unchanged",
        "defaults are not the file's"
    );
    let obj = x(&k);
    assert_eq!(
        labels(&obj),
        json!({"team": "a", "tier": "web", "extra": "1", "kratix.io/promise-name": "thing"})
    );
    assert_eq!(annotations(&obj), json!({"note": "one", "owner": "ops"}));
    assert_eq!(obj["spec"], json!({"color": "red", "size": 1}));

    // The file drops a label and its annotation and changes another label.
    let edited = app(
        json!({"labels": {"team": "b"}}),
        json!({"color": "red", "size": 3}),
    );
    assert_eq!(apply(&k, &edited), "thing/x configured");
    let obj = x(&k);
    assert_eq!(
        labels(&obj),
        json!({"team": "b", "extra": "1", "kratix.io/promise-name": "thing"}),
        "tier went with the file; extra (label) and the Promise's label stay"
    );
    assert_eq!(
        annotations(&obj),
        json!({"owner": "ops"}),
        "note went with the file; owner (annotate) stays"
    );
    assert_eq!(obj["spec"], json!({"color": "red", "size": 3}));
    assert_eq!(apply(&k, &edited), "thing/x unchanged");

    // A field the file set and dropped goes, and its default comes back.
    let no_size = app(json!({"labels": {"team": "b"}}), json!({"color": "red"}));
    assert_eq!(apply(&k, &no_size), "thing/x configured");
    assert_eq!(x(&k)["spec"], json!({"color": "red", "size": 1}));
    assert_eq!(apply(&k, &no_size), "thing/x unchanged");
}

#[test]
fn lists_are_replaced_whole_and_maps_merge_key_by_key() {
    let k = Kratix::new();
    apply(&k, &promise());
    let first = app(
        json!({}),
        json!({"ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}],
               "tags": {"a": "1", "b": "2"}}),
    );
    apply(&k, &first);
    let second = app(
        json!({}),
        json!({"ports": [{"name": "http", "port": 8080}], "tags": {"a": "1", "c": "3"}}),
    );
    assert_eq!(apply(&k, &second), "thing/x configured");
    assert_eq!(
        x(&k)["spec"],
        json!({"size": 1, "ports": [{"name": "http", "port": 8080}], "tags": {"a": "1", "c": "3"}}),
        "the list is the file's (not merged by position or name); b went with the file"
    );
    let dropped = app(json!({}), json!({"tags": {"a": "1", "c": "3"}}));
    assert_eq!(apply(&k, &dropped), "thing/x configured");
    assert_eq!(
        x(&k)["spec"],
        json!({"size": 1, "tags": {"a": "1", "c": "3"}})
    );
}

#[test]
fn an_object_without_history_loses_nothing_and_gains_it() {
    let k = Kratix::new();
    apply(&k, &promise());
    apply(
        &k,
        &app(json!({"labels": {"team": "a"}}), json!({"color": "red"})),
    );
    // As if made by something other than apply.
    k.run(&["annotate", "thing", "x", &format!("{LAST_APPLIED}-")])
        .assert_ok();
    assert!(x(&k)["metadata"]["annotations"].get(LAST_APPLIED).is_none());

    let run = k.apply_yaml(&app(json!({}), json!({"color": "blue"})), &["--no-wait"]);
    run.assert_ok();
    assert_eq!(run.stdout.trim(), "thing/x configured");
    assert!(
        run.stderr
            .contains(&format!("had no {LAST_APPLIED} annotation")),
        "{}",
        run.stderr
    );
    let obj = x(&k);
    assert_eq!(
        labels(&obj)["team"],
        "a",
        "nothing is removed without history"
    );
    assert_eq!(obj["spec"]["color"], "blue");
    // From now on the file's history counts.
    let again = k.apply_yaml(&app(json!({}), json!({"color": "blue"})), &["--no-wait"]);
    again.assert_ok();
    assert_eq!(again.stdout.trim(), "thing/x unchanged");
    assert!(!again.stderr.contains("had no"), "{}", again.stderr);
}

/// The file written to the state store for `x` by pipeline `a`, as text.
fn stored_size(k: &Kratix) -> String {
    let repo = k.home().join("state-store.git");
    let repo = repo.to_str().expect("UTF-8 path");
    let files = git(
        &["--git-dir", repo, "ls-tree", "-r", "--name-only", "main"],
        k.home(),
    );
    let path = files
        .lines()
        .find(|f| f.contains("/resources/default/thing/x/a/") && f.ends_with("/a.yaml"))
        .unwrap_or_else(|| panic!("no file of x in {files}"))
        .to_string();
    let text = git(
        &["--git-dir", repo, "show", &format!("main:{path}")],
        k.home(),
    );
    text.lines()
        .find_map(|l| l.trim().strip_prefix("size: "))
        .unwrap_or_else(|| panic!("no size in {text}"))
        .to_string()
}

fn paused(obj: &Value) -> bool {
    condition(obj, "Reconciled").is_some_and(|c| c["reason"] == "PausedReconciliation")
}

/// Every line `apply` or kubectl printed ends with `verb` (one line an object).
#[track_caller]
fn assert_all(out: &str, verb: &str) {
    assert!(
        !out.is_empty() && out.lines().all(|l| l.ends_with(&format!(" {verb}"))),
        "not all {verb}: {out}"
    );
}

#[test]
fn a_pause_set_with_label_survives_a_reapply_of_a_changed_spec() {
    let mut k = Kratix::new();
    k.apply_yaml(
        &git_destination_yaml("state-store.git", "worker-1", "{env: dev}"),
        &["--timeout", "60"],
    )
    .assert_ok();
    k.apply_yaml(&promise(), &["--timeout", "60"]).assert_ok();
    let file = |size: i64, color: &str| app(json!({}), json!({"size": size, "color": color}));
    k.apply_yaml(&file(1, "red"), &["--timeout", "60"])
        .assert_ok();
    assert_eq!(stored_size(&k), "\"1\"");
    let before = runs(&k, "x").len();

    k.start_serve();
    k.run(&["label", "thing", "x", "kratix.io/paused=true"])
        .assert_ok();
    eventually("x to be paused", PATIENCE, || paused(&x(&k)).then_some(()));

    // While paused, diff previews what apply would store: the pause stays, so nothing runs.
    let preview = k.run_with_stdin(&["diff", "-f", "-"], &file(2, "blue"));
    assert!(
        preview.ok() && preview.stdout.is_empty(),
        "diff: {}{}",
        preview.stdout,
        preview.stderr
    );

    assert_eq!(apply(&k, &file(2, "blue")), "thing/x configured");
    let obj = x(&k);
    assert_eq!(labels(&obj)["kratix.io/paused"], "true", "{obj:#}");
    assert_eq!(obj["spec"], json!({"size": 2, "color": "blue"}));
    // The controller stayed paused, and does not claim to have seen the new generation (a
    // short look: the change wakes it at once).
    std::thread::sleep(Duration::from_secs(2));
    let obj = x(&k);
    assert!(paused(&obj), "{obj:#}");
    assert_eq!(
        (
            &obj["metadata"]["generation"],
            &obj["status"]["observedGeneration"]
        ),
        (&json!(2), &json!(1)),
        "{obj:#}"
    );
    assert_eq!(runs(&k, "x").len(), before, "nothing ran while paused");
    assert_eq!(stored_size(&k), "\"1\"");

    k.run(&["label", "thing", "x", "kratix.io/paused-"])
        .assert_ok();
    eventually("x to be reconciled with the new spec", PATIENCE, || {
        let obj = x(&k);
        let current = obj["status"]["observedGeneration"] == obj["metadata"]["generation"];
        let done = current
            && condition(&obj, "Reconciled").is_some_and(|c| c["status"] == "True")
            && stored_size(&k) == "\"2\"";
        done.then_some(())
    });
    assert!(runs(&k, "x").len() > before);
}

// ---------------------------------------------------------------------------------------------
// kubectl reads the history kratix-rs keeps, and the other way round.
// ---------------------------------------------------------------------------------------------

/// A GitStateStore, a Destination and a (namespaced) Work, with labels, annotations and some
/// defaulted fields left out, as a user would write them.
const OBJECTS: &str = r#"apiVersion: platform.kratix.io/v1alpha1
kind: GitStateStore
metadata:
  name: moved
  labels: {team: a}
  annotations: {note: "a <b> & c"}
spec:
  url: https://git.example.com/state.git
  secretRef: {name: git, namespace: default}
---
apiVersion: platform.kratix.io/v1alpha1
kind: Destination
metadata: {name: moved, labels: {env: dev, tier: web}}
spec: {path: moved, stateStoreRef: {kind: GitStateStore, name: moved}}
---
apiVersion: platform.kratix.io/v1alpha1
kind: Work
metadata:
  name: moved
spec:
  promiseName: p
  workloadGroups:
    - id: g
      directory: .
      workloads: [{filepath: a.yaml, content: "x"}]
"#;

/// Each kind of [`OBJECTS`] as `get` names it, and where the API server keeps it.
const KINDS: [(&str, &str); 3] = [
    ("gitstatestore", "gitstatestores"),
    ("destination", "destinations"),
    ("work", "namespaces/default/works"),
];

/// An object as `get -o json` prints it, made ready for `kubectl create`: without what the API
/// server owns (identity, timestamps, status), with every label and annotation (the history
/// included).
fn exported(obj: &Value) -> Value {
    let mut obj = obj.clone();
    if let Some(map) = obj.as_object_mut() {
        map.remove("status");
    }
    if let Some(meta) = obj["metadata"].as_object_mut() {
        for field in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "generation",
            "managedFields",
        ] {
            meta.remove(field);
        }
    }
    obj
}

fn kratix_object(k: &Kratix, kind: &str) -> Value {
    k.get_json(kind, "moved", None)
        .unwrap_or_else(|| panic!("{kind} moved"))
}

#[test]
#[ignore = "starts a real control plane with scripts/testworld: run with --ignored (scripts/test.sh does)"]
fn kubectl_and_kratix_rs_read_each_others_history() {
    let Some(env) = support::kube::TestEnv::start() else {
        return;
    };
    let k = Kratix::new();
    assert_all(&apply(&k, OBJECTS), "created");

    // Moved to the cluster with their history, as a backup tool moves objects: through the
    // API, as they are (`kubectl create` would write its own annotation over it).
    for (kind, resource) in KINDS {
        let obj = exported(&kratix_object(&k, kind));
        let path = format!("/apis/platform.kratix.io/v1alpha1/{resource}");
        env.kubectl(&["create", "--raw", &path, "-f", "-"], &obj.to_string());
    }
    // kubectl finds the file applied already: its annotation is byte for byte what kubectl
    // writes, and the merge from it changes nothing.
    let diff = env.try_kubectl(&["diff", "-f", "-"], OBJECTS);
    assert_eq!(diff.as_deref(), Ok(""), "kubectl diff");
    let out = env.kubectl(&["apply", "-f", "-"], OBJECTS);
    assert_eq!(out.lines().count(), 3, "{out}");
    assert_all(&out, "unchanged");

    // Others' changes on both sides, then the same edit applied by each.
    env.kubectl(&["label", "destination", "moved", "extra=1"], "");
    k.run(&["label", "destination", "moved", "extra=1"])
        .assert_ok();
    env.kubectl(&["annotate", "gitstatestore", "moved", "owner=ops"], "");
    k.run(&["annotate", "gitstatestore", "moved", "owner=ops"])
        .assert_ok();
    let edited = OBJECTS
        .replace("labels: {env: dev, tier: web}", "labels: {env: prod}")
        .replace("  annotations: {note: \"a <b> & c\"}\n", "")
        .replace("path: moved", "path: elsewhere")
        .replace(
            "workloads: [{filepath: a.yaml, content: \"x\"}]",
            "workloads: [{filepath: b.yaml, content: \"y\"}]",
        );
    assert_all(&env.kubectl(&["apply", "-f", "-"], &edited), "configured");
    assert_all(&apply(&k, &edited), "configured");
    for (kind, _) in KINDS {
        let ours = kratix_object(&k, kind);
        let theirs = env
            .get_json(kind, "moved", Some("default"))
            .unwrap_or_else(|| panic!("{kind} on the cluster"));
        for field in ["/metadata/labels", "/metadata/annotations", "/spec"] {
            assert_eq!(
                ours.pointer(field),
                theirs.pointer(field),
                "{kind} {field}: kratix-rs {ours:#} kubectl {theirs:#}"
            );
        }
    }
    // Each side's re-apply is a no-op.
    assert_all(&env.kubectl(&["apply", "-f", "-"], &edited), "unchanged");
    assert_all(&apply(&k, &edited), "unchanged");
}
