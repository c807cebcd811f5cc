//! The `kratix.io/workflow-suspended` label, as Kratix's own system test expects it
//! (`test/system/workflow_control_test.go`, "pipelines are suspended by the workflow control
//! file"), on that test's own assets (`fixtures/kratix-workflow-control`) through the binary: a
//! suspended object carries the label; removing it resumes the workflow from the suspended
//! pipeline (which runs again; those before it do not); a manual reconciliation or a spec update
//! starts over; the label goes when the workflow goes on. Promise and request, configure and
//! delete workflows. The assets' containers run `/bin/sh` on the host (in the sandbox) and read
//! their gates (ConfigMaps) with `kubectl` through the platform's API.

mod support;

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;
use support::statuses::{cond, delete_suspended, keyed, pairs};
use support::{eventually, kubectl, Kratix};

const PATIENCE: Duration = Duration::from_secs(180);
const PROMISE: &str = "workflow-suspend";
const PLURAL: &str = "workflowsuspends";
const REQUEST: &str = "suspend-test";
const LABEL: &str = "kratix.io/workflow-suspended";

fn asset(name: &str) -> String {
    let path: PathBuf = support::fixtures()
        .join("kratix-workflow-control")
        .join(name);
    path.display().to_string()
}

fn apply(k: &Kratix, file: &str) {
    k.run(&["apply", "-f", &asset(file), "--no-wait"])
        .assert_ok();
}

/// The ConfigMap that holds the Promise's delete pipeline, as Kratix's test creates it.
const PROMISE_DELETE_GATE: &str = r"apiVersion: v1
kind: ConfigMap
metadata:
  name: workflow-suspend-promise-delete-gate
  namespace: kratix-platform-system
";

fn object(k: &Kratix, kind: &str) -> Option<Value> {
    match kind {
        "promise" => k.get_json("promise", PROMISE, None),
        _ => k.get_json(PLURAL, REQUEST, Some("default")),
    }
}

fn suspended_label(obj: &Value) -> Option<&str> {
    obj["metadata"]["labels"][LABEL].as_str()
}

/// `(phase, message)` of a pipeline under `status.kratix.workflows.<action>`.
fn pipeline(obj: &Value, action: &str, name: &str) -> (String, String) {
    let entry = obj["status"]["kratix"]["workflows"][action]["pipelines"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["name"] == name);
    let field = |f: &str| {
        entry
            .and_then(|p| p[f].as_str())
            .unwrap_or_default()
            .to_string()
    };
    (field("phase"), field("message"))
}

/// How many runs of a pipeline there have been.
fn runs_of(k: &Kratix, pipeline: &str) -> usize {
    let selector = format!("kratix.io/promise-name={PROMISE},kratix.io/pipeline-name={pipeline}");
    k.list_json("pipelineruns", &["-A", "-l", &selector]).len()
}

/// The Works of the request's pipeline.
fn request_works(k: &Kratix) -> usize {
    let selector = format!("kratix.io/resource-name={REQUEST}");
    k.list_json("works", &["-A", "-l", &selector]).len()
}

fn unlabel(k: &Kratix, kind: &str, name: &str) {
    let mut args = vec!["label", kind, name, "kratix.io/workflow-suspended-"];
    if kind == PLURAL {
        args.extend(["-n", "default"]);
    }
    k.run(&args).assert_ok();
}

/// The Promise suspended at pipe-1, waiting for approval, labelled so.
fn promise_suspended_at_pipe_1(k: &Kratix) -> Value {
    eventually("the Promise suspended at pipe-1", PATIENCE, || {
        let p = object(k, "promise")?;
        let done = keyed(&p, "configure")
            == pairs(&[
                ("pipe-0", "Succeeded"),
                ("pipe-1", "Suspended"),
                ("pipe-2", "Pending"),
            ])
            && pipeline(&p, "configure", "pipe-1").1 == "waiting for approval"
            && suspended_label(&p) == Some("true");
        done.then_some(p)
    })
}

