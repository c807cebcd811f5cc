//! HealthRecords combine into their request's `status.healthStatus` through the binary: the
//! worst state wins, records of another request or Promise version are ignored, deleting a
//! record recomputes the status, and a request that moves to another version is `unknown` until
//! a record of that version arrives; its ResourceBinding carries the state and the version.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::{eventually, things, Kratix};

const WAIT: Duration = Duration::from_secs(60);

/// A HealthRecord about `request`, made by a health check of `version` (`data.promiseVersion`).
fn record(name: &str, request: &str, state: &str, version: Option<&str>) -> String {
    let mut record = json!({
        "apiVersion": "platform.kratix.io/v1alpha1",
        "kind": "HealthRecord",
        "metadata": {"name": name, "namespace": "default"},
        "data": {
            "promiseRef": {"name": "thing"},
            "resourceRef": {"name": request, "namespace": "default"},
            "state": state,
            "lastRun": 1_700_000_000,
            "details": {"probe": name},
        },
    });
    if let Some(v) = version {
        record["data"]["promiseVersion"] = json!(v);
    }
    record.to_string()
}

fn apply_record(k: &Kratix, name: &str, request: &str, state: &str, version: Option<&str>) {
    k.apply_yaml(&record(name, request, state, version), &["--no-wait"])
        .assert_ok();
}

fn health(k: &Kratix) -> Value {
    k.get_json(things::KIND, "one", Some("default"))
        .map_or(Value::Null, |o| o["status"]["healthStatus"].clone())
}

