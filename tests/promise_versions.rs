//! Promise versions through the binary: a PromiseRevision per `kratix.io/promise-version`, a
//! ResourceBinding per request (floating or pinned), upgrades by changing the binding's
//! version, and the latest revision refused deletion.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::{condition, eventually, fixtures, things, Kratix};

const WAIT: Duration = Duration::from_secs(120);

/// A Kratix serving the quickstart's Git store and Destination.
fn platform(env: &[(&str, &str)]) -> Kratix {
    let mut k = Kratix::new();
    let store = fixtures().join("quickstart/00-state-store.yaml");
    k.run(&["apply", "-f", store.to_str().expect("utf-8")])
        .assert_ok();
    k.start_serve_with(env);
    k
}

fn apply(k: &Kratix, yaml: &str) {
    k.apply_yaml(yaml, &["--timeout", "120"]).assert_ok();
}

/// The request's binding, once it has one.
fn binding_of(k: &Kratix, request: &str) -> Value {
    eventually("the request's binding", WAIT, || {
        k.list_json("resourcebindings", &["-A"])
            .into_iter()
            .find(|b| b["spec"]["resourceRef"]["name"] == request)
    })
}

/// Waits until the request's binding says `applied` was last applied, and returns it.
fn applied(k: &Kratix, request: &str, applied: &str) -> Value {
    eventually(&format!("{request} at {applied}"), WAIT, || {
        let b = binding_of(k, request);
        (b["status"]["lastAppliedVersion"] == applied).then_some(b)
    })
}

