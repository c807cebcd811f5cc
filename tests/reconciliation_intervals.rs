//! Reconciliation intervals through the binary: a Promise's `reconciliationInterval` (or its
//! annotation `kratix.io/reconciliation-interval`, which wins) runs configure workflows again
//! although nothing changed; the label `kratix.io/reconcile-resources` re-runs every request's
//! workflow once and goes. The platform's floor is lowered to one second here, so that intervals
//! of seconds are allowed; nothing asserts exact times.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::{eventually, things, Kratix};

const WAIT: Duration = Duration::from_secs(90);

fn kratix() -> Kratix {
    Kratix::new().with_env("KRATIX_MIN_RECONCILIATION_INTERVAL", "1s")
}

/// The `thing` Promise with one pipeline, its interval setting and annotation.
fn promise(setting: Option<&str>, annotation: Option<&str>) -> String {
    let mut promise: Value =
        serde_json::from_str(&things::promise(&["only"])).expect("the Promise is JSON");
    if let Some(every) = setting {
        promise["spec"]["workflows"]["config"] = json!({"reconciliationInterval": every});
    }
    if let Some(every) = annotation {
        promise["metadata"]["annotations"] = json!({"kratix.io/reconciliation-interval": every});
    }
    promise.to_string()
}

/// Applies the Promise and the request `one`, then starts `serve`.
fn serve_one_request(k: &mut Kratix, promise: &str) {
    k.apply_yaml(promise, &["--no-wait"]).assert_ok();
    k.apply_yaml(&things::request("one", 1), &["--no-wait"])
        .assert_ok();
    k.start_serve();
}

/// Finished runs of the request, all for one spec: every one after the first is a re-run.
fn finished_runs(k: &Kratix, request: &str) -> usize {
    let runs = things::runs(k, request);
    let hashes: std::collections::BTreeSet<&str> = runs.iter().map(|r| r.hash.as_str()).collect();
    assert!(hashes.len() <= 1, "the spec never changed: {runs:#?}");
    runs.iter().filter(|r| r.phase == "Succeeded").count()
}

#[test]
fn a_promise_interval_runs_request_workflows_again() {
    let mut k = kratix();
    serve_one_request(&mut k, &promise(Some("2s"), None));
    eventually("the workflow ran three times", WAIT, || {
        (finished_runs(&k, "one") >= 3).then_some(())
    });
    let runs = things::runs(&k, "one");
    things::assert_never_overlapped(&runs);
}

#[test]
fn the_annotation_wins_over_the_promise_setting() {
    let mut k = kratix();
    serve_one_request(&mut k, &promise(Some("10h"), Some("2s")));
    eventually("the workflow ran again", WAIT, || {
        (finished_runs(&k, "one") >= 2).then_some(())
    });
}

#[test]
fn a_promise_interval_below_the_floor_is_refused() {
    let k = Kratix::new();
    let run = k.apply_yaml(&promise(Some("2s"), None), &["--no-wait"]);
    run.assert_failed();
    assert!(
        run.stderr
            .contains("spec.workflows.config.reconciliationInterval"),
        "{}",
        run.stderr
    );
    let run = k.apply_yaml(&promise(Some("often"), None), &["--no-wait"]);
    run.assert_failed();
    assert!(run.stderr.contains("not a duration"), "{}", run.stderr);
}