fn sources(status: &Value) -> Vec<String> {
    status["healthRecords"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| r["source"]["name"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn health_records_combine_into_the_request_status_worst_first() {
    let mut k = Kratix::new();
    // The Promise is at version v2: records of v1 say nothing about it.
    // Health needs no Destination: what the workflows write does not matter here.
    k.apply_yaml(&versioned_promise("v2"), &["--no-wait"])
        .assert_ok();
    k.apply_yaml(&things::request("one", 1), &["--no-wait"])
        .assert_ok();
    k.apply_yaml(&things::request("two", 1), &["--no-wait"])
        .assert_ok();
    assert_eq!(health(&k), Value::Null, "nobody checked it: no health");
    k.start_serve();

    apply_record(&k, "probe-a", "one", "healthy", None);
    apply_record(&k, "probe-b", "one", "degraded", Some("v2"));
    apply_record(&k, "old-probe", "one", "unhealthy", Some("v1"));
    apply_record(&k, "probe-two", "two", "unhealthy", None);
    let status = eventually("both records of request one counted", WAIT, || {
        let h = health(&k);
        (sources(&h) == ["probe-a", "probe-b"]).then_some(h)
    });
    assert_eq!(status["state"], "degraded", "{status}");
    assert_eq!(status["promiseVersion"], "v2", "{status}");
    let entry = &status["healthRecords"][1];
    assert_eq!(entry["state"], "degraded");
    assert_eq!(entry["lastRun"], 1_700_000_000);
    assert_eq!(entry["source"]["namespace"], "default");
    assert_eq!(entry["details"], json!({"probe": "probe-b"}));

    // A record changes: the worst state moves with it.
    apply_record(&k, "probe-a", "one", "unhealthy", None);
    eventually("unhealthy wins", WAIT, || {
        (health(&k)["state"] == "unhealthy").then_some(())
    });

    // Deleted records leave the status; with none left the request is ready again.
    k.run(&["delete", "healthrecord", "probe-a", "--no-wait"])
        .assert_ok();
    let status = eventually("probe-a gone from the status", WAIT, || {
        let h = health(&k);
        (sources(&h) == ["probe-b"]).then_some(h)
    });
    assert_eq!(status["state"], "degraded", "{status}");
    k.run(&["delete", "healthrecord", "probe-b", "--no-wait"])
        .assert_ok();
    let status = eventually("no record left", WAIT, || {
        let h = health(&k);
        (h.is_object() && sources(&h).is_empty()).then_some(h)
    });
    assert_eq!(status, json!({"state": "ready", "promiseVersion": "v2"}));
    let two = k
        .get_json(things::KIND, "two", Some("default"))
        .expect("request two");
    assert_eq!(two["status"]["healthStatus"]["state"], "unhealthy");
}

#[test]
fn get_shows_a_health_records_state() {
    let k = Kratix::new();
    k.apply_yaml(&things::promise(&["first"]), &["--no-wait"])
        .assert_ok();
    apply_record(&k, "probe", "one", "ready", None);
    let run = k.run(&["get", "healthrecords"]);
    run.assert_ok();
    assert!(run.stdout.contains("STATUS"), "{}", run.stdout);
    assert!(
        run.stdout
            .lines()
            .any(|l| l.starts_with("probe") && l.contains("ready")),
        "{}",
        run.stdout
    );
    // A state Kratix does not know is refused, naming the field.
    let bad = k.apply_yaml(&record("bad", "one", "fine", None), &["--no-wait"]);
    bad.assert_failed();
    assert!(bad.stderr.contains("state"), "{}", bad.stderr);
}

/// The `thing` Promise labelled with `version`.
fn versioned_promise(version: &str) -> String {
    let mut promise: Value =
        serde_json::from_str(&things::promise(&["first"])).expect("the Promise is JSON");
    promise["metadata"]["labels"] = json!({"kratix.io/promise-version": version});
    promise.to_string()
}

#[test]
fn a_request_pinned_to_an_older_version_counts_that_versions_records() {
    let mut k = Kratix::new().with_env("KRATIX_RESOURCE_BINDING_VERSION", "pinned");
    k.apply_yaml(&versioned_promise("v1"), &["--no-wait"])
        .assert_ok();
    k.apply_yaml(&things::request("one", 1), &["--no-wait"])
        .assert_ok();
    k.start_serve();
    eventually("request one bound to v1", WAIT, || {
        k.list_json("resourcebindings", &["-A"])
            .iter()
            .any(|b| b["spec"]["version"] == "v1")
            .then_some(())
    });
    // The Promise moves on to v2; the pinned request stays at v1.
    k.apply_yaml(&versioned_promise("v2"), &["--no-wait"])
        .assert_ok();
    eventually("the v2 revision", WAIT, || {
        k.list_json("promiserevisions", &[])
            .iter()
            .any(|r| r["spec"]["version"] == "v2")
            .then_some(())
    });
    apply_record(&k, "v1-probe", "one", "degraded", Some("v1"));
    apply_record(&k, "v2-probe", "one", "unhealthy", Some("v2"));
    let status = eventually("the v1 record counted", WAIT, || {
        let h = health(&k);
        (sources(&h) == ["v1-probe"]).then_some(h)
    });
    assert_eq!(status["state"], "degraded", "{status}");
    assert_eq!(status["promiseVersion"], "v1", "{status}");
}

/// Records stored while no controller runs count once one starts, wherever they live: a record
/// need not be in its request's namespace.
#[test]
fn records_stored_before_the_controllers_start_count_from_any_namespace() {
    let mut k = Kratix::new();
    k.apply_yaml(&things::promise(&["first"]), &["--no-wait"])
        .assert_ok();
    k.apply_yaml(&things::request("one", 1), &["--no-wait"])
        .assert_ok();
    let mut elsewhere: Value =
        serde_json::from_str(&record("probe-far", "one", "degraded", None)).expect("JSON");
    elsewhere["metadata"]["namespace"] = json!("monitoring");
    k.apply_yaml(&elsewhere.to_string(), &["--no-wait"])
        .assert_ok();
    apply_record(&k, "probe-near", "one", "healthy", None);
    k.start_serve();
    let status = eventually("both records counted", WAIT, || {
        let h = health(&k);
        (sources(&h) == ["probe-near", "probe-far"]).then_some(h)
    });
    assert_eq!(status["state"], "degraded", "{status}");
    assert_eq!(
        status["healthRecords"][1]["source"]["namespace"], "monitoring",
        "{status}"
    );
}

/// A record edited to name another request leaves the first one's status and joins the other's.
#[test]
fn a_record_that_moves_to_another_request_leaves_the_first() {
    let mut k = Kratix::new();
    k.apply_yaml(&things::promise(&["first"]), &["--no-wait"])
        .assert_ok();
    k.apply_yaml(&things::request("one", 1), &["--no-wait"])
        .assert_ok();
    k.apply_yaml(&things::request("two", 1), &["--no-wait"])
        .assert_ok();
    k.start_serve();
    apply_record(&k, "probe", "one", "degraded", None);
    eventually("the record counted for one", WAIT, || {
        (sources(&health(&k)) == ["probe"]).then_some(())
    });
    apply_record(&k, "probe", "two", "degraded", None);
    let of = |request: &str| {
        k.get_json(things::KIND, request, Some("default"))
            .map_or(Value::Null, |o| o["status"]["healthStatus"].clone())
    };
    eventually("the record counted for two", WAIT, || {
        (sources(&of("two")) == ["probe"]).then_some(())
    });
    let one = eventually("the record gone from one", WAIT, || {
        let h = of("one");
        sources(&h).is_empty().then_some(h)
    });
    assert_eq!(one, json!({"state": "ready"}));
}

/// The request's binding, once it has one.
fn binding(k: &Kratix) -> Value {
    eventually("the request's binding", WAIT, || {
        k.list_json("resourcebindings", &["-A"])
            .into_iter()
            .find(|b| b["spec"]["resourceRef"]["name"] == "one")
    })
}

/// Waits until request one ran at `version` (its pipeline reported it).
fn ran_at(k: &Kratix, version: &str) {
    eventually(&format!("one ran at {version}"), WAIT, || {
        let r = k.get_json(things::KIND, "one", Some("default"))?;
        (r["status"]["seenVersion"] == version).then_some(())
    });
}

/// Waits until `source` alone counts for request one, which is then `state` at `version`, and
/// its binding says so.
fn counted_alone(k: &Kratix, source: &str, state: &str, version: &str) {
    let status = eventually(&format!("{source} counted"), WAIT, || {
        let h = health(k);
        (sources(&h) == [source]).then_some(h)
    });
    assert_eq!(
        (&status["state"], &status["promiseVersion"]),
        (&json!(state), &json!(version)),
        "{status}"
    );
    eventually(
        &format!("the binding says {state} at {version}"),
        WAIT,
        || {
            (binding(k)["status"]["healthStatus"]
                == json!({"state": state, "promiseVersion": version}))
            .then_some(())
        },
    );
}

#[test]
fn a_request_at_a_new_version_is_unknown_until_a_record_of_it_arrives_and_its_binding_says_so() {
    let mut k = Kratix::new();
    k.apply_yaml(
        &things::promise_reporting_versions("v1", None),
        &["--no-wait"],
    )
    .assert_ok();
    k.apply_yaml(&things::request("one", 1), &["--no-wait"])
        .assert_ok();
    k.start_serve();
    // The sandboxed pipeline saw the version it ran at.
    ran_at(&k, "v1");
    apply_record(&k, "probe-v1", "one", "healthy", Some("v1"));
    counted_alone(&k, "probe-v1", "healthy", "v1");

    // v2 is applied: v1's record says nothing about it, so the health is unknown at v2.
    k.apply_yaml(
        &things::promise_reporting_versions("v2", None),
        &["--no-wait"],
    )
    .assert_ok();
    let status = eventually("the health reset at v2", WAIT, || {
        let h = health(&k);
        (h["promiseVersion"] == "v2").then_some(h)
    });
    assert_eq!(status, json!({"state": "unknown", "promiseVersion": "v2"}));
    ran_at(&k, "v2");
    eventually("the binding says unknown at v2", WAIT, || {
        let b = binding(&k);
        (b["status"]["healthStatus"] == json!({"state": "unknown", "promiseVersion": "v2"})
            && b["status"]["lastAppliedVersion"] == "v2")
            .then_some(())
    });
    // Still unknown once the workflow completed: only a record of v2 changes it.
    assert_eq!(
        health(&k),
        json!({"state": "unknown", "promiseVersion": "v2"})
    );
    apply_record(&k, "probe-v2", "one", "degraded", Some("v2"));
    counted_alone(&k, "probe-v2", "degraded", "v2");
}

#[test]
fn unversioned_promises_get_the_placeholder_and_no_version_on_their_health() {
    let mut k = Kratix::new();
    let mut promise: Value =
        serde_json::from_str(&things::promise_reporting_versions("v1", None)).expect("JSON");
    promise["metadata"]["labels"] = json!({});
    k.apply_yaml(&promise.to_string(), &["--no-wait"])
        .assert_ok();
    k.apply_yaml(&things::request("one", 1), &["--no-wait"])
        .assert_ok();
    k.start_serve();
    eventually("one ran with the placeholder", WAIT, || {
        let r = k.get_json(things::KIND, "one", Some("default"))?;
        (r["status"]["seenVersion"] == "not-set").then_some(())
    });
    apply_record(&k, "probe", "one", "healthy", None);
    apply_record(&k, "probe-placeholder", "one", "degraded", Some("not-set"));
    apply_record(&k, "probe-v1", "one", "unhealthy", Some("v1"));
    let status = eventually("the records without a version counted", WAIT, || {
        let h = health(&k);
        (sources(&h) == ["probe", "probe-placeholder"]).then_some(h)
    });
    assert_eq!(status["state"], "degraded", "{status}");
    assert!(status.get("promiseVersion").is_none(), "{status}");
}
