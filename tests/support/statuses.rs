//! What the workflow-status tests share: pipelines running the fixture scripts (as plain
//! processes, so that they share files with the test), gates that hold a pipeline's workflow
//! suspended until the test lets it go, and readers of the conditions and of Kratix's keyed
//! `status.kratix.workflows`.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::things::KIND;
use super::{condition, git_destination_yaml, Kratix};

/// A pipeline of one container running a fixture script with extra environment.
pub(crate) fn pipe(name: &str, script: &str, env: &[(&str, &str)]) -> Value {
    let script = super::sandbox_fixtures("workflows/scripts").join(script);
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
pub(crate) fn step(name: &str) -> Value {
    pipe(name, "step.sh", &[])
}

/// A pipeline that suspends its workflow (a `retryAfter` of one second, again and again) until
/// `gate.release()`, counting its runs.
pub(crate) fn gated(name: &str, gate: &Gate) -> Value {
    suspending(name, gate, "1s")
}

/// A pipeline that suspends its workflow (`suspend: true`, no `retryAfter`) until
/// `gate.release()` and a manual reconciliation resumes it.
pub(crate) fn held(name: &str, gate: &Gate) -> Value {
    suspending(name, gate, "")
}

/// `suspend-until.sh` behind `gate`, with `retry_after` (none when empty).
pub(crate) fn suspending(name: &str, gate: &Gate, retry_after: &str) -> Value {
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
pub(crate) struct Gate {
    pub release: PathBuf,
    pub counter: PathBuf,
}

impl Gate {
    pub(crate) fn new(dir: &Path, name: &str) -> Self {
        Gate {
            release: dir.join(format!("release-{name}")),
            counter: dir.join(format!("runs-{name}")),
        }
    }

    pub(crate) fn release(&self) {
        std::fs::write(&self.release, "").expect("write the release file");
    }

    pub(crate) fn runs(&self) -> usize {
        std::fs::read_to_string(&self.counter).map_or(0, |t| t.lines().count())
    }
}

/// A serving home, and the gates of a configure and a delete pipeline (in a folder the caller
/// keeps while they are used).
pub(crate) fn serving_with_gates() -> (tempfile::TempDir, Gate, Gate, Kratix) {
    let gates = super::sandbox_visible_dir();
    let configure = Gate::new(gates.path(), "configure");
    let delete = Gate::new(gates.path(), "delete");
    let mut k = platform();
    k.start_serve();
    (gates, configure, delete, k)
}

pub(crate) fn text(path: &Path) -> String {
    path.to_str().expect("UTF-8 path").to_string()
}

/// A home with a Git state store and Destination `worker-1`, its pipelines run as processes.
pub(crate) fn platform() -> Kratix {
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
pub(crate) fn reconcile_promise(k: &Kratix) {
    k.run(&[
        "label",
        "promise",
        "thing",
        "kratix.io/manual-reconciliation=true",
    ])
    .assert_ok();
}

pub(crate) fn promise(k: &Kratix) -> Option<Value> {
    k.get_json("promise", "thing", None)
}

pub(crate) fn thing(k: &Kratix, name: &str) -> Option<Value> {
    k.get_json(KIND, name, None)
}

/// `(status, reason, message)` of a condition, empty when it is missing.
pub(crate) fn cond(obj: &Value, type_: &str) -> (String, String, String) {
    let c = condition(obj, type_);
    let f = |field: &str| {
        c.and_then(|c| c[field].as_str())
            .unwrap_or_default()
            .to_string()
    };
    (f("status"), f("reason"), f("message"))
}

/// A condition's `(status, reason, message)` as [`cond`] reads it.
pub(crate) fn said(status: &str, reason: &str, message: &str) -> (String, String, String) {
    (status.into(), reason.into(), message.into())
}

/// `DeleteWorkflowCompleted` of a suspended delete workflow, as Kratix words it.
pub(crate) fn delete_suspended() -> (String, String, String) {
    said(
        "False",
        "DeleteWorkflowSuspended",
        "The delete workflow is suspended",
    )
}

/// `(name, phase)` of each pipeline under `status.kratix.workflows.<action>`.
pub(crate) fn keyed(obj: &Value, action: &str) -> Vec<(String, String)> {
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

pub(crate) fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// The rows of `kratix-rs get …`, each split into its columns.
pub(crate) fn table(k: &Kratix, args: &[&str]) -> Vec<Vec<String>> {
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