/// `(version, latest)` of every revision of `thing`, sorted.
fn revisions(k: &Kratix) -> Vec<(String, bool)> {
    let mut out: Vec<(String, bool)> = k
        .list_json("promiserevisions", &[])
        .iter()
        .filter(|r| r["spec"]["promiseRef"]["name"] == "thing")
        .map(|r| {
            (
                r["spec"]["version"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                r["status"]["latest"].as_bool().unwrap_or(false),
            )
        })
        .collect();
    out.sort();
    out
}

fn pipelines_run(k: &Kratix, request: &str) -> Vec<String> {
    let mut names: Vec<String> = things::runs(k, request)
        .into_iter()
        .map(|r| r.pipeline)
        .collect();
    names.sort();
    names
}

fn set_binding_version(k: &Kratix, binding: &Value, version: &str) {
    let mut changed = binding.clone();
    changed["spec"]["version"] = json!(version);
    let doc = json!({
        "apiVersion": "platform.kratix.io/v1alpha1",
        "kind": "ResourceBinding",
        "metadata": {
            "name": changed["metadata"]["name"],
            "namespace": changed["metadata"]["namespace"],
            "labels": changed["metadata"]["labels"],
        },
        "spec": changed["spec"],
    });
    k.apply_yaml(&doc.to_string(), &["--no-wait"]).assert_ok();
}

/// `kratix-rs delete` refuses to delete the revision `name`, the latest.
fn refused_as_latest(k: &Kratix, name: &str) {
    let refused = k.run(&["delete", "promiserevision", name, "--no-wait"]);
    refused.assert_failed();
    assert!(
        refused
            .stderr
            .contains("can not delete the latest PromiseRevision"),
        "{}",
        refused.stderr
    );
}

#[test]
fn requests_follow_the_revision_their_binding_names() {
    let k = platform(&[]);
    apply(&k, &things::promise_at("v1", &["a"]));
    assert_eq!(revisions(&k), [("v1".to_string(), true)]);
    apply(&k, &things::request("floats", 1));
    apply(&k, &things::request("stays", 2));

    // Floating by default: `latest`, applied at v1; the request records both.
    let floats = applied(&k, "floats", "v1");
    assert_eq!(floats["spec"]["version"], "latest");
    assert_eq!(floats["spec"]["promiseRef"]["name"], "thing");
    assert_eq!(
        floats["metadata"]["labels"]["kratix.io/resource-name"],
        "floats"
    );
    assert!(
        condition(&floats, "UpgradeSucceeded").is_none(),
        "a first run is no upgrade: {floats}"
    );
    let request = k.get_json("things", "floats", None).expect("floats");
    assert_eq!(request["status"]["promiseVersion"], "v1");
    assert_eq!(request["status"]["resourceBindingVersion"], "latest");
    let table = k.run(&["get", "resourcebindings"]);
    table.assert_ok();
    assert!(
        table.stdout.starts_with("NAME") && table.stdout.contains("DESIRED"),
        "{}",
        table.stdout
    );

    // `stays` is pinned to v1 by hand.
    let stays = applied(&k, "stays", "v1");
    set_binding_version(&k, &stays, "v1");
    eventually("stays bound to v1", WAIT, || {
        let b = binding_of(&k, "stays");
        let r = k.get_json("things", "stays", None)?;
        (b["spec"]["version"] == "v1" && r["status"]["resourceBindingVersion"] == "v1")
            .then_some(())
    });

    // v2 adds a pipeline: the floating request runs it, the pinned one does not run at all.
    let stays_runs = things::runs(&k, "stays").len();
    apply(&k, &things::promise_at("v2", &["a", "b"]));
    assert_eq!(
        revisions(&k),
        [("v1".to_string(), false), ("v2".to_string(), true)]
    );
    let floats = applied(&k, "floats", "v2");
    let upgraded = condition(&floats, "UpgradeSucceeded").expect("UpgradeSucceeded");
    assert_eq!(
        (
            &upgraded["status"],
            &upgraded["reason"],
            &upgraded["message"]
        ),
        (
            &json!("True"),
            &json!("UpgradeComplete"),
            &json!("Resource is at version v2")
        )
    );
    assert_eq!(pipelines_run(&k, "floats"), ["a", "a", "b"]);
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        things::runs(&k, "stays").len(),
        stays_runs,
        "pinned: no re-run"
    );
    assert_eq!(
        k.get_json("things", "stays", None).expect("stays")["status"]["promiseVersion"],
        "v1"
    );

    // Moving the pinned request to v2 re-runs it with v2's pipelines.
    set_binding_version(&k, &binding_of(&k, "stays"), "v2");
    let stays = applied(&k, "stays", "v2");
    assert_eq!(
        condition(&stays, "UpgradeSucceeded").expect("UpgradeSucceeded")["status"],
        "True"
    );
    assert!(pipelines_run(&k, "stays").contains(&"b".to_string()));

    // A version whose pipeline fails: the floating request's binding says so and keeps the
    // version it last applied.
    k.apply_yaml(&things::promise_at("v3", &["a", "broken"]), &["--no-wait"])
        .assert_ok();
    let failed = eventually("the failed upgrade", WAIT, || {
        let b = binding_of(&k, "floats");
        (b["status"]["failedVersion"] == "v3").then_some(b)
    });
    assert_eq!(failed["status"]["lastAppliedVersion"], "v2");
    let c = condition(&failed, "UpgradeSucceeded").expect("UpgradeSucceeded");
    assert_eq!(
        (&c["status"], &c["reason"]),
        (&json!("False"), &json!("UpgradeFailed"))
    );
    assert!(
        c["message"].as_str().unwrap_or_default().contains("broken"),
        "{c}"
    );

    // The latest revision cannot be deleted; older ones can.
    let names: Vec<(String, String)> = k
        .list_json("promiserevisions", &[])
        .iter()
        .map(|r| {
            let text = |p: &str| r.pointer(p).and_then(Value::as_str).unwrap_or_default();
            (
                text("/spec/version").to_string(),
                text("/metadata/name").to_string(),
            )
        })
        .collect();
    let name_of = |v: &str| {
        names
            .iter()
            .find(|(version, _)| version == v)
            .map(|(_, n)| n.clone())
            .expect("revision")
    };
    refused_as_latest(&k, &name_of("v3"));
    assert!(k
        .get_json("promiserevision", &name_of("v3"), None)
        .is_some());
    k.run(&["delete", "promiserevision", &name_of("v1")])
        .assert_ok();

    // Deleting the revision a request is bound to leaves the request, which says so.
    k.run(&["delete", "promiserevision", &name_of("v2")])
        .assert_ok();
    let missing = |version: &str| {
        eventually(
            &format!("the missing {version} on the request"),
            WAIT,
            || {
                let r = k.get_json("things", "stays", None)?;
                let want = format!(
                    "cannot find a PromiseRevision for Promise thing with version {version}"
                );
                r["status"]["message"]
                    .as_str()
                    .is_some_and(|m| m.contains(&want))
                    .then_some(())
            },
        );
    };
    missing("v2");
    // As does a binding naming a version that never existed.
    set_binding_version(&k, &binding_of(&k, "stays"), "v9");
    missing("v9");

    // Deleting the Promise takes its requests, bindings and revisions with it.
    k.run(&["delete", "promise", "thing", "--timeout", "120"])
        .assert_ok();
    assert!(k.list_json("resourcebindings", &["-A"]).is_empty());
    assert!(revisions(&k).is_empty());
}

#[test]
fn pinned_requests_stay_at_the_version_they_were_made_with() {
    let k = platform(&[("KRATIX_RESOURCE_BINDING_VERSION", "pinned")]);
    apply(&k, &things::promise_at("v1", &["a"]));
    apply(&k, &things::request("db", 1));
    let binding = applied(&k, "db", "v1");
    assert_eq!(binding["spec"]["version"], "v1");
    let runs = things::runs(&k, "db").len();

    apply(&k, &things::promise_at("v2", &["a", "b"]));
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(things::runs(&k, "db").len(), runs, "pinned: no re-run");
    assert_eq!(binding_of(&k, "db")["spec"]["version"], "v1");

    // A request made now is pinned to v2.
    apply(&k, &things::request("later", 1));
    assert_eq!(applied(&k, "later", "v2")["spec"]["version"], "v2");
    assert_eq!(pipelines_run(&k, "later"), ["a", "b"]);
}

