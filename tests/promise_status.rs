//! A Promise's status beside its conditions, through the binary, as Kratix fills it:
//! `requiredBy` on a required Promise, the workflow counters, `lastAvailableTime`, and
//! `status.kratix` repeating what Kratix owns; `describe promise` shows them.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::{eventually, things, Kratix};

const WAIT: Duration = Duration::from_secs(90);

/// A Promise with no API and no workflows, labelled with a version: available at once.
fn small_promise(name: &str, version: &str) -> String {
    json!({
        "apiVersion": "platform.kratix.io/v1alpha1",
        "kind": "Promise",
        "metadata": {"name": name, "labels": {"kratix.io/promise-version": version}},
        "spec": {},
    })
    .to_string()
}

/// The `thing` Promise at v2 with two promise configure pipelines, requiring `requires`
/// (`[(name, version)]`).
fn thing(requires: &[(&str, &str)]) -> String {
    let pipeline = |name: &str| things::pipeline(name, &things::step_command());
    let mut promise: Value = serde_json::from_str(&things::promise_with_workflows(json!({
        "promise": {"configure": [pipeline("first"), pipeline("second")]},
    })))
    .expect("the Promise is JSON");
    promise["metadata"]["labels"] = json!({"kratix.io/promise-version": "v2"});
    promise["spec"]["requiredPromises"] = requires
        .iter()
        .map(|(name, version)| json!({"name": name, "version": version}))
        .collect();
    promise.to_string()
}

fn promise(k: &Kratix, name: &str) -> Value {
    k.get_json("promise", name, None)
        .unwrap_or_else(|| panic!("promise {name} exists"))
}

/// `workflows`, `workflowsSucceeded`, `workflowsFailed` of a Promise's status (-1 when missing).
fn counters(status: &Value) -> (i64, i64, i64) {
    let n = |field: &str| status[field].as_i64().unwrap_or(-1);
    (
        n("workflows"),
        n("workflowsSucceeded"),
        n("workflowsFailed"),
    )
}

fn describe(k: &Kratix, name: &str) -> String {
    let out = k.run(&["describe", "promise", name]);
    out.assert_ok();
    out.stdout.clone()
}