#[test]
fn the_workflow_suspended_label_as_kratix_system_test_expects_it() {
    let Some(_kubectl) = kubectl::binary() else {
        return;
    };
    let mut k = Kratix::new();
    k.start_serve_args(&["--api-addr", "127.0.0.1:0"], &[]);

    // Suspending the correct pipeline.
    apply(&k, "promise.yaml");
    promise_suspended_at_pipe_1(&k);
    assert_eq!(runs_of(&k, "pipe-2"), 0);

    // Removing the suspend label resumes from the suspended pipeline.
    let (pipe0, pipe1, pipe2) = (
        runs_of(&k, "pipe-0"),
        runs_of(&k, "pipe-1"),
        runs_of(&k, "pipe-2"),
    );
    unlabel(&k, "promise", PROMISE);
    eventually("pipe-1 to run again", PATIENCE, || {
        (runs_of(&k, "pipe-1") == pipe1 + 1).then_some(())
    });
    promise_suspended_at_pipe_1(&k);
    assert_eq!(runs_of(&k, "pipe-0"), pipe0, "pipe-0 does not run again");
    assert_eq!(runs_of(&k, "pipe-2"), pipe2, "pipe-2 does not run");

    // The manual reconciliation label restarts from the beginning.
    let (pipe0, pipe1, pipe2) = (
        runs_of(&k, "pipe-0"),
        runs_of(&k, "pipe-1"),
        runs_of(&k, "pipe-2"),
    );
    k.run(&[
        "label",
        "promise",
        PROMISE,
        "kratix.io/manual-reconciliation=true",
        "--overwrite",
    ])
    .assert_ok();
    eventually("pipe-0 and pipe-1 to run again", PATIENCE, || {
        (runs_of(&k, "pipe-0") == pipe0 + 1 && runs_of(&k, "pipe-1") == pipe1 + 1).then_some(())
    });
    promise_suspended_at_pipe_1(&k);
    assert_eq!(runs_of(&k, "pipe-2"), pipe2, "pipe-2 does not run");

    // Updating the Promise's spec restarts from the beginning, and this time nothing suspends.
    let (pipe0, pipe1, pipe2) = (
        runs_of(&k, "pipe-0"),
        runs_of(&k, "pipe-1"),
        runs_of(&k, "pipe-2"),
    );
    apply(&k, "promise-updated.yaml");
    let p = eventually("the updated Promise's workflow completed", PATIENCE, || {
        let p = object(&k, "promise")?;
        let done = keyed(&p, "configure")
            == pairs(&[
                ("pipe-0", "Succeeded"),
                ("pipe-1", "Succeeded"),
                ("pipe-2", "Succeeded"),
            ])
            && cond(&p, "ConfigureWorkflowCompleted").0 == "True";
        done.then_some(p)
    });
    assert_eq!(
        (
            runs_of(&k, "pipe-0"),
            runs_of(&k, "pipe-1"),
            runs_of(&k, "pipe-2")
        ),
        (pipe0 + 1, pipe1 + 1, pipe2 + 1)
    );
    assert_eq!(pipeline(&p, "configure", "pipe-1").1, "");
    assert!(
        p["status"]["kratix"]["workflows"]["configure"]
            .get("suspendedGeneration")
            .is_none(),
        "{p:#}"
    );
    assert_eq!(suspended_label(&p), None, "{p:#}");

    // Suspending the resource pipeline: no Work while it waits for its ConfigMap.
    apply(&k, "resource-request.yaml");
    eventually("the request suspended", PATIENCE, || {
        let r = object(&k, PLURAL)?;
        let done = pipeline(&r, "configure", "resource-pipe-0")
            == ("Suspended".into(), "waiting for configmap".into())
            && suspended_label(&r) == Some("true");
        done.then_some(())
    });
    assert_eq!(request_works(&k), 0);

    // Unsuspending it through the label, once its ConfigMap is there.
    let before = runs_of(&k, "resource-pipe-0");
    apply(&k, "configmap.yaml");
    unlabel(&k, PLURAL, REQUEST);
    let r = eventually("the request's workflow completed", PATIENCE, || {
        let r = object(&k, PLURAL)?;
        let done = pipeline(&r, "configure", "resource-pipe-0")
            == ("Succeeded".into(), String::new())
            && cond(&r, "ConfigureWorkflowCompleted").0 == "True";
        done.then_some(r)
    });
    assert_eq!(runs_of(&k, "resource-pipe-0"), before + 1);
    assert!(
        r["status"]["kratix"]["workflows"]["configure"]
            .get("suspendedGeneration")
            .is_none(),
        "{r:#}"
    );
    assert_eq!(suspended_label(&r), None, "{r:#}");
    eventually("the request's Work", PATIENCE, || {
        (request_works(&k) == 1).then_some(())
    });

    // Deleting the request suspends its delete pipeline (the ConfigMap is there); its Works stay.
    k.run(&["delete", PLURAL, REQUEST, "-n", "default", "--no-wait"])
        .assert_ok();
    let r = eventually("the request's delete workflow suspended", PATIENCE, || {
        let r = object(&k, PLURAL)?;
        let done = pipeline(&r, "delete", "resource-delete-pipe")
            == ("Suspended".into(), "waiting for delete approval".into())
            && suspended_label(&r) == Some("true");
        done.then_some(r)
    });
    assert_eq!(cond(&r, "DeleteWorkflowCompleted"), delete_suspended());
    assert_eq!(
        request_works(&k),
        1,
        "Works stay while the delete workflow is suspended"
    );

    // Resuming the deletion once the gate is gone and the label cleared.
    k.run(&["delete", "-f", &asset("configmap.yaml")])
        .assert_ok();
    unlabel(&k, PLURAL, REQUEST);
    eventually("the request gone", PATIENCE, || {
        object(&k, PLURAL).is_none().then_some(())
    });

    // Deleting the Promise with its delete gate there suspends its delete pipeline, once.
    k.apply_yaml(PROMISE_DELETE_GATE, &["--no-wait"])
        .assert_ok();
    k.run(&["delete", "promise", PROMISE, "--no-wait"])
        .assert_ok();
    let p = eventually("the Promise's delete workflow suspended", PATIENCE, || {
        let p = object(&k, "promise")?;
        let done = pipeline(&p, "delete", "promise-delete-pipe")
            == (
                "Suspended".into(),
                "waiting for promise delete approval".into(),
            )
            && suspended_label(&p) == Some("true");
        done.then_some(p)
    });
    assert_eq!(cond(&p, "DeleteWorkflowCompleted"), delete_suspended());
    assert_eq!(runs_of(&k, "promise-delete-pipe"), 1);

    // Resuming the Promise's deletion once the gate is gone and the label cleared.
    k.run(&[
        "delete",
        "configmap",
        "workflow-suspend-promise-delete-gate",
        "-n",
        "kratix-platform-system",
    ])
    .assert_ok();
    unlabel(&k, "promise", PROMISE);
    eventually("the Promise gone", PATIENCE, || {
        object(&k, "promise").is_none().then_some(())
    });
}
