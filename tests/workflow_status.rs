//! Kratix's keyed workflow status, through the binary: `status.kratix.workflows.<action>` after
//! the configure workflow and through the delete workflow; objects stored with the earlier flat
//! layout migrated; the runs of removed or renamed pipelines pruned, and a suspended workflow's
//! runs kept to five; `workflow-control.yaml` in every workflow (promise and resource, configure
//! and delete); requests of a Promise without a resource configure workflow.
//!
//! Pipelines are the shell scripts of `fixtures/workflows/scripts`, run as plain processes
//! (`KRATIX_ISOLATION=process`) where they share files with the test.

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};
use support::things::{self, runs, RunInfo, KIND};
use support::{condition, eventually, git_destination_yaml, Kratix};

const PATIENCE: Duration = Duration::from_secs(90);

/// A pipeline of one container running a fixture script with extra environment.
fn pipe(name: &str, script: &str, env: &[(&str, &str)]) -> Value {
    let script = support::sandbox_fixtures("workflows/scripts").join(script);
    let env: Vec<Value> = env
        .iter()
        .map(|(k, v)| json!({"name": k, "value": v}))
        .collect();
    json!({
        "apiVersion": "platform.kratix.io/v1alpha1",
        "kind": "Pipeline",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "main", "image": "local/sh",
            "command": ["sh", script.display().to_string()], "env": env}]},
    })
}

/// A pipeline that renders one file (`step.sh`).
fn step(name: &str) -> Value {
    pipe(name, "step.sh", &[])
}

/// A pipeline that suspends its workflow (a `retryAfter` of one second, again and again) until
/// `gate.release()`, counting its runs.
fn gated(name: &str, gate: &Gate) -> Value {
    suspending(name, gate, "1s")
}

/// A pipeline that suspends its workflow (`suspend: true`, no `retryAfter`) until
/// `gate.release()` and a manual reconciliation resumes it.
fn held(name: &str, gate: &Gate) -> Value {
    suspending(name, gate, "")
}

/// `suspend-until.sh` behind `gate`, with `retry_after` (none when empty).
fn suspending(name: &str, gate: &Gate, retry_after: &str) -> Value {
    pipe(
        name,
        "suspend-until.sh",
        &[
            ("RELEASE", &text(&gate.release)),
            ("COUNTER", &text(&gate.counter)),
            ("RETRY_AFTER", retry_after),
        ],
    )
}

/// What a gated pipeline waits for, and the record of its runs.
struct Gate {
    release: PathBuf,
    counter: PathBuf,
}

impl Gate {
    fn new(dir: &Path, name: &str) -> Self {
        Gate {
            release: dir.join(format!("release-{name}")),
            counter: dir.join(format!("runs-{name}")),
        }
    }

    fn release(&self) {
        std::fs::write(&self.release, "").expect("write the release file");
    }

    fn runs(&self) -> usize {
        std::fs::read_to_string(&self.counter)
            .map(|t| t.lines().count())
            .unwrap_or(0)
    }
}

/// A serving home, and the gates of a configure and a delete pipeline (in a folder the caller
/// keeps while they are used).
fn serving_with_gates() -> (tempfile::TempDir, Gate, Gate, Kratix) {
    let gates = support::sandbox_visible_dir();
    let configure = Gate::new(gates.path(), "configure");
    let delete = Gate::new(gates.path(), "delete");
    let mut k = platform();
    k.start_serve();
    (gates, configure, delete, k)
}

fn text(path: &Path) -> String {
    path.to_str().expect("UTF-8 path").to_string()
}

/// A home with a Git state store and Destination `worker-1`, its pipelines run as processes.
fn platform() -> Kratix {
    let k = Kratix::new().with_env("KRATIX_ISOLATION", "process");
    k.apply_yaml(
        &git_destination_yaml("state-store.git", "worker-1", "{env: dev}"),
        &["--timeout", "60"],
    )
    .assert_ok();
    k
}