#[test]
fn a_promise_status_says_who_requires_it_and_how_its_workflow_went() {
    let mut k = Kratix::new();
    k.start_serve();
    k.apply_yaml(
        &format!(
            "{}\n---\n{}",
            small_promise("base", "v1"),
            thing(&[("base", "v1")])
        ),
        &["--no-wait"],
    )
    .assert_ok();

    let available = eventually("thing to be available", WAIT, || {
        let p = promise(&k, "thing");
        (p["status"]["status"] == "Available").then_some(p)
    });
    let status = &available["status"];
    assert_eq!(counters(status), (2, 2, 0), "{status:#}");
    let since = status["lastAvailableTime"]
        .as_str()
        .expect("lastAvailableTime");
    since
        .parse::<jiff::Timestamp>()
        .expect("lastAvailableTime is RFC 3339");
    let kratix = &status["kratix"];
    assert_eq!(kratix["status"], "Available", "{status:#}");
    assert_eq!(kratix["version"], "v2");
    assert_eq!(kratix["kind"], "Thing");
    assert_eq!(kratix["apiVersion"], "test.kratix.io/v1alpha1");
    assert_eq!(kratix["lastAvailableTime"], since);
    let phases: Vec<(&str, &str)> = kratix["workflows"]["configure"]["pipelines"]
        .as_array()
        .expect("status.kratix.workflows.configure.pipelines")
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap_or_default(),
                p["phase"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(phases, [("first", "Succeeded"), ("second", "Succeeded")]);

    let base = eventually("base lists thing in requiredBy", WAIT, || {
        let p = promise(&k, "base");
        p["status"].get("requiredBy").is_some().then_some(p)
    });
    assert_eq!(
        base["status"]["requiredBy"],
        json!([{"promise": {"name": "thing", "version": "v2"}, "requiredVersion": "v1"}])
    );
    assert!(base["status"]["lastAvailableTime"].is_string(), "{base:#}");
    assert_eq!(
        counters(&base["status"]),
        (0, 0, 0),
        "no workflows: {base:#}"
    );

    let described = describe(&k, "base");
    assert!(
        described.contains("Required By:    thing (v2) requires v1"),
        "{described}"
    );
    let described = describe(&k, "thing");
    assert!(
        described.contains("Workflows:      2 of 2 succeeded"),
        "{described}"
    );
    assert!(
        described.contains(&format!("Last Available: {since}")),
        "{described}"
    );

    // Requiring a Promise that is not there: unavailable, the last time it was available kept;
    // base is no longer required.
    k.apply_yaml(&thing(&[("missing", "")]), &["--no-wait"])
        .assert_ok();
    let waiting = eventually("thing to wait for its requirement", WAIT, || {
        let p = promise(&k, "thing");
        (p["status"]["status"] == "Unavailable").then_some(p)
    });
    assert_eq!(waiting["status"]["lastAvailableTime"], since, "{waiting:#}");
    assert_eq!(waiting["status"]["kratix"]["status"], "Unavailable");
    assert_eq!(waiting["status"]["kratix"]["lastAvailableTime"], since);
    eventually("base no longer lists thing", WAIT, || {
        promise(&k, "base")["status"]
            .get("requiredBy")
            .is_none()
            .then_some(())
    });
}

/// A failed promise configure workflow: no pipeline counts as succeeded, and the Promise was
/// never available.
#[test]
fn a_failed_promise_workflow_counts_no_success() {
    let mut k = Kratix::new();
    k.start_serve();
    let fail = things::pipeline("broken", &things::failing_command());
    k.apply_yaml(
        &things::promise_with_workflows(json!({"promise": {"configure": [fail]}})),
        &["--no-wait"],
    )
    .assert_ok();
    let failed = eventually("the promise workflow to fail", WAIT, || {
        let p = promise(&k, "thing");
        let completed = support::condition(&p, "ConfigureWorkflowCompleted")?;
        (completed["status"] == "False" && completed["reason"] == "ConfigureWorkflowFailed")
            .then_some(p)
    });
    let status = &failed["status"];
    assert_eq!(counters(status), (1, 0, 0), "{status:#}");
    assert!(status.get("lastAvailableTime").is_none(), "{status:#}");
    assert_eq!(status["kratix"]["status"], "Unavailable");
    assert_eq!(
        status["kratix"]["workflows"]["configure"]["pipelines"][0]["phase"],
        "Failed"
    );
    let described = describe(&k, "thing");
    assert!(
        described.contains("Workflows:      0 of 1 succeeded"),
        "{described}"
    );
}

/// A promise pipeline whose `status.yaml` does not fit a Promise's status (`message` is text,
/// `observedGeneration` a number): the run fails naming the file and the fields, `apply` says so
/// instead of waiting, and the Promise stays readable with nothing of that status merged.
#[test]
fn a_promise_status_yaml_that_does_not_fit_fails_the_workflow() {
    let k = Kratix::new();
    let misfit = things::pipeline(
        "misfit",
        &[
            "sh".into(),
            "-c".into(),
            "printf 'message: 3\\nobservedGeneration: nope\\nmine: kept\\n' > \"${KRATIX_METADATA_DIR:-/kratix/metadata}/status.yaml\"".into(),
        ],
    );
    let applied = k.apply_yaml(
        &things::promise_with_workflows(json!({"promise": {"configure": [misfit]}})),
        &["--timeout", "120"],
    );
    applied.assert_failed();
    assert!(
        applied.stderr.contains("misfit") && applied.stderr.contains("status.yaml"),
        "apply names the pipeline and the file: {}",
        applied.stderr
    );
    let p = promise(&k, "thing");
    let completed = support::condition(&p, "ConfigureWorkflowCompleted").expect("the condition");
    assert_eq!(completed["status"], "False", "{p:#}");
    assert_eq!(completed["reason"], "ConfigureWorkflowFailed", "{p:#}");
    let message = completed["message"].as_str().unwrap_or_default();
    for part in ["status.yaml", "field message", "field observedGeneration"] {
        assert!(message.contains(part), "{part:?} in {message}");
    }
    let status = &p["status"];
    assert_ne!(status["message"], json!(3), "{status:#}");
    assert!(
        status.get("mine").is_none(),
        "nothing of it merged: {status:#}"
    );
    assert_eq!(counters(status), (1, 0, 0), "{status:#}");
}
