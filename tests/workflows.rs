//! The workflow engine end to end, through the `kratix-rs` binary: pipelines
//! run in order, one at a time, once each; updates, pipeline list changes, manual reconciliation,
//! failures, delete workflows, the pipeline contract, output checks, status, and a crash.
//!
//! Pipelines are the shell scripts of `fixtures/workflows/scripts`. Order is read from the
//! PipelineRuns' stored `spec.sequence` and their start and completion times, never from how long
//! anything took.

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};
use support::things::{runs, RunInfo};
use support::{condition, eventually, fixtures, git_destination_yaml, Kratix};
use testkit::git;

const PROMISE: &str = "thing";
const KIND: &str = "things";
/// Generous bound for anything a test waits for.
const PATIENCE: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------------------------------------
// Fixtures: Promises built from pipelines that run the fixture scripts.
// ---------------------------------------------------------------------------------------------

fn scripts_dir() -> PathBuf {
    support::sandbox_fixtures("workflows/scripts")
}

/// A fixture YAML file with `@SCRIPTS@` replaced by the scripts' absolute path.
fn fixture_yaml(name: &str) -> String {
    let text = std::fs::read_to_string(fixtures().join("workflows").join(name)).expect("fixture");
    text.replace("@SCRIPTS@", &scripts_dir().display().to_string())
}

/// A container that runs one fixture script with `args` and extra environment.
fn container(name: &str, script: &str, args: &[&str], env: &[(&str, &str)]) -> Value {
    let script = scripts_dir().join(script);
    let mut command = vec![json!("sh"), json!(script.display().to_string())];
    command.extend(args.iter().map(|a| json!(a)));
    let env: Vec<Value> = env
        .iter()
        .map(|(k, v)| json!({"name": k, "value": v}))
        .collect();
    json!({"name": name, "image": "local/sh", "command": command, "env": env})
}

fn pipeline(name: &str, containers: Vec<Value>) -> Value {
    json!({
        "apiVersion": "platform.kratix.io/v1alpha1",
        "kind": "Pipeline",
        "metadata": {"name": name},
        "spec": {"containers": containers},
    })
}

/// A pipeline of one container running `script`.
fn pipe(name: &str, script: &str, args: &[&str], env: &[(&str, &str)]) -> Value {
    pipeline(name, vec![container("main", script, args, env)])
}

/// A pipeline that renders `<name>.yaml` (see `step.sh`).
fn step(name: &str) -> Value {
    pipe(name, "step.sh", &[], &[])
}

#[derive(Default)]
struct Workflows {
    resource_configure: Vec<Value>,
    resource_delete: Vec<Value>,
    promise_configure: Vec<Value>,
    promise_delete: Vec<Value>,
}

impl Workflows {
    fn configure(pipelines: Vec<Value>) -> Self {
        Self {
            resource_configure: pipelines,
            ..Self::default()
        }
    }
}

/// The Promise `thing`, defining kind `Thing` (`spec.size`, `spec.mode`), as JSON (which is YAML).
fn promise(w: &Workflows) -> String {
    let mut workflows = json!({});
    for (ty, action, list) in [
        ("resource", "configure", &w.resource_configure),
        ("resource", "delete", &w.resource_delete),
        ("promise", "configure", &w.promise_configure),
        ("promise", "delete", &w.promise_delete),
    ] {
        if !list.is_empty() {
            workflows[ty][action] = json!(list);
        }
    }
    support::things::promise_with_workflows(workflows)
}

/// A `Thing` request in namespace `default`.
fn request(name: &str, spec: Value) -> String {
    json!({
        "apiVersion": "test.kratix.io/v1alpha1",
        "kind": "Thing",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    })
    .to_string()
}

fn sized(name: &str, size: i64) -> String {
    request(name, json!({"size": size}))
}

/// A home with a Git state store (`state-store.git` in the home) and Destination `worker-1`.
fn platform(k: &Kratix) {
    k.apply_yaml(
        &git_destination_yaml("state-store.git", "worker-1", "{env: dev}"),
        &["--timeout", "60"],
    )
    .assert_ok();
}

fn repo(k: &Kratix) -> PathBuf {
    k.home().join("state-store.git")
}

/// A folder that sandboxed pipelines see (their `/tmp` is private), for files tests create.
fn shared_dir() -> tempfile::TempDir {
    support::sandbox_visible_dir()
}

fn text(path: &Path) -> String {
    path.to_str().expect("UTF-8 path").to_string()
}

// ---------------------------------------------------------------------------------------------
// Observing: PipelineRuns, objects, the Git state store.
// ---------------------------------------------------------------------------------------------

/// Runs of a request's configure workflow after sequence `after`.
fn configure_runs_after(k: &Kratix, request: &str, after: i64) -> Vec<RunInfo> {
    runs(k, request)
        .into_iter()
        .filter(|r| r.sequence > after && r.action == "configure")
        .collect()
}

fn names(runs: &[RunInfo]) -> Vec<&str> {
    runs.iter().map(|r| r.pipeline.as_str()).collect()
}

fn last_sequence(runs: &[RunInfo]) -> i64 {
    runs.iter().map(|r| r.sequence).max().unwrap_or(0)
}

/// Each run finished before the next (by sequence) started: never two at once.
#[track_caller]
fn assert_one_at_a_time(runs: &[RunInfo]) {
    for pair in runs.windows(2) {
        let (before, after) = (&pair[0], &pair[1]);
        assert!(
            before.sequence < after.sequence,
            "sequences increase: {runs:#?}"
        );
        let done = before
            .completion
            .unwrap_or_else(|| panic!("{} has completed: {runs:#?}", before.name));
        let started = after
            .start
            .unwrap_or_else(|| panic!("{} has started: {runs:#?}", after.name));
        assert!(
            done <= started,
            "{} started before {} completed: {runs:#?}",
            after.name,
            before.name
        );
    }
}

#[track_caller]
fn assert_all_succeeded(runs: &[RunInfo]) {
    for r in runs {
        assert_eq!(r.phase, "Succeeded", "{} succeeded: {r:#?}", r.name);
    }
}

fn thing(k: &Kratix, name: &str) -> Option<Value> {
    k.get_json(KIND, name, None)
}

fn condition_field(obj: &Value, type_: &str, field: &str) -> String {
    condition(obj, type_)
        .and_then(|c| c[field].as_str())
        .unwrap_or_default()
        .to_string()
}

/// The request, once its configure workflow has completed for its current generation and its
/// Works are written.
fn reconciled(k: &Kratix, name: &str) -> Option<Value> {
    let obj = thing(k, name)?;
    let current = obj["status"]["observedGeneration"] == obj["metadata"]["generation"];
    (current && condition_field(&obj, "Reconciled", "status") == "True").then_some(obj)
}