#[test]
fn reconcile_resources_runs_every_request_again_once() {
    let mut k = kratix();
    k.apply_yaml(&promise(None, None), &["--no-wait"])
        .assert_ok();
    k.apply_yaml(&things::request("one", 1), &["--no-wait"])
        .assert_ok();
    k.apply_yaml(&things::request("two", 2), &["--no-wait"])
        .assert_ok();
    k.start_serve();
    eventually("both requests ran", WAIT, || {
        (finished_runs(&k, "one") == 1 && finished_runs(&k, "two") == 1).then_some(())
    });
    k.run(&[
        "label",
        "promise",
        "thing",
        "kratix.io/reconcile-resources=true",
    ])
    .assert_ok();
    eventually("both requests ran again", WAIT, || {
        (finished_runs(&k, "one") == 2 && finished_runs(&k, "two") == 2).then_some(())
    });
    eventually("the label is gone", WAIT, || {
        let promise = k.get_json("promise", "thing", None)?;
        promise["metadata"]["labels"]
            .get("kratix.io/reconcile-resources")
            .is_none()
            .then_some(())
    });
    // Once: with the default interval (10h) nothing runs again by itself.
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(finished_runs(&k, "one"), 2);
    assert_eq!(finished_runs(&k, "two"), 2);
}

#[test]
fn the_platform_default_applies_to_promises_without_an_interval() {
    let mut k = kratix().with_env("KRATIX_RECONCILIATION_INTERVAL", "2s");
    serve_one_request(&mut k, &promise(None, None));
    eventually("the workflow ran again", WAIT, || {
        (finished_runs(&k, "one") >= 2).then_some(())
    });
}

#[test]
fn serve_refuses_an_interval_that_is_no_duration() {
    let k = Kratix::new();
    let run = k.run(&["serve", "--reconciliation-interval", "often"]);
    run.assert_failed();
    assert!(run.stderr.contains("not a duration"), "{}", run.stderr);
    let run = k.run(&["serve", "--state-store-reconciliation-interval=-1s"]);
    run.assert_failed();
    assert!(run.stderr.contains("not a duration"), "{}", run.stderr);
}

#[test]
fn a_promise_workflow_runs_again_at_its_interval() {
    let mut k = kratix();
    let pipeline = things::pipeline("setup", &things::step_command());
    let mut promise: Value = serde_json::from_str(&things::promise_with_workflows(json!({
        "config": {"reconciliationInterval": "2s"},
        "promise": {"configure": [pipeline]},
    })))
    .expect("the Promise is JSON");
    promise["spec"]
        .as_object_mut()
        .expect("a spec")
        .remove("api");
    k.apply_yaml(&promise.to_string(), &["--no-wait"])
        .assert_ok();
    k.start_serve();
    eventually("the promise workflow ran three times", WAIT, || {
        let succeeded = k
            .list_json(
                "pipelineruns",
                &["-A", "-l", "kratix.io/workflow-type=promise"],
            )
            .iter()
            .filter(|r| r["status"]["phase"] == "Succeeded")
            .count();
        (succeeded >= 3).then_some(())
    });
}

/// A workflow whose second pipeline fails. A failing pipeline's own retries run that pipeline
/// again; only the interval (with `reconcileAfterFailure`) runs the workflow from its start.
fn failing_promise() -> String {
    let fail = vec![
        "sh".to_string(),
        support::sandbox_fixtures("workflows/scripts")
            .join("fail.sh")
            .display()
            .to_string(),
    ];
    let promise = things::promise_with(&[("ok", things::step_command()), ("broken", fail)]);
    let mut promise: Value = serde_json::from_str(&promise).expect("the Promise is JSON");
    promise["spec"]["workflows"]["config"] = json!({"reconciliationInterval": "1s"});
    promise.to_string()
}

fn runs_of(k: &Kratix, pipeline: &str) -> usize {
    things::runs(k, "one")
        .iter()
        .filter(|r| r.pipeline == pipeline && (r.phase == "Succeeded" || r.phase == "Failed"))
        .count()
}

#[test]
fn a_failed_workflow_runs_again_from_its_start_at_the_interval() {
    let mut k = kratix();
    serve_one_request(&mut k, &failing_promise());
    eventually("the first pipeline ran again", WAIT, || {
        (runs_of(&k, "ok") >= 2).then_some(())
    });
}

