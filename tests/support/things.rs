//! The Promise `thing` (kind `Thing`, `spec.size`) with configure pipelines that each render one
//! ConfigMap carrying the request's size (`fixtures/workflows/scripts/step.sh`), and what tests
//! read back: PipelineRuns with their order and times, and whether a request has settled.

use std::path::PathBuf;

use serde_json::{json, Value};

use super::{condition, Kratix};

pub(crate) const KIND: &str = "things";

fn scripts_dir() -> PathBuf {
    super::sandbox_fixtures("workflows/scripts")
}

/// The command of a container that renders its pipeline's ConfigMap.
pub(crate) fn step_command() -> Vec<String> {
    vec![
        "sh".into(),
        scripts_dir().join("step.sh").display().to_string(),
    ]
}

/// The Promise with one `step.sh` pipeline per name, in order.
pub(crate) fn promise(pipelines: &[&str]) -> String {
    let with_commands: Vec<(&str, Vec<String>)> = pipelines
        .iter()
        .map(|name| (*name, step_command()))
        .collect();
    promise_with(&with_commands)
}

/// The Promise with one pipeline per name, each of one container running the given command.
pub(crate) fn promise_with(pipelines: &[(&str, Vec<String>)]) -> String {
    let pipelines: Vec<Value> = pipelines
        .iter()
        .map(|(name, command)| pipeline(name, command))
        .collect();
    promise_with_workflows(json!({"resource": {"configure": pipelines}}))
}

/// A Pipeline of one container running `command`.
pub(crate) fn pipeline(name: &str, command: &[String]) -> Value {
    json!({
        "apiVersion": "platform.kratix.io/v1alpha1",
        "kind": "Pipeline",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "main", "image": "local/sh", "command": command}]},
    })
}

/// A command that fails with exit code 3.
pub(crate) fn failing_command() -> Vec<String> {
    vec!["sh".into(), "-c".into(), "exit 3".into()]
}

/// The Promise at `version` (its `kratix.io/promise-version` label), with one `step.sh` pipeline
/// per name; a pipeline named `broken` fails.
pub(crate) fn promise_at(version: &str, pipelines: &[&str]) -> String {
    let with_commands: Vec<(&str, Vec<String>)> = pipelines
        .iter()
        .map(|name| match *name {
            "broken" => (*name, failing_command()),
            _ => (*name, step_command()),
        })
        .collect();
    let mut promise: Value =
        serde_json::from_str(&promise_with(&with_commands)).expect("promise JSON");
    promise["metadata"]["labels"] = json!({"kratix.io/promise-version": version});
    promise.to_string()
}

/// A Pipeline of one `version.sh` container: it reports `KRATIX_PROMISE_VERSION` as the
/// object's `status.seenVersion` (and appends it to `record`, when given: process isolation).
/// `spec_of` goes into the container's `env` (`SPEC_OF`), which the script ignores: Promises of
/// different versions must differ in spec for their requests to run again, as in Kratix.
pub(crate) fn version_pipeline(name: &str, spec_of: &str, record: Option<&str>) -> Value {
    let command = vec![
        "sh".to_string(),
        scripts_dir().join("version.sh").display().to_string(),
    ];
    let mut p = pipeline(name, &command);
    let mut env = vec![json!({"name": "SPEC_OF", "value": spec_of})];
    if let Some(record) = record {
        env.push(json!({"name": "RECORD", "value": record}));
    }
    p["spec"]["containers"][0]["env"] = json!(env);
    p
}

/// The Promise at `version` whose every workflow (promise and resource, configure and delete)
/// is one `version.sh` pipeline.
pub(crate) fn promise_reporting_versions(version: &str, record: Option<&str>) -> String {
    let one = |name: &str| json!([version_pipeline(name, version, record)]);
    let workflows = json!({
        "promise": {"configure": one("promise-version")},
        "resource": {"configure": one("version"), "delete": one("version-at-delete")},
    });
    let mut promise: Value =
        serde_json::from_str(&promise_with_workflows(workflows)).expect("promise JSON");
    promise["metadata"]["labels"] = json!({"kratix.io/promise-version": version});
    promise.to_string()
}