#[test]
fn promises_without_a_version_get_no_revisions_or_bindings() {
    let k = platform(&[]);
    apply(&k, &things::promise(&["a"]));
    apply(&k, &things::request("plain", 1));
    assert!(k.list_json("promiserevisions", &[]).is_empty());
    assert!(k.list_json("resourcebindings", &["-A"]).is_empty());
    let r = k.get_json("things", "plain", None).expect("plain");
    assert!(r["status"].get("promiseVersion").is_none(), "{r}");
}

#[test]
fn the_binding_setting_is_a_flag_of_serve_and_controller() {
    let k = Kratix::new();
    for command in ["serve", "controller"] {
        let help = k.run(&[command, "--help"]);
        help.assert_ok();
        assert!(
            help.stdout.contains("--resource-binding-version")
                && help.stdout.contains("KRATIX_RESOURCE_BINDING_VERSION"),
            "{}",
            help.stdout
        );
        let refused = k.run(&[command, "--resource-binding-version", "sometimes"]);
        refused.assert_failed();
        assert!(
            refused.stderr.contains("invalid value 'sometimes'")
                && refused.stderr.contains("floating"),
            "{}",
            refused.stderr
        );
    }
}

/// The name of `thing`'s revision of `version`.
fn revision_name(k: &Kratix, version: &str) -> String {
    k.list_json("promiserevisions", &[])
        .iter()
        .find(|r| r["spec"]["version"] == version)
        .and_then(|r| r["metadata"]["name"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("a revision of {version}"))
}

/// The events `kratix-rs events KIND NAME` lists with `reason`.
fn events_of(k: &Kratix, kind: &str, name: &str, reason: &str) -> Vec<Value> {
    let run = k.run(&["events", kind, name, "-o", "json"]);
    run.assert_ok();
    let list: Value = serde_json::from_str(&run.stdout).expect("a JSON list");
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["reason"] == reason)
        .cloned()
        .collect()
}

/// Pins `request` to `version` by hand and waits until the request runs with it.
fn pin(k: &Kratix, request: &str, version: &str) {
    set_binding_version(k, &binding_of(k, request), version);
    eventually(&format!("{request} bound to {version}"), WAIT, || {
        let r = k.get_json("things", request, None)?;
        (r["status"]["resourceBindingVersion"] == version).then_some(())
    });
}

#[test]
fn every_workflow_gets_the_promise_version_it_runs_at() {
    // Process isolation, so that the pipelines can append to a file of the test's.
    let mut k = Kratix::new().with_env("KRATIX_ISOLATION", "process");
    let store = fixtures().join("quickstart/00-state-store.yaml");
    k.run(&["apply", "-f", store.to_str().expect("utf-8")])
        .assert_ok();
    k.start_serve();
    let dir = tempfile::tempdir().expect("temp dir");
    let record = dir.path().join("versions.txt");
    let record = record.to_str().expect("utf-8");

    apply(&k, &things::promise_reporting_versions("v1", Some(record)));
    apply(&k, &things::request("floats", 1));
    apply(&k, &things::request("stays", 1));
    applied(&k, "stays", "v1");
    pin(&k, "stays", "v1");
    apply(&k, &things::promise_reporting_versions("v2", Some(record)));
    applied(&k, "floats", "v2");
    let seen = |request: &str| {
        k.get_json("things", request, None).expect("request")["status"]["seenVersion"].clone()
    };
    assert_eq!(seen("floats"), "v2");
    assert_eq!(seen("stays"), "v1", "pinned: it ran with v1 only");

    // Delete workflows run with the version the request was last configured with.
    for request in ["stays", "floats"] {
        k.run(&["delete", "things", request, "--timeout", "120"])
            .assert_ok();
    }
    let lines: Vec<String> = std::fs::read_to_string(record)
        .expect("the pipelines recorded")
        .lines()
        .map(str::to_string)
        .collect();
    for want in [
        "promise/configure thing v1",
        "promise/configure thing v2",
        "resource/configure floats v1",
        "resource/configure floats v2",
        "resource/configure stays v1",
        "resource/delete stays v1",
        "resource/delete floats v2",
    ] {
        assert!(lines.iter().any(|l| l == want), "{want} in {lines:#?}");
    }
    assert!(
        !lines.iter().any(|l| l == "resource/configure stays v2"),
        "{lines:#?}"
    );
}