/// `reconcileAfterFailure: false`: a failed workflow stays failed — no retry of the failed
/// pipeline, no `nextRetryAt`, no run at the interval — until a person reconciles the request
/// or the Promise changes.
#[test]
fn without_reconcile_after_failure_a_failed_workflow_stays_failed() {
    let mut k = kratix().with_env("KRATIX_RECONCILE_AFTER_FAILURE", "false");
    serve_one_request(&mut k, &failing_promise());
    let failed = eventually("the workflow failed", WAIT, || {
        let obj = k.get_json(things::KIND, "one", None)?;
        let completed = support::condition(&obj, "ConfigureWorkflowCompleted")?;
        (completed["reason"] == "ConfigureWorkflowFailed").then_some(obj)
    });
    let broken = &failed["status"]["pipelines"][1];
    assert_eq!(
        (&broken["name"], &broken["phase"]),
        (&json!("broken"), &json!("Failed")),
        "{failed:#}"
    );
    assert!(broken.get("nextRetryAt").is_none(), "{failed:#}");
    // Longer than the first retry's backoff (5 s) and the interval (1 s) together.
    std::thread::sleep(Duration::from_secs(8));
    assert_eq!(
        (runs_of(&k, "ok"), runs_of(&k, "broken")),
        (1, 1),
        "{:#?}",
        things::runs(&k, "one")
    );

    k.run(&[
        "label",
        things::KIND,
        "one",
        "kratix.io/manual-reconciliation=true",
    ])
    .assert_ok();
    eventually("the labelled request ran again", WAIT, || {
        (runs_of(&k, "ok") == 2 && runs_of(&k, "broken") == 2).then_some(())
    });

    let fixed = things::promise_with(&[
        ("ok", things::step_command()),
        ("broken", things::step_command()),
    ]);
    k.apply_yaml(&fixed, &["--no-wait"]).assert_ok();
    let runs = eventually("the fixed Promise ran the request again", WAIT, || {
        let runs = things::runs(&k, "one");
        let last = runs.last()?;
        (last.pipeline == "broken" && last.phase == "Succeeded").then_some(runs)
    });
    assert_eq!(runs_of(&k, "ok"), 3, "{runs:#?}");
    things::assert_never_overlapped(&runs);
}

/// The same for a Promise's own workflow, set with `serve --reconcile-after-failure false`.
#[test]
fn with_the_flag_a_failed_promise_workflow_stays_failed() {
    let mut k = kratix();
    let broken = things::pipeline("broken", &things::failing_command());
    let promise = things::promise_with_workflows(json!({
        "config": {"reconciliationInterval": "1s"},
        "promise": {"configure": [broken]},
    }));
    k.apply_yaml(&promise, &["--no-wait"]).assert_ok();
    k.start_serve_args(&["--reconcile-after-failure", "false"], &[]);
    let promise_runs = |k: &Kratix| {
        k.list_json(
            "pipelineruns",
            &["-A", "-l", "kratix.io/workflow-type=promise"],
        )
        .iter()
        .filter(|r| r["status"]["phase"] == "Failed")
        .count()
    };
    eventually("the promise workflow failed", WAIT, || {
        (promise_runs(&k) == 1).then_some(())
    });
    // Longer than the first retry's backoff (5 s) and the interval (1 s) together.
    std::thread::sleep(Duration::from_secs(8));
    assert_eq!(promise_runs(&k), 1);
    let p = k.get_json("promise", "thing", None).expect("the Promise");
    assert_eq!(p["status"]["pipelines"][0]["phase"], "Failed", "{p:#}");
    assert!(
        p["status"]["pipelines"][0].get("nextRetryAt").is_none(),
        "{p:#}"
    );

    k.run(&[
        "label",
        "promise",
        "thing",
        "kratix.io/manual-reconciliation=true",
    ])
    .assert_ok();
    eventually("the labelled Promise ran again", WAIT, || {
        (promise_runs(&k) == 2).then_some(())
    });
}