/// The Promise `thing` (kind `Thing`: `spec.size`, an integer, and `spec.mode`, a string) with
/// the given `spec.workflows`, as JSON (which is YAML).
pub(crate) fn promise_with_workflows(workflows: Value) -> String {
    json!({
        "apiVersion": "platform.kratix.io/v1alpha1",
        "kind": "Promise",
        "metadata": {"name": "thing"},
        "spec": {
            "api": {
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": "things.test.kratix.io"},
                "spec": {
                    "group": "test.kratix.io",
                    "names": {"kind": "Thing", "plural": "things", "singular": "thing"},
                    "scope": "Namespaced",
                    "versions": [{
                        "name": "v1alpha1", "served": true, "storage": true,
                        "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                            "spec": {"type": "object", "properties": {
                                "size": {"type": "integer"},
                                "mode": {"type": "string"},
                            }},
                        }}},
                    }],
                },
            },
            "workflows": workflows,
        },
    })
    .to_string()
}

/// A `Thing` in namespace `default`.
pub(crate) fn request(name: &str, size: i64) -> String {
    json!({
        "apiVersion": "test.kratix.io/v1alpha1",
        "kind": "Thing",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"size": size},
    })
    .to_string()
}

/// One PipelineRun as the tests read it.
#[derive(Debug, Clone)]
pub(crate) struct RunInfo {
    pub name: String,
    pub pipeline: String,
    pub action: String,
    pub hash: String,
    pub sequence: i64,
    pub phase: String,
    pub start: Option<jiff::Timestamp>,
    pub completion: Option<jiff::Timestamp>,
    pub message: String,
    pub raw: Value,
}

impl RunInfo {
    pub(crate) fn from_json(run: &Value) -> Self {
        let s = |p: &str| {
            run.pointer(p)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let time = |p: &str| {
            run.pointer(p)
                .and_then(Value::as_str)
                .map(|t| t.parse::<jiff::Timestamp>().expect("RFC 3339 time"))
        };
        RunInfo {
            name: s("/metadata/name"),
            pipeline: s("/spec/pipelineName"),
            action: s("/spec/workflowAction"),
            hash: s("/metadata/labels/kratix.io~1hash"),
            sequence: run
                .pointer("/spec/sequence")
                .and_then(Value::as_i64)
                .expect("sequence"),
            phase: s("/status/phase"),
            start: time("/status/startTime"),
            completion: time("/status/completionTime"),
            message: s("/status/message"),
            raw: run.clone(),
        }
    }
}

/// Every PipelineRun of a request, by sequence.
pub(crate) fn runs(k: &Kratix, request: &str) -> Vec<RunInfo> {
    let selector = format!("kratix.io/resource-name={request}");
    let mut runs: Vec<RunInfo> = k
        .list_json("pipelineruns", &["-A", "-l", &selector])
        .iter()
        .map(RunInfo::from_json)
        .collect();
    runs.sort_by_key(|r| r.sequence);
    runs
}

/// Runs of one object never overlapped: every run that started did so after the run before it
/// (by sequence) had completed, and none is still running.
#[track_caller]
pub(crate) fn assert_never_overlapped(runs: &[RunInfo]) {
    let started: Vec<&RunInfo> = runs.iter().filter(|r| r.start.is_some()).collect();
    for run in &started {
        assert!(
            run.completion.is_some() && run.phase != "Running",
            "{} has not completed: {runs:#?}",
            run.name
        );
    }
    for pair in started.windows(2) {
        let (before, after) = (pair[0], pair[1]);
        assert!(
            before.completion <= after.start,
            "{} started before {} completed: {runs:#?}",
            after.name,
            before.name
        );
    }
}

/// The request once its configure workflow completed for its current generation and its Works
/// are written.
pub(crate) fn reconciled(k: &Kratix, name: &str) -> Option<Value> {
    let obj = k.get_json(KIND, name, None)?;
    let current = obj["status"]["observedGeneration"] == obj["metadata"]["generation"];
    let done = condition(&obj, "Reconciled").and_then(|c| c["status"].as_str()) == Some("True");
    (current && done).then_some(obj)
}
