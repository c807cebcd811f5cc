//! A paused object and a spec changed while it is paused, through the binary: the object keeps
//! the generation it last acted on (`status.observedGeneration`), says it is paused, and once
//! the label goes `wait --for condition=ConfigureWorkflowCompleted` holds until the pipelines of
//! the new generation have run — for a request and for a Promise.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::{condition, eventually, things, Kratix};

const PATIENCE: Duration = Duration::from_secs(90);

/// A pipeline that succeeds with no output.
fn quiet(name: &str) -> Value {
    things::pipeline(name, &["true".to_string()])
}

/// The Promise `thing` with the given promise configure pipelines and one resource pipeline.
fn promise(promise_pipelines: &[&str]) -> String {
    let pipelines: Vec<Value> = promise_pipelines.iter().map(|p| quiet(p)).collect();
    things::promise_with_workflows(json!({
        "promise": {"configure": pipelines},
        "resource": {"configure": [quiet("first"), quiet("second")]},
    }))
}

fn generation(obj: &Value) -> (i64, i64) {
    (
        obj["metadata"]["generation"].as_i64().unwrap_or_default(),
        obj["status"]["observedGeneration"]
            .as_i64()
            .unwrap_or_default(),
    )
}

fn says_paused(obj: &Value) -> bool {
    condition(obj, "Reconciled").is_some_and(|c| {
        (&c["status"], &c["reason"], &c["message"])
            == (
                &json!("Unknown"),
                &json!("PausedReconciliation"),
                &json!("Paused"),
            )
    })
}

/// The Promise's own PipelineRuns, by sequence.
fn promise_runs(k: &Kratix) -> Vec<things::RunInfo> {
    let mut runs: Vec<things::RunInfo> = k
        .list_json(
            "pipelineruns",
            &[
                "-A",
                "-l",
                "kratix.io/promise-name=thing,kratix.io/workflow-type=promise",
            ],
        )
        .iter()
        .map(things::RunInfo::from_json)
        .collect();
    runs.sort_by_key(|r| r.sequence);
    runs
}

/// Pauses `kind`/`name` and waits until it says so.
fn pause(k: &Kratix, kind: &str, name: &str) -> Value {
    k.run(&["label", kind, name, "kratix.io/paused=true"])
        .assert_ok();
    eventually("the object to say it is paused", PATIENCE, || {
        k.get_json(kind, name, None).filter(says_paused)
    })
}

/// While paused, the changed spec is stored but not claimed as seen; a short look (completing
/// the change wakes the object at once) proves nothing ran for it.
#[track_caller]
fn assert_still_at(k: &Kratix, kind: &str, name: &str, observed: i64, runs_before: usize) {
    std::thread::sleep(Duration::from_secs(2));
    let obj = k.get_json(kind, name, None).expect("the object");
    assert_eq!(
        generation(&obj),
        (observed + 1, observed),
        "a paused object does not claim to have seen its new spec: {obj:#}"
    );
    assert!(says_paused(&obj), "{obj:#}");
    let runs = match kind {
        "promise" => promise_runs(k).len(),
        _ => things::runs(k, name).len(),
    };
    assert_eq!(runs, runs_before, "nothing runs while paused");
}

/// Unpauses `kind`/`name` and waits, right away, for its configure workflow.
fn unpause_and_wait(k: &Kratix, kind: &str, name: &str) {
    k.run(&["label", kind, name, "kratix.io/paused-"])
        .assert_ok();
    k.run(&[
        "wait",
        kind,
        name,
        "--for",
        "condition=ConfigureWorkflowCompleted",
        "--timeout",
        "90",
    ])
    .assert_ok();
}

#[test]
fn a_paused_request_keeps_its_generation_and_wait_holds_for_the_new_one() {
    let mut k = Kratix::new();
    k.start_serve();
    k.apply_yaml(&promise(&[]), &["--timeout", "90"])
        .assert_ok();
    k.apply_yaml(&things::request("r", 1), &["--timeout", "90"])
        .assert_ok();
    let first_hash = things::runs(&k, "r").last().expect("a run").hash.clone();
    let before = things::runs(&k, "r").len();

    pause(&k, things::KIND, "r");
    // `apply` of the changed spec keeps the pause (the file does not lift it) and returns: a
    // paused object has nothing to wait for.
    k.apply_yaml(&things::request("r", 2), &["--timeout", "90"])
        .assert_ok();
    assert_still_at(&k, things::KIND, "r", 1, before);

    unpause_and_wait(&k, things::KIND, "r");
    // Read at once: the wait returned only after generation 2's pipelines ran.
    let obj = k.get_json(things::KIND, "r", None).expect("r");
    assert_eq!(generation(&obj), (2, 2), "{obj:#}");
    let runs = things::runs(&k, "r");
    let last_hash = runs.last().expect("a run").hash.clone();
    assert_ne!(last_hash, first_hash, "{runs:#?}");
    let ran: Vec<(&str, &str)> = runs
        .iter()
        .filter(|r| r.hash == last_hash)
        .map(|r| (r.pipeline.as_str(), r.phase.as_str()))
        .collect();
    assert_eq!(
        ran,
        [("first", "Succeeded"), ("second", "Succeeded")],
        "{runs:#?}"
    );
}

#[test]
fn a_paused_promise_keeps_its_generation_and_wait_holds_for_the_new_one() {
    let mut k = Kratix::new();
    k.start_serve();
    k.apply_yaml(&promise(&["one"]), &["--timeout", "90"])
        .assert_ok();
    let before = promise_runs(&k).len();
    assert_eq!(before, 1);

    pause(&k, "promise", "thing");
    // Generation 2 adds a pipeline to the promise workflow.
    k.apply_yaml(&promise(&["one", "two"]), &["--timeout", "90"])
        .assert_ok();
    assert_still_at(&k, "promise", "thing", 1, before);

    unpause_and_wait(&k, "promise", "thing");
    let obj = k.get_json("promise", "thing", None).expect("thing");
    assert_eq!(generation(&obj), (2, 2), "{obj:#}");
    let ran: Vec<(String, String)> = promise_runs(&k)
        .into_iter()
        .skip(before)
        .map(|r| (r.pipeline, r.phase))
        .collect();
    assert_eq!(
        ran,
        [
            ("one".to_string(), "Succeeded".to_string()),
            ("two".to_string(), "Succeeded".to_string())
        ],
        "the new generation's pipelines ran before the wait returned"
    );
}