#[test]
fn deleting_an_older_revision_keeps_its_requests_and_names_them_in_an_event() {
    let k = platform(&[]);
    apply(&k, &things::promise_at("v1", &["a"]));
    for request in ["stays", "also", "floats"] {
        apply(&k, &things::request(request, 1));
        applied(&k, request, "v1");
    }
    pin(&k, "stays", "v1");
    pin(&k, "also", "v1");
    apply(&k, &things::promise_at("v2", &["a", "b"]));
    applied(&k, "floats", "v2");
    apply(&k, &things::promise_at("v3", &["a", "b"]));
    applied(&k, "floats", "v3");
    let (v1, v2) = (revision_name(&k, "v1"), revision_name(&k, "v2"));

    // No request names v2: it goes without a word.
    k.run(&["delete", "promiserevision", &v2, "--timeout", "60"])
        .assert_ok();
    assert!(k.get_json("promiserevision", &v2, None).is_none());
    assert!(events_of(&k, "promise", "thing", "RevisionStillInUse").is_empty());

    // Two requests name v1: they and their bindings stay, and the deletion says so on the
    // Promise and on the revision.
    k.run(&["delete", "promiserevision", &v1, "--timeout", "60"])
        .assert_ok();
    assert!(k.get_json("promiserevision", &v1, None).is_none());
    for request in ["stays", "also"] {
        assert!(k.get_json("things", request, None).is_some(), "{request}");
        assert_eq!(binding_of(&k, request)["spec"]["version"], "v1");
    }
    let want = format!(
        "PromiseRevision {v1} (version v1) was deleted while 2 requests still name that \
         version: default/also, default/stays; they and their ResourceBindings stay"
    );
    for (kind, name) in [("promise", "thing"), ("promiserevision", v1.as_str())] {
        let events = events_of(&k, kind, name, "RevisionStillInUse");
        assert_eq!(events.len(), 1, "{kind} {name}: {events:#?}");
        assert_eq!(events[0]["type"], "Warning");
        assert!(
            events[0]["message"]
                .as_str()
                .is_some_and(|m| m.starts_with(&want)),
            "{:#}",
            events[0]
        );
    }
    // The requests report the missing revision; the floating one carries on.
    eventually("stays says its revision is missing", WAIT, || {
        let r = k.get_json("things", "stays", None)?;
        r["status"]["message"]
            .as_str()
            .is_some_and(|m| {
                m.contains("cannot find a PromiseRevision for Promise thing with version v1")
            })
            .then_some(())
    });
    let table = k.run(&["get", "resourcebindings"]);
    table.assert_ok();
    assert_eq!(
        table.stdout.lines().filter(|l| l.contains(" v1 ")).count(),
        2,
        "{}",
        table.stdout
    );

    // The latest revision is still refused.
    refused_as_latest(&k, &revision_name(&k, "v3"));
}

/// A binding's labels (`get resourcebindings -o json`): the request's own besides Kratix's.
fn binding_labels_of(k: &Kratix, request: &str) -> Value {
    binding_of(k, request)["metadata"]["labels"].clone()
}

#[test]
fn bindings_carry_their_request_s_labels() {
    // As Kratix's test/system/promise_revision_test.go: "propagating resource request labels to
    // the resource binding", then a label changed and a label removed on the request.
    let k = platform(&[]);
    apply(&k, &things::promise_at("v1", &["a"]));
    let mut labelled: Value = serde_json::from_str(&things::request("one", 1)).expect("json");
    labelled["metadata"]["labels"] = json!({"environment": "staging"});
    apply(&k, &labelled.to_string());
    apply(&k, &things::request("two", 2));
    let kratix = |request: &str| json!({"kratix.io/promise-name": "thing", "kratix.io/resource-name": request});
    let with = |request: &str, environment: &str| {
        let mut all = kratix(request);
        all["environment"] = json!(environment);
        all
    };
    let labels_become = |request: &str, want: Value| {
        eventually(
            &format!("{request}'s binding labelled {want}"),
            WAIT,
            || (binding_labels_of(&k, request) == want).then_some(()),
        );
    };
    labels_become("one", with("one", "staging"));
    // `two` has no labels of its own: only the binding's.
    labels_become("two", kratix("two"));

    k.run(&[
        "label",
        "thing",
        "one",
        "environment=production",
        "--overwrite",
    ])
    .assert_ok();
    labels_become("one", with("one", "production"));
    let table = k.run(&["get", "resourcebindings", "--show-labels"]);
    table.assert_ok();
    assert!(
        table.stdout.contains("environment=production"),
        "{}",
        table.stdout
    );

    k.run(&["label", "thing", "one", "environment-"])
        .assert_ok();
    labels_become("one", kratix("one"));
}
