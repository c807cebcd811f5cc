//! Kratix's keyed workflow status, through the binary: `status.kratix.workflows.<action>` after
//! the configure workflow (the delete workflow's key: `workflow_control.rs`); objects stored with
//! the earlier flat layout migrated; the runs of removed or renamed pipelines pruned; requests of
//! a Promise without a resource configure workflow.

mod support;

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};
use support::statuses::{
    cond, keyed, pairs, platform, promise, reconcile_promise, said, step, table, text, thing,
};
use support::things::{self, runs, KIND};
use support::{eventually, Kratix};

const PATIENCE: Duration = Duration::from_secs(90);

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
        });
    };
    let waits = |k: &Kratix, what: &str| {
        eventually(what, PATIENCE, || {
            (columns(k) == ["Pending", "Pending"]).then_some(())
        });
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