/// Asks for a manual reconciliation of the Promise `thing` and returns at once (the label; a
/// Promise being deleted never settles for `reconcile` to wait for).
fn reconcile_promise(k: &Kratix) {
    k.run(&[
        "label",
        "promise",
        "thing",
        "kratix.io/manual-reconciliation=true",
    ])
    .assert_ok();
}

fn promise(k: &Kratix) -> Option<Value> {
    k.get_json("promise", "thing", None)
}

fn thing(k: &Kratix, name: &str) -> Option<Value> {
    k.get_json(KIND, name, None)
}

/// `(status, reason, message)` of a condition, empty when it is missing.
fn cond(obj: &Value, type_: &str) -> (String, String, String) {
    let c = condition(obj, type_);
    let f = |field: &str| {
        c.and_then(|c| c[field].as_str())
            .unwrap_or_default()
            .to_string()
    };
    (f("status"), f("reason"), f("message"))
}

/// A condition's `(status, reason, message)` as [`cond`] reads it.
fn said(status: &str, reason: &str, message: &str) -> (String, String, String) {
    (status.into(), reason.into(), message.into())
}

/// `DeleteWorkflowCompleted` of a suspended delete workflow, as Kratix words it.
fn delete_suspended() -> (String, String, String) {
    said(
        "False",
        "DeleteWorkflowSuspended",
        "The delete workflow is suspended",
    )
}

