//! `workflow-control.yaml` in every workflow, through the binary: promise and resource,
//! configure and delete, suspended (by `retryAfter` alone, or `suspend: true`) and resumed; each
//! workflow reporting under its own key of `status.kratix.workflows`, a suspended delete workflow
//! keeping its object, and a suspended workflow's runs kept to five.

mod support;

use std::time::Duration;

use serde_json::json;
use support::eventually;
use support::statuses::{
    cond, delete_suspended, gated, held, keyed, pairs, promise, reconcile_promise, said,
    serving_with_gates, step, thing,
};
use support::things::{self, runs, RunInfo, KIND};

const PATIENCE: Duration = Duration::from_secs(90);

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
    // The runs that went still count: the newest is numbered past the five kept, and the
    // status says so.
    let numbers: Vec<i64> = delete_runs
        .iter()
        .map(|r| r.raw["spec"]["attempt"].as_i64().unwrap_or(0))
        .collect();
    assert!(numbers.iter().max().is_some_and(|n| *n >= 7), "{numbers:?}");
    eventually("the delete entry counting every run", PATIENCE, || {
        let obj = thing(&k, "r1")?;
        let attempts =
            obj["status"]["kratix"]["workflows"]["delete"]["pipelines"][0]["attempts"].as_i64()?;
        (attempts >= 7).then_some(())
    });

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