/// Every file of the state store's `main` branch.
fn store_files(k: &Kratix) -> Vec<String> {
    let repo = repo(k);
    if !repo.exists() {
        return vec![];
    }
    git(
        &[
            "--git-dir",
            &text(&repo),
            "ls-tree",
            "-r",
            "--name-only",
            "main",
        ],
        k.home(),
    )
    .lines()
    .map(str::to_string)
    .collect()
}

/// The files of one request's pipeline in the store.
fn pipeline_files(k: &Kratix, request: &str, pipeline: &str) -> Vec<String> {
    let infix = format!("/resources/default/{PROMISE}/{request}/{pipeline}/");
    store_files(k)
        .into_iter()
        .filter(|f| f.contains(&infix))
        .collect()
}

fn store_show(k: &Kratix, path: &str) -> String {
    git(
        &[
            "--git-dir",
            &text(&repo(k)),
            "show",
            &format!("main:{path}"),
        ],
        k.home(),
    )
}

/// The newest commit of `main` that touched `path`.
fn last_commit_touching(k: &Kratix, path: &str) -> (String, String) {
    let out = git(
        &[
            "--git-dir",
            &text(&repo(k)),
            "log",
            "-1",
            "--format=%H%n%s",
            "main",
            "--",
            path,
        ],
        k.home(),
    );
    let mut lines = out.lines();
    let sha = lines.next().unwrap_or_default().to_string();
    let subject = lines.next().unwrap_or_default().to_string();
    (sha, subject)
}

/// Works of a request for one pipeline.
fn works_of(k: &Kratix, request: &str, pipeline: &str) -> Vec<Value> {
    let selector = format!("kratix.io/resource-name={request},kratix.io/pipeline-name={pipeline}");
    k.list_json("works", &["-A", "-l", &selector])
}

/// Waits until the request has run `expected` (in order) after sequence `after`, all succeeded,
/// and is reconciled; returns those runs.
#[track_caller]
fn rerun_completed(k: &Kratix, request: &str, after: i64, expected: &[&str]) -> Vec<RunInfo> {
    eventually(
        &format!("{request} to re-run {expected:?}"),
        PATIENCE,
        || {
            let runs = configure_runs_after(k, request, after);
            let done = runs.len() >= expected.len()
                && runs.iter().all(|r| r.phase == "Succeeded")
                && reconciled(k, request).is_some();
            done.then_some(runs)
        },
    )
}

// ---------------------------------------------------------------------------------------------
// 1. Pipelines run in order, one at a time, once each.
// ---------------------------------------------------------------------------------------------