/// `(name, phase)` of each pipeline under `status.kratix.workflows.<action>`.
fn keyed(obj: &Value, action: &str) -> Vec<(String, String)> {
    obj["status"]["kratix"]["workflows"][action]["pipelines"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            (
                p["name"].as_str().unwrap_or_default().to_string(),
                p["phase"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// The rows of `kratix-rs get …`, each split into its columns.
fn table(k: &Kratix, args: &[&str]) -> Vec<Vec<String>> {
    let out = k.run(args);
    out.assert_ok();
    out.stdout
        .lines()
        .skip(1)
        .map(|line| {
            line.split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(str::to_string)
                .collect()
        })
        .collect()
}

/// A request's configure workflow reports every pipeline under `configure`, with the hash of its
/// run; the delete workflow, suspended by its pipeline's `retryAfter`, reports under `delete`,
/// keeps the finalizer and says so in `DeleteWorkflowCompleted`, keeps no more than five runs
/// however often it is resumed, and leaves the configure entries as they were; once the pipeline
/// lets it go, the request goes. The resource configure workflow suspends the same way first.
#[test]
fn resource_workflows_report_under_their_own_key_and_suspend_until_resumed() {
    let (_gates, configure_gate, delete_gate, k) = serving_with_gates();
    let workflows = json!({"resource": {
        "configure": [step("a"), gated("gate", &configure_gate)],
        "delete": [gated("bye", &delete_gate)],
    }});
    k.apply_yaml(
        &format!(
            "{}\n---\n{}",
            things::promise_with_workflows(workflows),
            things::request("r1", 1)
        ),
        &["--no-wait"],
    )
    .assert_ok();

    // The configure workflow suspended by its second pipeline.
    let suspended = eventually("r1's configure workflow suspended", PATIENCE, || {
        let obj = thing(&k, "r1")?;
        (keyed(&obj, "configure") == pairs(&[("a", "Succeeded"), ("gate", "Suspended")]))
            .then_some(obj)
    });
    assert_eq!(
        cond(&suspended, "Reconciled"),
        said("Unknown", "WorkflowSuspended", "Suspended"),
        "{suspended:#}"
    );
    let configure = &suspended["status"]["kratix"]["workflows"]["configure"];
    assert_eq!(
        configure["suspendedGeneration"], suspended["metadata"]["generation"],
        "{configure:#}"
    );
    assert_eq!(
        configure["pipelines"][1]["message"],
        "waiting for release-configure"
    );
    assert!(
        configure["pipelines"][1]["nextRetryAt"].is_string(),
        "{configure:#}"
    );
    configure_gate.release();
    let settled = eventually("r1 reconciled", PATIENCE, || things::reconciled(&k, "r1"));
    let configure = settled["status"]["kratix"]["workflows"]["configure"].clone();
    assert_eq!(
        keyed(&settled, "configure"),
        pairs(&[("a", "Succeeded"), ("gate", "Succeeded")])
    );
    assert!(
        configure.get("suspendedGeneration").is_none(),
        "{configure:#}"
    );
    configure["lastSuccessfulConfigureWorkflowTime"]
        .as_str()
        .expect("lastSuccessfulConfigureWorkflowTime")
        .parse::<jiff::Timestamp>()
        .expect("an RFC 3339 time");
    let run_hash = runs(&k, "r1").last().map(|r| r.hash.clone());
    for entry in configure["pipelines"].as_array().expect("pipelines") {
        assert_eq!(entry["hash"].as_str(), run_hash.as_deref(), "{entry:#}");
    }

    // Deleting: the delete workflow suspends, again and again, and holds the request.
    k.run(&["delete", KIND, "r1", "--no-wait"]).assert_ok();
    let held = eventually("r1's delete workflow suspended", PATIENCE, || {
        let obj = thing(&k, "r1")?;
        (keyed(&obj, "delete") == pairs(&[("bye", "Suspended")])).then_some(obj)
    });
    assert_eq!(
        cond(&held, "DeleteWorkflowCompleted"),
        delete_suspended(),
        "{held:#}"
    );
    assert!(held["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(
        held["metadata"]["finalizers"],
        json!(["kratix.io/workflows-cleanup"]),
        "the finalizer stays while the delete workflow is suspended"
    );
    let delete = &held["status"]["kratix"]["workflows"]["delete"];
    assert_eq!(
        delete["suspendedGeneration"],
        held["metadata"]["generation"]
    );
    assert_eq!(
        delete["pipelines"][0]["message"],
        "waiting for release-delete"
    );
    assert_eq!(
        held["status"]["kratix"]["workflows"]["configure"], configure,
        "the delete workflow leaves the configure entries as they were"
    );
    let described = k.run(&["describe", KIND, "r1"]);
    described.assert_ok();
    assert!(
        described
            .stdout
            .lines()
            .any(|l| l
                .split_whitespace()
                .take(3)
                .eq(["bye", "delete", "Suspended"])),
        "{}",
        described.stdout
    );

    // Resumed after each retryAfter: more than five runs, never more than five kept.
    eventually("the delete pipeline resumed six times", PATIENCE, || {
        (delete_gate.runs() >= 7).then_some(())
    });
    let delete_runs: Vec<RunInfo> = runs(&k, "r1")
        .into_iter()
        .filter(|r| r.action == "delete")
        .collect();
    assert!(
        (1..=5).contains(&delete_runs.len()),
        "{} runs, at most five kept: {delete_runs:#?}",
        delete_gate.runs()
    );

    delete_gate.release();
    eventually("r1 gone", PATIENCE, || {
        thing(&k, "r1").is_none().then_some(())
    });
    let events = k.run(&["events", "-A"]);
    assert!(
        events.stdout.contains("WorkflowSuspended")
            && events
                .stdout
                .contains("delete pipeline bye suspended the workflow: waiting for release-delete"),
        "{}",
        events.stdout
    );
}

/// A Promise's configure workflow suspended by its pipeline leaves it unavailable
/// (`Available` False, `WorkflowSuspended`) until the pipeline lets it go; its delete workflow,
/// suspended without a `retryAfter`, keeps the Promise, reporting under `delete` beside its
/// configure entries, until a manual reconciliation resumes it.
#[test]
fn promise_workflows_suspend_until_resumed() {
    let (_gates, configure_gate, delete_gate, k) = serving_with_gates();
    let workflows = json!({"promise": {
        "configure": [gated("setup", &configure_gate)],
        "delete": [held("teardown", &delete_gate)],
    }});
    k.apply_yaml(&things::promise_with_workflows(workflows), &["--no-wait"])
        .assert_ok();
    let suspended = eventually("the promise workflow suspended", PATIENCE, || {
        let p = promise(&k)?;
        (keyed(&p, "configure") == pairs(&[("setup", "Suspended")])).then_some(p)
    });
    assert_eq!(
        cond(&suspended, "Available"),
        said("False", "WorkflowSuspended", "Suspended")
    );
    assert_eq!(
        cond(&suspended, "Reconciled"),
        said("Unknown", "WorkflowSuspended", "Suspended")
    );
    assert_eq!(suspended["status"]["status"], "Unavailable");
    assert_eq!(
        suspended["status"]["kratix"]["workflows"]["configure"]["suspendedGeneration"],
        suspended["metadata"]["generation"]
    );
    assert!(
        k.list_json("works", &["-A", "-l", "kratix.io/pipeline-name=setup"])
            .is_empty(),
        "a suspending pipeline writes no Work"
    );

    configure_gate.release();
    let available = eventually("the Promise available", PATIENCE, || {
        let p = promise(&k)?;
        (cond(&p, "Available").0 == "True").then_some(p)
    });
    assert_eq!(
        keyed(&available, "configure"),
        pairs(&[("setup", "Succeeded")])
    );
    let configure = available["status"]["kratix"]["workflows"]["configure"].clone();

    k.run(&["delete", "promise", "thing", "--no-wait"])
        .assert_ok();
    let held = eventually("the promise delete workflow suspended", PATIENCE, || {
        let p = promise(&k)?;
        (keyed(&p, "delete") == pairs(&[("teardown", "Suspended")])).then_some(p)
    });
    assert_eq!(cond(&held, "DeleteWorkflowCompleted"), delete_suspended());
    assert_eq!(
        held["metadata"]["finalizers"],
        json!(["kratix.io/workflows-cleanup"])
    );
    assert_eq!(
        held["status"]["kratix"]["workflows"]["configure"], configure,
        "the delete workflow leaves the configure entries as they were"
    );
    let teardown = &held["status"]["kratix"]["workflows"]["delete"]["pipelines"][0];
    assert_eq!(
        teardown["message"], "waiting for release-delete",
        "{held:#}"
    );
    assert!(
        teardown.get("nextRetryAt").is_none(),
        "waits for a person: {held:#}"
    );
    delete_gate.release();
    reconcile_promise(&k);
    eventually("the Promise gone", PATIENCE, || {
        promise(&k).is_none().then_some(())
    });
}

/// Renaming and removing pipelines (of the Promise's own workflow and of its requests') removes
/// their runs: `get pipelineruns -A` lists only the current pipelines'.
#[test]
fn runs_of_removed_or_renamed_pipelines_are_pruned() {
    let k = platform();
    let promise_with = |own: &str, resource: &[&str]| {
        things::promise_with_workflows(json!({
            "promise": {"configure": [step(own)]},
            "resource": {"configure": resource.iter().map(|p| step(p)).collect::<Vec<_>>()},
        }))
    };
    k.apply_yaml(
        &format!(
            "{}\n---\n{}",
            promise_with("setup", &["a", "b", "c"]),
            things::request("r1", 1)
        ),
        &["--timeout", "90"],
    )
    .assert_ok();
    let pipelines = |k: &Kratix| -> Vec<String> {
        let mut names: Vec<String> = table(k, &["get", "pipelineruns", "-A"])
            .into_iter()
            .map(|row| row[2].clone())
            .collect();
        names.sort();
        names.dedup();
        names
    };
    assert_eq!(pipelines(&k), ["a", "b", "c", "setup"]);

    // b renamed x, c removed, the Promise's own pipeline renamed.
    k.apply_yaml(&promise_with("prepare", &["a", "x"]), &["--timeout", "90"])
        .assert_ok();
    eventually("r1 re-run with a and x", PATIENCE, || {
        let done = runs(&k, "r1")
            .iter()
            .any(|r| r.pipeline == "x" && r.phase == "Succeeded");
        (done && things::reconciled(&k, "r1").is_some()).then_some(())
    });
    assert_eq!(pipelines(&k), ["a", "prepare", "x"]);
    let header = k.run(&["get", "pipelineruns", "-A"]);
    assert!(
        header.stdout.starts_with("NAMESPACE"),
        "the table has its columns: {}",
        header.stdout
    );
}

/// A Promise and a request stored with the earlier flat layout of `status.kratix.workflows` are
/// migrated when the controllers read them: the flat fields go and the keyed entries are rebuilt
/// from the runs; nothing runs again.
#[test]
fn the_flat_workflow_status_is_migrated() {
    let mut k = platform();
    let workflows = json!({
        "promise": {"configure": [step("setup")]},
        "resource": {"configure": [step("a"), step("b")]},
    });
    k.apply_yaml(
        &format!(
            "{}\n---\n{}",
            things::promise_with_workflows(workflows),
            things::request("r1", 1)
        ),
        &["--timeout", "90"],
    )
    .assert_ok();
    let runs_before = k.list_json("pipelineruns", &["-A"]).len();
    let flat = json!({
        "pipelines": [{"name": "a", "phase": "Succeeded"}, {}],
        "suspendedGeneration": 1,
        "lastSuccessfulConfigureWorkflowTime": "2020-01-01T00:00:00Z",
    });
    store_flat_layout(
        k.home(),
        &[("Promise", None, "thing"), ("Thing", Some("default"), "r1")],
        &flat,
    );
    let stored = thing(&k, "r1").expect("r1");
    assert_eq!(stored["status"]["kratix"]["workflows"], flat, "stored flat");

    k.start_serve_with(&[("KRATIX_LOG", "info")]);
    let migrated = |obj: &Value| {
        let workflows = &obj["status"]["kratix"]["workflows"];
        [
            "pipelines",
            "suspendedGeneration",
            "lastSuccessfulConfigureWorkflowTime",
        ]
        .iter()
        .all(|f| workflows.get(f).is_none())
            && workflows.get("configure").is_some()
    };
    let r1 = eventually("r1 migrated", PATIENCE, || {
        thing(&k, "r1").filter(|o| migrated(o))
    });
    let p = eventually("the Promise migrated", PATIENCE, || {
        promise(&k).filter(|o| migrated(o))
    });
    assert_eq!(
        keyed(&r1, "configure"),
        pairs(&[("a", "Succeeded"), ("b", "Succeeded")])
    );
    assert_eq!(keyed(&p, "configure"), pairs(&[("setup", "Succeeded")]));
    let r1_hash = runs(&k, "r1").last().map(|r| r.hash.clone());
    assert_eq!(
        r1["status"]["kratix"]["workflows"]["configure"]["pipelines"][1]["hash"].as_str(),
        r1_hash.as_deref()
    );
    assert_ne!(
        r1["status"]["kratix"]["workflows"]["configure"]["lastSuccessfulConfigureWorkflowTime"],
        "2020-01-01T00:00:00Z",
        "the flat time is dropped, not moved"
    );
    assert_eq!(
        k.list_json("pipelineruns", &["-A"]).len(),
        runs_before,
        "nothing ran again"
    );
    let log = k.serve_log();
    assert_eq!(
        log.matches("migrated the flat workflow status").count(),
        2,
        "{log}"
    );
}

/// Writes `flat` as `status.kratix.workflows` of each object through the home's control plane,
/// as an earlier version stored it.
fn store_flat_layout(home: &Path, objects: &[(&str, Option<&str>, &str)], flat: &Value) {
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    runtime.block_on(async {
        let platform = kratix::platform::Platform::open(home).expect("open the home");
        for (kind, namespace, name) in objects {
            let kind = platform.resolve_kind(kind).await.expect("a known kind");
            let mut obj = platform
                .store
                .get(&kind, *namespace, name)
                .await
                .expect("the control plane answers")
                .expect("the object exists");
            obj.data["status"]["kratix"]["workflows"] = flat.clone();
            platform
                .store
                .update_status(&kind, &obj)
                .await
                .expect("status stored");
        }
    });
}

/// Requests of a Promise without a resource configure workflow say `Resource requested` once
/// reconciled, `Pending` (in `Reconciled` and in `status.message`) while their Promise is
/// unavailable, and settle again by themselves once it is back: after its configure pipeline
/// failed and then succeeded, and after a required Promise was missing and then installed.
#[test]
fn requests_without_a_configure_workflow_follow_their_promise() {
    let dir = support::sandbox_visible_dir();
    let broken = dir.path().join("broken");
    let mut k = platform();
    k.start_serve();
    let check = json!({
        "apiVersion": "platform.kratix.io/v1alpha1", "kind": "Pipeline",
        "metadata": {"name": "check"},
        "spec": {"containers": [{"name": "main", "image": "local/sh",
            "command": ["sh", "-c", format!("test ! -e {}", text(&broken))]}]},
    });
    let promise_yaml = |requires: &[&str]| {
        let mut p: Value = serde_json::from_str(&things::promise_with_workflows(
            json!({"promise": {"configure": [check.clone()]}}),
        ))
        .expect("JSON");
        p["spec"]["requiredPromises"] = requires.iter().map(|r| json!({"name": r})).collect();
        p.to_string()
    };
    let columns = |k: &Kratix| -> Vec<String> {
        table(k, &["get", KIND])
            .into_iter()
            .find(|row| row[0] == "r1")
            .map(|row| row[1..].to_vec())
            .unwrap_or_default()
    };
    let settles = |k: &Kratix, what: &str| {
        eventually(what, PATIENCE, || {
            (columns(k) == ["Reconciled", "Resource requested"]).then_some(())
        })
    };
    let waits = |k: &Kratix, what: &str| {
        eventually(what, PATIENCE, || {
            (columns(k) == ["Pending", "Pending"]).then_some(())
        })
    };
    k.apply_yaml(
        &format!("{}\n---\n{}", promise_yaml(&[]), things::request("r1", 1)),
        &["--timeout", "90"],
    )
    .assert_ok();
    settles(&k, "r1 reconciled");
    let generation = thing(&k, "r1").expect("r1")["metadata"]["generation"].clone();

    // The Promise's configure pipeline fails: unavailable, and its requests wait.
    std::fs::write(&broken, "").expect("break the pipeline");
    reconcile_promise(&k);
    waits(&k, "r1 to wait for its failed Promise");
    let r1 = thing(&k, "r1").expect("r1");
    assert_eq!(
        cond(&r1, "Reconciled"),
        said("Unknown", "PromiseNotAvailable", "Pending")
    );
    assert_eq!(cond(&r1, "PromiseAvailable").0, "False");
    // Fixed: the failed pipeline is retried, the Promise comes back, and so does r1.
    std::fs::remove_file(&broken).expect("fix the pipeline");
    settles(&k, "r1 back with its Promise");

    // A required Promise missing, then installed.
    k.apply_yaml(&promise_yaml(&["base"]), &["--no-wait"])
        .assert_ok();
    waits(&k, "r1 to wait for its Promise's requirement");
    k.apply_yaml(
        &json!({"apiVersion": "platform.kratix.io/v1alpha1", "kind": "Promise",
                "metadata": {"name": "base"}, "spec": {}})
        .to_string(),
        &["--timeout", "90"],
    )
    .assert_ok();
    settles(&k, "r1 back once the requirement is there");
    let r1 = thing(&k, "r1").expect("r1");
    assert_eq!(
        r1["metadata"]["generation"], generation,
        "r1 was not touched"
    );
    assert_eq!(cond(&r1, "Reconciled").0, "True");
    assert_eq!(cond(&r1, "PromiseAvailable").0, "True");
    assert!(runs(&k, "r1").is_empty(), "nothing ran for r1");
}