#[test]
fn three_pipelines_run_in_order_one_at_a_time_once_each() {
    let k = Kratix::new();
    platform(&k);
    k.apply_yaml(&fixture_yaml("three-pipelines.yaml"), &["--timeout", "60"])
        .assert_ok();

    let runs = runs(&k, "r1");
    assert_eq!(
        names(&runs),
        ["a", "b", "c"],
        "each pipeline ran once, in order: {runs:#?}"
    );
    assert_all_succeeded(&runs);
    assert_one_at_a_time(&runs);
    assert!(
        runs.iter().all(|r| r.hash == runs[0].hash),
        "one spec hash: {runs:#?}"
    );

    let logs = k.run(&["logs", "thing", "r1"]);
    logs.assert_ok();
    let positions: Vec<usize> = ["a", "b", "c"]
        .iter()
        .map(|p| {
            let line = format!("pipeline {p} ran for r1 (size 1)");
            assert_eq!(
                logs.stdout.matches(&line).count(),
                1,
                "logs show {line:?} once:\n{}",
                logs.stdout
            );
            logs.stdout.find(&line).expect("found above")
        })
        .collect();
    assert!(
        positions.windows(2).all(|w| w[0] < w[1]),
        "logs in pipeline order:\n{}",
        logs.stdout
    );
    let only_b = k.run(&["logs", "thing", "r1", "--pipeline", "b"]);
    only_b.assert_ok();
    assert!(
        only_b.stdout.contains("pipeline b ran") && !only_b.stdout.contains("pipeline a ran"),
        "{}",
        only_b.stdout
    );

    let obj = thing(&k, "r1").expect("request exists");
    assert_eq!(
        obj["status"]["observedGeneration"], obj["metadata"]["generation"],
        "{obj:#}"
    );
    for type_ in ["ConfigureWorkflowCompleted", "Reconciled", "WorksSucceeded"] {
        assert_eq!(
            condition_field(&obj, type_, "status"),
            "True",
            "{type_}: {obj:#}"
        );
    }
    for p in ["a", "b", "c"] {
        let files = pipeline_files(&k, "r1", p);
        assert!(
            files.iter().any(|f| f.ends_with(&format!("/{p}.yaml"))),
            "{p}'s file is in the store: {files:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 2. An update while a pipeline runs.
// ---------------------------------------------------------------------------------------------

#[test]
fn update_while_running_lets_the_pipeline_finish_then_restarts_from_the_first() {
    let markers = shared_dir();
    let marker = markers.path().join("b-may-finish");
    let mut k = Kratix::new();
    k.start_serve();
    platform(&k);
    let wf = Workflows::configure(vec![
        step("a"),
        pipe("b", "wait-for.sh", &[], &[("WAIT_FOR", &text(&marker))]),
        step("c"),
    ]);
    k.apply_yaml(&promise(&wf), &["--timeout", "60"])
        .assert_ok();
    k.apply_yaml(&sized("r1", 1), &["--no-wait"]).assert_ok();

    eventually("b to be running", PATIENCE, || {
        runs(&k, "r1")
            .iter()
            .any(|r| r.pipeline == "b" && r.phase == "Running")
            .then_some(())
    });
    k.apply_yaml(&sized("r1", 2), &["--no-wait"]).assert_ok();
    // The controller has looked at the new generation while b still runs ...
    eventually("the update to be observed", PATIENCE, || {
        let obj = thing(&k, "r1")?;
        (obj["status"]["observedGeneration"] == json!(2)).then_some(())
    });
    // ... and started nothing beside it.
    let during = runs(&k, "r1");
    assert_eq!(
        names(&during),
        ["a", "b"],
        "nothing starts while b runs: {during:#?}"
    );
    assert_eq!(during[1].phase, "Running", "{during:#?}");

    std::fs::write(&marker, "go").expect("marker");
    k.run(&[
        "wait",
        KIND,
        "r1",
        "--for",
        "condition=Reconciled",
        "--timeout",
        "60",
    ])
    .assert_ok();

    let runs = runs(&k, "r1");
    assert_eq!(names(&runs), ["a", "b", "a", "b", "c"], "{runs:#?}");
    assert_all_succeeded(&runs);
    assert_one_at_a_time(&runs);
    let (old, new) = (&runs[0].hash, &runs[2].hash);
    assert_ne!(old, new, "the update changed the hash");
    assert_eq!(runs[1].hash, *old, "b finished for the old spec");
    assert!(
        runs[2..].iter().all(|r| &r.hash == new),
        "a, b, c ran for the new spec: {runs:#?}"
    );
    let files = pipeline_files(&k, "r1", "c");
    let c_file = files
        .iter()
        .find(|f| f.ends_with("/c.yaml"))
        .expect("c's file is written");
    assert!(
        store_show(&k, c_file).contains("size: \"2\""),
        "c rendered the new spec"
    );
}

// ---------------------------------------------------------------------------------------------
// 3. Pipeline list changes, Promise changes and manual reconciliation.
// ---------------------------------------------------------------------------------------------

#[test]
fn pipeline_list_changes_promise_changes_and_manual_reconciliation_rerun_workflows() {
    let mut k = Kratix::new();
    k.start_serve();
    platform(&k);
    let apply_promise = |pipelines: &[&str]| {
        let wf = Workflows::configure(pipelines.iter().map(|p| step(p)).collect());
        k.apply_yaml(&promise(&wf), &["--timeout", "60"])
            .assert_ok();
    };
    apply_promise(&["a", "b", "c"]);
    k.apply_yaml(
        &format!("{}\n---\n{}", sized("r1", 1), sized("r2", 1)),
        &["--timeout", "60"],
    )
    .assert_ok();
    for r in ["r1", "r2"] {
        assert_eq!(names(&runs(&k, r)), ["a", "b", "c"]);
        assert_eq!(
            pipeline_files(&k, r, "c").len(),
            1,
            "c's file is written for {r}"
        );
    }

    // N -> N+1: a Promise change re-runs every request, all pipelines in order.
    let before = [
        last_sequence(&runs(&k, "r1")),
        last_sequence(&runs(&k, "r2")),
    ];
    apply_promise(&["a", "b", "c", "d"]);
    for (r, after) in ["r1", "r2"].into_iter().zip(before) {
        let rerun = rerun_completed(&k, r, after, &["a", "b", "c", "d"]);
        assert_eq!(names(&rerun), ["a", "b", "c", "d"], "{r}: {rerun:#?}");
        assert_one_at_a_time(&rerun);
        assert_eq!(
            pipeline_files(&k, r, "d").len(),
            1,
            "d's file is written for {r}"
        );
    }

    // N -> N-1: c's Works and files go once the next run has succeeded.
    let before = [
        last_sequence(&runs(&k, "r1")),
        last_sequence(&runs(&k, "r2")),
    ];
    apply_promise(&["a", "b", "d"]);
    for (r, after) in ["r1", "r2"].into_iter().zip(before) {
        let rerun = rerun_completed(&k, r, after, &["a", "b", "d"]);
        assert_eq!(names(&rerun), ["a", "b", "d"], "{r}: {rerun:#?}");
        eventually(
            &format!("{r}'s c files to leave the store"),
            PATIENCE,
            || pipeline_files(&k, r, "c").is_empty().then_some(()),
        );
        assert!(works_of(&k, r, "c").is_empty(), "{r}'s Work of c is gone");
        assert_eq!(works_of(&k, r, "d").len(), 1, "{r}'s Work of d stays");
    }
    let c_path = format!("worker-1/resources/default/{PROMISE}/r1/c");
    let (_, subject) = last_commit_touching(&k, &c_path);
    assert!(
        subject.starts_with("Delete from:"),
        "c's files left in a delete commit: {subject}"
    );

    // Rename b -> x: b's Works and files go, x's arrive.
    let before = last_sequence(&runs(&k, "r1"));
    apply_promise(&["a", "x", "d"]);
    let rerun = rerun_completed(&k, "r1", before, &["a", "x", "d"]);
    assert_eq!(names(&rerun), ["a", "x", "d"], "{rerun:#?}");
    eventually("b's files to leave the store", PATIENCE, || {
        pipeline_files(&k, "r1", "b").is_empty().then_some(())
    });
    assert!(works_of(&k, "r1", "b").is_empty(), "b's Work is gone");
    assert_eq!(
        pipeline_files(&k, "r1", "x").len(),
        1,
        "x's file is written"
    );
    eventually("r2 to settle on the renamed pipelines", PATIENCE, || {
        let r2 = runs(&k, "r2");
        (names(&r2).ends_with(&["a", "x", "d"]) && reconciled(&k, "r2").is_some()).then_some(())
    });

    // `reconcile` re-runs one object from its first pipeline.
    let before = [
        last_sequence(&runs(&k, "r1")),
        last_sequence(&runs(&k, "r2")),
    ];
    k.run(&["reconcile", KIND, "r1", "--timeout", "60"])
        .assert_ok();
    let rerun = rerun_completed(&k, "r1", before[0], &["a", "x", "d"]);
    assert_eq!(names(&rerun), ["a", "x", "d"], "{rerun:#?}");
    assert_one_at_a_time(&rerun);
    assert!(
        configure_runs_after(&k, "r2", before[1]).is_empty(),
        "r2 is not re-run"
    );

    // So does the label kratix.io/manual-reconciliation=true.
    let before = last_sequence(&runs(&k, "r1"));
    let labelled = json!({
        "apiVersion": "test.kratix.io/v1alpha1",
        "kind": "Thing",
        "metadata": {"name": "r1", "namespace": "default",
                     "labels": {"kratix.io/manual-reconciliation": "true"}},
        "spec": {"size": 1},
    });
    k.apply_yaml(&labelled.to_string(), &["--timeout", "60"])
        .assert_ok();
    let rerun = rerun_completed(&k, "r1", before, &["a", "x", "d"]);
    assert_eq!(names(&rerun), ["a", "x", "d"], "{rerun:#?}");
    let obj = thing(&k, "r1").expect("r1 exists");
    assert!(
        obj["metadata"]["labels"]
            .get("kratix.io/manual-reconciliation")
            .is_none(),
        "label is cleared: {obj:#}"
    );
}

/// Applying the manual-reconciliation label without a `serve` running: the waiting `apply` is
/// the only process that runs the controllers, so it must wait for the re-run it asked for.
#[test]
fn applying_the_manual_reconciliation_label_reruns_before_apply_returns() {
    let k = Kratix::new();
    platform(&k);
    k.apply_yaml(&fixture_yaml("three-pipelines.yaml"), &["--timeout", "60"])
        .assert_ok();
    let before = last_sequence(&runs(&k, "r1"));
    let labelled = json!({
        "apiVersion": "test.kratix.io/v1alpha1",
        "kind": "Thing",
        "metadata": {"name": "r1", "namespace": "default",
                     "labels": {"kratix.io/manual-reconciliation": "true"}},
        "spec": {"size": 1},
    });
    k.apply_yaml(&labelled.to_string(), &["--timeout", "60"])
        .assert_ok();
    let rerun = configure_runs_after(&k, "r1", before);
    assert_eq!(names(&rerun), ["a", "b", "c"], "{rerun:#?}");
    assert_all_succeeded(&rerun);
}

// ---------------------------------------------------------------------------------------------
// 4. The pipeline contract.
// ---------------------------------------------------------------------------------------------

#[test]
fn pipelines_get_the_object_and_kratix_env_and_their_status_is_merged() {
    let k = Kratix::new();
    platform(&k);
    let wf = Workflows::configure(vec![
        pipe(
            "contract-a",
            "contract.sh",
            &[],
            &[("OWN_CONDITION", "FirstChecked")],
        ),
        pipe(
            "contract-b",
            "contract.sh",
            &[],
            &[("OWN_CONDITION", "SecondChecked")],
        ),
    ]);
    k.apply_yaml(
        &format!("{}\n---\n{}", promise(&wf), sized("r1", 3)),
        &["--timeout", "60"],
    )
    .assert_ok();

    let files = pipeline_files(&k, "r1", "contract-a");
    let object_file = files
        .iter()
        .find(|f| f.ends_with("/object.yaml"))
        .expect("object.yaml copied");
    let object: Value =
        serde_yaml::from_str(&store_show(&k, object_file)).expect("object.yaml is YAML");
    assert_eq!(
        object["apiVersion"], "test.kratix.io/v1alpha1",
        "{object:#}"
    );
    assert_eq!(object["kind"], "Thing");
    assert_eq!(object["metadata"]["name"], "r1");
    assert_eq!(object["metadata"]["namespace"], "default");
    assert_eq!(object["spec"]["size"], 3);
    // A pipeline sees what the pipelines before it wrote in their status.yaml.
    let second = pipeline_files(&k, "r1", "contract-b");
    let second_object = second
        .iter()
        .find(|f| f.ends_with("/object.yaml"))
        .expect("object.yaml copied by the second pipeline");
    let seen: Value =
        serde_yaml::from_str(&store_show(&k, second_object)).expect("object.yaml is YAML");
    assert_eq!(
        (
            &seen["status"]["contract-a"],
            &seen["status"]["lastPipeline"]
        ),
        (&json!("done"), &json!("contract-a")),
        "the second pipeline's object.yaml carries the first one's status.yaml: {seen:#}"
    );

    let env_file = files
        .iter()
        .find(|f| f.ends_with("/env.txt"))
        .expect("env.txt written");
    let env = store_show(&k, env_file);
    for line in [
        "KRATIX_WORKFLOW_ACTION=configure",
        "KRATIX_WORKFLOW_TYPE=resource",
        "KRATIX_PROMISE_NAME=thing",
        // An unversioned Promise: Kratix's placeholder.
        "KRATIX_PROMISE_VERSION=not-set",
        "KRATIX_PIPELINE_NAME=contract-a",
        "KRATIX_OBJECT_KIND=Thing",
        "KRATIX_OBJECT_GROUP=test.kratix.io",
        "KRATIX_OBJECT_VERSION=v1alpha1",
        "KRATIX_OBJECT_NAME=r1",
        "KRATIX_OBJECT_NAMESPACE=default",
        "KRATIX_CRD_PLURAL=things",
        "KRATIX_CLUSTER_SCOPED=false",
    ] {
        assert!(
            env.lines().any(|l| l == line),
            "{line} in the environment:\n{env}"
        );
    }

    let obj = thing(&k, "r1").expect("r1 exists");
    let status = &obj["status"];
    assert_eq!(
        status["lastPipeline"], "contract-b",
        "later pipelines replace top-level keys: {status:#}"
    );
    assert_eq!(status["contract-a"], "done", "{status:#}");
    assert_eq!(status["contract-b"], "done", "{status:#}");
    assert_eq!(
        condition_field(&obj, "FirstChecked", "status"),
        "True",
        "conditions merged by type: {status:#}"
    );
    assert_eq!(
        condition_field(&obj, "SecondChecked", "status"),
        "True",
        "{status:#}"
    );
    assert_eq!(
        condition_field(&obj, "Shared", "message"),
        "last set by contract-b",
        "{status:#}"
    );
    let shared = status["conditions"]
        .as_array()
        .expect("conditions")
        .iter()
        .filter(|c| c["type"] == "Shared")
        .count();
    assert_eq!(shared, 1, "one condition per type: {status:#}");
    assert_eq!(
        condition_field(&obj, "Reconciled", "status"),
        "True",
        "Kratix's own conditions stay: {status:#}"
    );
}

#[test]
fn a_status_yaml_setting_the_kratix_key_fails_the_pipeline() {
    let k = Kratix::new();
    platform(&k);
    let wf = Workflows::configure(vec![
        step("a"),
        pipe("hijack", "reserved-status.sh", &[], &[]),
        step("c"),
    ]);
    let applied = k.apply_yaml(
        &format!("{}\n---\n{}", promise(&wf), sized("r1", 1)),
        &["--timeout", "60"],
    );
    applied.assert_failed();
    assert!(
        applied.stderr.contains("hijack"),
        "apply names the pipeline: {}",
        applied.stderr
    );
    let obj = thing(&k, "r1").expect("r1 exists");
    assert_eq!(
        condition_field(&obj, "ConfigureWorkflowCompleted", "reason"),
        "ConfigureWorkflowFailed"
    );
    let message = condition_field(&obj, "ConfigureWorkflowCompleted", "message");
    assert!(
        message.contains("hijack") && message.contains("kratix"),
        "{message}"
    );
    // `status.kratix` holds what Kratix records (the workflows, keyed), nothing the pipeline
    // wrote.
    let workflows = &obj["status"]["kratix"]["workflows"];
    assert_ne!(
        workflows, "hijacked",
        "the reserved key is not written: {obj:#}"
    );
    assert_eq!(
        workflows["configure"]["pipelines"][1]["phase"], "Failed",
        "{obj:#}"
    );
    assert_eq!(names(&runs(&k, "r1")), ["a", "hijack"], "c never runs");
}

#[test]
fn destination_selectors_send_each_output_folder_to_its_destinations() {
    let k = Kratix::new();
    for (destination, labels) in [
        ("dev-cluster", "{env: dev}"),
        ("prod-cluster", "{env: prod}"),
    ] {
        k.apply_yaml(
            &git_destination_yaml("state-store.git", destination, labels),
            &["--timeout", "60"],
        )
        .assert_ok();
    }
    let wf = Workflows::configure(vec![pipe("split", "selectors.sh", &[], &[])]);
    k.apply_yaml(
        &format!("{}\n---\n{}", promise(&wf), sized("r1", 1)),
        &["--timeout", "60"],
    )
    .assert_ok();
    let files = store_files(&k);
    let placed =
        |name: &str| -> Vec<&String> { files.iter().filter(|f| f.ends_with(name)).collect() };
    let dev = placed("/for-dev.yaml");
    let prod = placed("/for-prod.yaml");
    assert_eq!(dev.len(), 1, "{files:#?}");
    assert_eq!(prod.len(), 1, "{files:#?}");
    assert!(dev[0].starts_with("dev-cluster/resources/"), "{files:#?}");
    assert!(prod[0].starts_with("prod-cluster/resources/"), "{files:#?}");
}

#[test]
fn workflow_control_suspends_and_resumes_at_the_suspended_pipeline() {
    let records = shared_dir();
    let counter = records.path().join("b-runs");
    let k = Kratix::new().with_env("KRATIX_ISOLATION", "process");
    platform(&k);
    let wf = Workflows::configure(vec![
        step("a"),
        pipe(
            "b",
            "suspend-once.sh",
            &[],
            &[("COUNTER", &text(&counter)), ("RETRY_AFTER", "2s")],
        ),
        step("c"),
    ]);
    k.apply_yaml(
        &format!("{}\n---\n{}", promise(&wf), sized("r1", 1)),
        &["--timeout", "60"],
    )
    .assert_ok();
    let runs = runs(&k, "r1");
    assert_eq!(
        names(&runs),
        ["a", "b", "b", "c"],
        "b is resumed, then c runs: {runs:#?}"
    );
    assert_all_succeeded(&runs);
    assert_one_at_a_time(&runs);
    assert_eq!(
        runs[1].raw["status"]["workflowControl"]["suspend"], true,
        "{:#}",
        runs[1].raw
    );
    assert!(
        runs[2].raw["status"].get("workflowControl").is_none(),
        "{:#}",
        runs[2].raw
    );
    let count = std::fs::read_to_string(&counter).expect("counter");
    assert_eq!(count.lines().count(), 2, "b ran twice");
    assert_eq!(
        pipeline_files(&k, "r1", "b").len(),
        1,
        "the resumed b wrote its file"
    );
}

#[test]
fn containers_run_in_declaration_order_sharing_the_output() {
    let k = Kratix::new();
    platform(&k);
    let wf = Workflows::configure(vec![pipeline(
        "multi",
        vec![
            container("one", "container.sh", &["one"], &[]),
            container("two", "container.sh", &["two"], &[]),
            container("three", "container.sh", &["three"], &[]),
        ],
    )]);
    k.apply_yaml(
        &format!("{}\n---\n{}", promise(&wf), sized("r1", 1)),
        &["--timeout", "60"],
    )
    .assert_ok();
    let files = pipeline_files(&k, "r1", "multi");
    let order = files
        .iter()
        .find(|f| f.ends_with("/order.txt"))
        .expect("order.txt written");
    assert_eq!(store_show(&k, order), "one\ntwo\nthree\n");
    let logs = k.run(&["logs", KIND, "r1"]);
    logs.assert_ok();
    let at = |s: &str| {
        logs.stdout
            .find(s)
            .unwrap_or_else(|| panic!("{s} in logs:\n{}", logs.stdout))
    };
    assert!(
        at("container one ran") < at("container two ran")
            && at("container two ran") < at("container three ran"),
        "{}",
        logs.stdout
    );
}

#[test]
fn a_run_over_the_time_limit_fails_and_leaves_nothing_running() {
    let scratch = shared_dir();
    let pid_file = scratch.path().join("sleep.pid");
    let k = Kratix::new()
        .with_env("KRATIX_ISOLATION", "process")
        .with_env("KRATIX_PIPELINE_TIMEOUT", "2");
    platform(&k);
    let wf = Workflows::configure(vec![
        step("a"),
        pipe("slow", "slow.sh", &[], &[("PID_FILE", &text(&pid_file))]),
        step("c"),
    ]);
    let applied = k.apply_yaml(
        &format!("{}\n---\n{}", promise(&wf), sized("r1", 1)),
        &["--timeout", "60"],
    );
    applied.assert_failed();
    assert!(
        applied.stderr.contains("slow"),
        "apply names the pipeline: {}",
        applied.stderr
    );
    let runs = runs(&k, "r1");
    assert_eq!(names(&runs), ["a", "slow"], "{runs:#?}");
    assert_eq!(runs[1].phase, "Failed");
    assert!(runs[1].message.contains("timed out"), "{runs:#?}");
    let obj = thing(&k, "r1").expect("r1 exists");
    let message = condition_field(&obj, "ConfigureWorkflowCompleted", "message");
    assert!(
        message.contains("slow") && message.contains("timed out"),
        "{message}"
    );
    let pid = std::fs::read_to_string(&pid_file).expect("pid recorded");
    let proc_dir = PathBuf::from(format!("/proc/{}", pid.trim()));
    eventually(
        "the pipeline's background process to be gone",
        PATIENCE,
        || {
            let alive = std::fs::read_to_string(proc_dir.join("cmdline"))
                .is_ok_and(|c| c.contains("sleep"));
            (!alive).then_some(())
        },
    );
}

#[test]
fn sandboxed_pipelines_cannot_write_to_the_host() {
    let target = shared_dir();
    let k = Kratix::new().with_env("KRATIX_ISOLATION", "sandbox");
    platform(&k);
    let wf = Workflows::configure(vec![pipe(
        "escape",
        "escape.sh",
        &[],
        &[("TARGET", &text(target.path()))],
    )]);
    k.apply_yaml(
        &format!("{}\n---\n{}", promise(&wf), sized("r1", 1)),
        &["--timeout", "60"],
    )
    .assert_ok();
    assert!(
        !target.path().join("escaped.txt").exists(),
        "the host folder is read-only in the sandbox"
    );
    let files = pipeline_files(&k, "r1", "escape");
    let report: Value = serde_yaml::from_str(&store_show(&k, &files[0])).expect("YAML");
    assert_eq!(report["data"]["result"], "refused", "{report:#}");
    assert_eq!(report["data"]["outputDir"], "/kratix/output", "{report:#}");
}

#[test]
fn the_process_fallback_runs_pipelines_as_plain_processes() {
    let target = shared_dir();
    let k = Kratix::new().with_env("KRATIX_ISOLATION", "process");
    platform(&k);
    let wf = Workflows::configure(vec![
        step("a"),
        pipe(
            "escape",
            "escape.sh",
            &[],
            &[("TARGET", &text(target.path()))],
        ),
    ]);
    k.apply_yaml(
        &format!("{}\n---\n{}", promise(&wf), sized("r1", 1)),
        &["--timeout", "60"],
    )
    .assert_ok();
    assert!(
        target.path().join("escaped.txt").exists(),
        "plain processes write where they like"
    );
    let files = pipeline_files(&k, "r1", "escape");
    let report: Value = serde_yaml::from_str(&store_show(&k, &files[0])).expect("YAML");
    assert_eq!(report["data"]["result"], "wrote", "{report:#}");
    let output_dir = report["data"]["outputDir"].as_str().expect("outputDir");
    assert!(
        output_dir.starts_with(&text(k.home())),
        "KRATIX_OUTPUT_DIR is a folder of the run: {output_dir}"
    );
    assert_eq!(
        pipeline_files(&k, "r1", "a").len(),
        1,
        "step.sh works from KRATIX_*_DIR too"
    );
}

// ---------------------------------------------------------------------------------------------
// 5. Output validation.
// ---------------------------------------------------------------------------------------------

#[test]
fn symlinks_fifos_and_non_utf8_names_in_the_output_fail_the_pipeline() {
    let k = Kratix::new();
    platform(&k);
    let wf = Workflows::configure(vec![pipe("render", "bad-output.sh", &[], &[])]);
    k.apply_yaml(&promise(&wf), &["--timeout", "60"])
        .assert_ok();
    for (name, mode, file) in [
        ("r-link", "symlink", "link.yaml"),
        ("r-fifo", "fifo", "queue.yaml"),
        ("r-name", "badname", "bad"),
    ] {
        let applied = k.apply_yaml(&request(name, json!({"mode": mode})), &["--timeout", "60"]);
        applied.assert_failed();
        assert!(
            applied.stderr.contains("render"),
            "{mode}: apply names the pipeline: {}",
            applied.stderr
        );
        assert!(
            applied.stderr.contains(file),
            "{mode}: apply names the file: {}",
            applied.stderr
        );
        let obj = thing(&k, name).expect("request exists");
        let message = condition_field(&obj, "ConfigureWorkflowCompleted", "message");
        assert!(
            message.contains(file),
            "{mode}: the condition names the file: {message}"
        );
        let runs = runs(&k, name);
        assert_eq!(runs.len(), 1, "{runs:#?}");
        assert_eq!(runs[0].phase, "Failed");
        assert!(
            pipeline_files(&k, name, "render").is_empty(),
            "{mode}: nothing is written"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 6. Failures.
// ---------------------------------------------------------------------------------------------

#[test]
fn a_failing_pipeline_stops_the_workflow_is_retried_and_recovers_once_fixed() {
    let mut k = Kratix::new();
    platform(&k);
    let broken = Workflows::configure(vec![
        step("a"),
        pipe("b", "fail.sh", &["3"], &[]),
        step("c"),
    ]);
    let applied = k.apply_yaml(
        &format!("{}\n---\n{}", promise(&broken), sized("r1", 1)),
        &["--timeout", "60"],
    );
    applied.assert_failed();
    assert!(
        applied
            .stderr
            .contains("A Configure Pipeline has failed: b"),
        "{}",
        applied.stderr
    );
    assert!(applied.stderr.contains("code 3"), "{}", applied.stderr);

    let obj = thing(&k, "r1").expect("r1 exists");
    assert_eq!(
        condition_field(&obj, "ConfigureWorkflowCompleted", "status"),
        "False"
    );
    assert_eq!(
        condition_field(&obj, "ConfigureWorkflowCompleted", "reason"),
        "ConfigureWorkflowFailed"
    );
    let message = condition_field(&obj, "ConfigureWorkflowCompleted", "message");
    assert!(
        message.contains(": b") && message.contains("code 3"),
        "{message}"
    );
    assert_eq!(condition_field(&obj, "Reconciled", "status"), "False");
    let first = runs(&k, "r1");
    assert_eq!(names(&first), ["a", "b"], "c never runs: {first:#?}");
    assert_eq!(first[1].phase, "Failed");
    let b_status = &obj["status"]["pipelines"][1];
    assert_eq!(b_status["name"], "b", "{obj:#}");
    assert_eq!(b_status["phase"], "Failed", "{obj:#}");
    let next_retry = b_status["nextRetryAt"].as_str().expect("nextRetryAt");
    let next_retry: jiff::Timestamp = next_retry.parse().expect("RFC 3339");
    assert!(
        next_retry > first[1].completion.expect("completed"),
        "retried after a backoff"
    );

    k.start_serve();
    let retried = eventually("b to be retried", PATIENCE, || {
        let runs = runs(&k, "r1");
        (runs
            .iter()
            .filter(|r| r.pipeline == "b" && r.phase == "Failed")
            .count()
            >= 2)
            .then_some(runs)
    });
    assert!(
        !names(&retried).contains(&"c"),
        "c never runs: {retried:#?}"
    );
    let second_b = retried
        .iter()
        .filter(|r| r.pipeline == "b")
        .nth(1)
        .expect("second b");
    assert!(
        second_b.start.expect("started") >= next_retry,
        "not retried before {next_retry}: {second_b:#?}"
    );
    assert_one_at_a_time(&retried);

    let fixed = Workflows::configure(vec![step("a"), step("b"), step("c")]);
    k.apply_yaml(&promise(&fixed), &["--timeout", "60"])
        .assert_ok();
    k.run(&[
        "wait",
        KIND,
        "r1",
        "--for",
        "condition=Reconciled",
        "--timeout",
        "60",
    ])
    .assert_ok();
    let after = configure_runs_after(&k, "r1", last_sequence(&retried));
    assert_eq!(names(&after), ["a", "b", "c"], "{after:#?}");
    let obj = thing(&k, "r1").expect("r1 exists");
    assert_eq!(
        condition_field(&obj, "ConfigureWorkflowCompleted", "status"),
        "True",
        "{obj:#}"
    );
}

// ---------------------------------------------------------------------------------------------
// 7. Delete workflows.
// ---------------------------------------------------------------------------------------------

#[test]
fn deleting_a_request_runs_its_delete_pipeline_and_removes_its_files() {
    let scratch = shared_dir();
    let record = scratch.path().join("record.txt");
    let k = Kratix::new().with_env("KRATIX_ISOLATION", "process");
    platform(&k);
    let wf = Workflows {
        resource_configure: vec![step("a")],
        resource_delete: vec![pipe(
            "goodbye",
            "record.sh",
            &[],
            &[("RECORD", &text(&record))],
        )],
        ..Workflows::default()
    };
    k.apply_yaml(
        &format!(
            "{}\n---\n{}\n---\n{}",
            promise(&wf),
            sized("r1", 1),
            sized("r2", 1)
        ),
        &["--timeout", "60"],
    )
    .assert_ok();
    assert_eq!(pipeline_files(&k, "r1", "a").len(), 1);

    k.run(&["delete", KIND, "r1", "--timeout", "60"])
        .assert_ok();
    assert!(thing(&k, "r1").is_none(), "r1 is gone");
    let recorded = std::fs::read_to_string(&record).expect("the delete pipeline ran");
    assert_eq!(recorded, "resource/delete goodbye r1\n");
    assert!(
        pipeline_files(&k, "r1", "a").is_empty(),
        "r1's files left the store: {:#?}",
        store_files(&k)
    );
    assert_eq!(pipeline_files(&k, "r2", "a").len(), 1, "r2's files stay");
    let (_, subject) =
        last_commit_touching(&k, &format!("worker-1/resources/default/{PROMISE}/r1"));
    assert!(subject.starts_with("Delete from:"), "{subject}");
    assert!(runs(&k, "r1").is_empty(), "r1's runs are gone with it");
}

#[test]
fn a_failing_delete_pipeline_keeps_the_request() {
    let mut k = Kratix::new();
    k.start_serve();
    platform(&k);
    let wf = Workflows {
        resource_configure: vec![step("a")],
        resource_delete: vec![pipe("refuse", "fail.sh", &["4"], &[])],
        ..Workflows::default()
    };
    k.apply_yaml(
        &format!("{}\n---\n{}", promise(&wf), sized("r1", 1)),
        &["--timeout", "60"],
    )
    .assert_ok();
    k.run(&["delete", KIND, "r1", "--no-wait"]).assert_ok();
    let obj = eventually("the delete workflow to fail", PATIENCE, || {
        let obj = thing(&k, "r1")?;
        (condition_field(&obj, "DeleteWorkflowCompleted", "reason") == "DeleteWorkflowFailed")
            .then_some(obj)
    });
    assert_eq!(
        condition_field(&obj, "DeleteWorkflowCompleted", "status"),
        "False"
    );
    let message = condition_field(&obj, "DeleteWorkflowCompleted", "message");
    assert!(
        message.contains("refuse") && message.contains("code 4"),
        "{message}"
    );
    assert!(obj["metadata"]["deletionTimestamp"].is_string(), "{obj:#}");
    assert_eq!(
        pipeline_files(&k, "r1", "a").len(),
        1,
        "files stay while the delete workflow fails"
    );
    let delete_runs: Vec<RunInfo> = runs(&k, "r1")
        .into_iter()
        .filter(|r| r.action == "delete")
        .collect();
    assert!(
        delete_runs.iter().all(|r| r.phase == "Failed"),
        "{delete_runs:#?}"
    );
}

#[test]
fn deleting_a_promise_deletes_its_requests_first_then_runs_its_own_delete_workflow() {
    let scratch = shared_dir();
    let record = scratch.path().join("record.txt");
    let recorder = |name: &str| pipe(name, "record.sh", &[], &[("RECORD", &text(&record))]);
    let k = Kratix::new().with_env("KRATIX_ISOLATION", "process");
    platform(&k);
    let wf = Workflows {
        resource_configure: vec![step("a")],
        resource_delete: vec![recorder("request-bye")],
        promise_configure: vec![step("setup")],
        promise_delete: vec![recorder("promise-bye")],
    };
    k.apply_yaml(
        &format!(
            "{}\n---\n{}\n---\n{}",
            promise(&wf),
            sized("r1", 1),
            sized("r2", 1)
        ),
        &["--timeout", "60"],
    )
    .assert_ok();
    assert!(
        store_files(&k).iter().any(|f| f.contains("/thing/")),
        "the Promise's files are written"
    );

    k.run(&["delete", "promise", PROMISE, "--timeout", "60"])
        .assert_ok();
    let recorded = std::fs::read_to_string(&record).expect("delete pipelines ran");
    let lines: Vec<&str> = recorded.lines().collect();
    assert_eq!(lines.len(), 3, "{recorded}");
    let mut requests = lines[..2].to_vec();
    requests.sort_unstable();
    assert_eq!(
        requests,
        [
            "resource/delete request-bye r1",
            "resource/delete request-bye r2"
        ],
        "{recorded}"
    );
    assert_eq!(
        lines[2], "promise/delete promise-bye thing",
        "the Promise's own last: {recorded}"
    );
    assert!(
        k.get_json("promise", PROMISE, None).is_none(),
        "the Promise is gone"
    );
    let left: Vec<String> = store_files(&k)
        .into_iter()
        .filter(|f| f.contains("/thing/"))
        .collect();
    assert!(left.is_empty(), "no file of the Promise is left: {left:#?}");
    assert!(
        k.list_json("pipelineruns", &["-A"]).is_empty(),
        "no runs are left"
    );
}

// ---------------------------------------------------------------------------------------------
// 8. Status.
// ---------------------------------------------------------------------------------------------

#[test]
fn status_reports_availability_generation_and_where_each_pipelines_files_landed() {
    let k = Kratix::new();
    platform(&k);
    k.apply_yaml(&fixture_yaml("three-pipelines.yaml"), &["--timeout", "60"])
        .assert_ok();

    let p = k
        .get_json("promise", PROMISE, None)
        .expect("Promise exists");
    assert_eq!(condition_field(&p, "Available", "status"), "True", "{p:#}");
    assert_eq!(
        p["status"]["observedGeneration"], p["metadata"]["generation"],
        "{p:#}"
    );

    for size in [1, 2] {
        if size == 2 {
            k.apply_yaml(&sized("r1", 2), &["--timeout", "60"])
                .assert_ok();
        }
        let obj = thing(&k, "r1").expect("r1 exists");
        assert_eq!(obj["status"]["observedGeneration"], json!(size), "{obj:#}");
        let pipelines = obj["status"]["pipelines"]
            .as_array()
            .expect("status.pipelines");
        let listed: Vec<&str> = pipelines
            .iter()
            .filter_map(|p| p["name"].as_str())
            .collect();
        assert_eq!(listed, ["a", "b", "c"], "{obj:#}");
        for entry in pipelines {
            let name = entry["name"].as_str().expect("name");
            assert_eq!(entry["phase"], "Succeeded", "{entry:#}");
            let dests = entry["destinations"].as_array().expect("destinations");
            assert_eq!(dests.len(), 1, "{entry:#}");
            assert_eq!(dests[0]["destination"], "worker-1", "{entry:#}");
            let file = pipeline_files(&k, "r1", name)
                .pop()
                .expect("the pipeline's file");
            assert!(store_show(&k, &file).contains(&format!("size: \"{size}\"")));
            let (sha, subject) = last_commit_touching(&k, &file);
            assert_eq!(
                dests[0]["version"],
                json!(sha),
                "{name}'s files landed in {sha} ({subject})"
            );
            assert!(subject.starts_with("Update from:"), "{subject}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// A crash.
// ---------------------------------------------------------------------------------------------

#[test]
fn a_run_interrupted_by_a_crash_is_run_again_and_the_workflow_completes() {
    let markers = shared_dir();
    let marker = markers.path().join("b-may-finish");
    let mut k = Kratix::new();
    k.start_serve();
    platform(&k);
    let wf = Workflows::configure(vec![
        step("a"),
        pipe("b", "wait-for.sh", &[], &[("WAIT_FOR", &text(&marker))]),
        step("c"),
    ]);
    k.apply_yaml(&promise(&wf), &["--timeout", "60"])
        .assert_ok();
    k.apply_yaml(&sized("r1", 1), &["--no-wait"]).assert_ok();
    let interrupted = eventually("b to be running", PATIENCE, || {
        runs(&k, "r1")
            .into_iter()
            .find(|r| r.pipeline == "b" && r.phase == "Running")
    });
    let a_before = runs(&k, "r1")
        .into_iter()
        .find(|r| r.pipeline == "a")
        .expect("a ran");

    k.kill_serve();
    k.start_serve();
    eventually("b to run again", PATIENCE, || {
        runs(&k, "r1")
            .into_iter()
            .find(|r| r.pipeline == "b" && r.phase == "Running" && r.start > interrupted.start)
    });
    std::fs::write(&marker, "go").expect("marker");
    k.run(&[
        "wait",
        KIND,
        "r1",
        "--for",
        "condition=Reconciled",
        "--timeout",
        "60",
    ])
    .assert_ok();

    let runs = runs(&k, "r1");
    assert_eq!(
        names(&runs),
        ["a", "b", "c"],
        "each pipeline has one run: {runs:#?}"
    );
    assert_all_succeeded(&runs);
    assert_one_at_a_time(&runs);
    assert_eq!(runs[0].start, a_before.start, "a is not run again");
    assert!(
        runs[1].start > interrupted.start,
        "b was run again after the restart"
    );
    let logs = k.run(&["logs", KIND, "r1"]);
    assert_eq!(
        logs.stdout.matches("pipeline c ran").count(),
        1,
        "{}",
        logs.stdout
    );
}

/// With plain processes there is no sandbox to die with `serve`: the restarted `serve` must still
/// not let the interrupted container run on beside the re-run.
#[test]
fn after_a_crash_an_interrupted_process_container_does_not_run_beside_its_rerun() {
    let scratch = shared_dir();
    let marker = scratch.path().join("b-may-finish");
    let record = scratch.path().join("record.txt");
    let mut k = Kratix::new().with_env("KRATIX_ISOLATION", "process");
    k.start_serve();
    platform(&k);
    let wf = Workflows::configure(vec![
        step("a"),
        pipe(
            "b",
            "wait-for.sh",
            &[],
            &[("WAIT_FOR", &text(&marker)), ("RECORD", &text(&record))],
        ),
        step("c"),
    ]);
    k.apply_yaml(&promise(&wf), &["--timeout", "60"])
        .assert_ok();
    k.apply_yaml(&sized("r1", 1), &["--no-wait"]).assert_ok();
    let interrupted = eventually("b to be running", PATIENCE, || {
        runs(&k, "r1")
            .into_iter()
            .find(|r| r.pipeline == "b" && r.phase == "Running")
    });

    k.kill_serve();
    k.start_serve();
    eventually("b to run again", PATIENCE, || {
        runs(&k, "r1")
            .into_iter()
            .find(|r| r.pipeline == "b" && r.phase == "Running" && r.start > interrupted.start)
    });
    std::fs::write(&marker, "go").expect("marker");
    k.run(&[
        "wait",
        KIND,
        "r1",
        "--for",
        "condition=Reconciled",
        "--timeout",
        "60",
    ])
    .assert_ok();
    assert_eq!(names(&runs(&k, "r1")), ["a", "b", "c"]);
    let recorded = std::fs::read_to_string(&record).expect("b stopped waiting");
    assert_eq!(
        recorded, "b stopped waiting\n",
        "only the re-run of b ran to the end"
    );
}

/// Deleting a request while its configure pipeline runs: the delete workflow waits for it (never
/// two runs of one object at once), then every file goes, that pipeline's included.
#[test]
fn deleting_a_request_mid_run_waits_for_the_running_pipeline() {
    let scratch = shared_dir();
    let marker = scratch.path().join("b-may-finish");
    let mut k = Kratix::new();
    k.start_serve();
    platform(&k);
    let wf = Workflows {
        resource_configure: vec![
            step("a"),
            pipe("b", "wait-for.sh", &[], &[("WAIT_FOR", &text(&marker))]),
        ],
        resource_delete: vec![step("bye")],
        ..Workflows::default()
    };
    k.apply_yaml(&promise(&wf), &["--timeout", "60"])
        .assert_ok();
    k.apply_yaml(&sized("r1", 1), &["--no-wait"]).assert_ok();
    eventually("b to be running", PATIENCE, || {
        runs(&k, "r1")
            .iter()
            .any(|r| r.pipeline == "b" && r.phase == "Running")
            .then_some(())
    });
    k.run(&["delete", KIND, "r1", "--no-wait"]).assert_ok();
    eventually("the deletion to be seen", PATIENCE, || {
        let obj = thing(&k, "r1")?;
        condition(&obj, "DeleteWorkflowCompleted").map(|_| ())
    });
    let during = runs(&k, "r1");
    assert_eq!(
        names(&during),
        ["a", "b"],
        "the delete workflow waits: {during:#?}"
    );

    std::fs::write(&marker, "go").expect("marker");
    k.run(&["wait", KIND, "r1", "--for", "delete", "--timeout", "60"])
        .assert_ok();
    let left: Vec<String> = store_files(&k)
        .into_iter()
        .filter(|f| f.contains("/r1/"))
        .collect();
    assert!(left.is_empty(), "every file of r1 is gone: {left:#?}");
}
