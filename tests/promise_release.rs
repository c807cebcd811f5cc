//! PromiseRelease through the binary: the Promise fetched from a real HTTP server on loopback
//! with the Secret's Authorization header, kept at the release's version, removed with it; a
//! wrong credential, garbage and a version mismatch are clear errors and install nothing.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::promise_server::PromiseServer;
use support::{condition, eventually, fixtures, things, Kratix};

const WAIT: Duration = Duration::from_secs(120);
const TOKEN: &str = "Bearer s3cret-t0ken";

fn platform() -> Kratix {
    let mut k = Kratix::new();
    let store = fixtures().join("quickstart/00-state-store.yaml");
    k.run(&["apply", "-f", store.to_str().expect("utf-8")])
        .assert_ok();
    k.start_serve();
    k
}

fn secret(name: &str, header: &str) -> String {
    json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": name, "namespace": "default"},
        "stringData": {"authorizationHeader": header},
    })
    .to_string()
}

fn release(name: &str, version: &str, url: &str, secret: &str) -> String {
    let mut spec = json!({
        "sourceRef": {"type": "http", "url": url,
            "secretRef": {"name": secret, "namespace": "default"}},
    });
    if !version.is_empty() {
        spec["version"] = json!(version);
    }
    json!({
        "apiVersion": "platform.kratix.io/v1alpha1", "kind": "PromiseRelease",
        "metadata": {"name": name}, "spec": spec,
    })
    .to_string()
}

fn promise_version(k: &Kratix) -> Option<String> {
    let p = k.get_json("promise", "thing", None)?;
    p["metadata"]["labels"]["kratix.io/promise-version"]
        .as_str()
        .map(str::to_string)
}

/// Everything a user can read about the release, and the server's log: never the credential.
fn assert_no_secret(k: &Kratix, release: &str) {
    let shown = k.run(&["get", "promiserelease", release, "-o", "yaml"]);
    for text in [shown.stdout.as_str(), shown.stderr.as_str(), &k.serve_log()] {
        assert!(!text.contains("s3cret"), "the credential leaked: {text}");
    }
}

#[test]
fn a_release_installs_its_promise_keeps_it_at_its_version_and_removes_it() {
    let k = platform();
    let server = PromiseServer::start(TOKEN);
    server.publish("/thing-v1.yaml", &things::promise_at("v1", &["a"]));
    server.publish("/thing-v2.yaml", &things::promise_at("v2", &["a", "b"]));
    k.apply_yaml(&secret("registry", TOKEN), &[]).assert_ok();

    // Without a version the release takes the fetched one.
    let applied = k.apply_yaml(
        &release("thing", "", &server.url("/thing-v1.yaml"), "registry"),
        &["--timeout", "120"],
    );
    applied.assert_ok();
    let r = k
        .get_json("promiserelease", "thing", None)
        .expect("release");
    assert_eq!(r["spec"]["version"], "v1");
    assert_eq!(r["status"]["status"], "Installed");
    let installed = condition(&r, "Installed").expect("Installed");
    assert_eq!(
        (&installed["status"], &installed["reason"]),
        (&json!("True"), &json!("InstalledSuccessfully"))
    );
    let p = k.get_json("promise", "thing", None).expect("the Promise");
    assert_eq!(
        p["metadata"]["labels"]["kratix.io/promise-release-name"],
        "thing"
    );
    assert_eq!(promise_version(&k).as_deref(), Some("v1"));
    k.run(&[
        "wait",
        "promise",
        "thing",
        "--for",
        "condition=Available",
        "--timeout",
        "120",
    ])
    .assert_ok();
    let table = k.run(&["get", "promisereleases"]);
    assert!(table.stdout.contains("Installed"), "{}", table.stdout);
    assert_no_secret(&k, "thing");

    // A new version is installed in place; its requests then run with it.
    k.apply_yaml(&things::request("one", 1), &["--timeout", "120"])
        .assert_ok();
    k.apply_yaml(
        &release("thing", "v2", &server.url("/thing-v2.yaml"), "registry"),
        &["--timeout", "120"],
    )
    .assert_ok();
    assert_eq!(promise_version(&k).as_deref(), Some("v2"));
    eventually("the request at v2", WAIT, || {
        let r = k.get_json("things", "one", None)?;
        (r["status"]["promiseVersion"] == "v2").then_some(())
    });

    // A Promise deleted by hand comes back.
    k.run(&["delete", "promise", "thing", "--timeout", "120"])
        .assert_ok();
    eventually("the Promise installed again", WAIT, || {
        promise_version(&k).filter(|v| v == "v2")
    });

    // Deleting the release removes its Promise.
    k.run(&["delete", "promiserelease", "thing", "--timeout", "120"])
        .assert_ok();
    assert!(k.get_json("promise", "thing", None).is_none());
}

#[test]
fn bad_credentials_garbage_and_other_versions_install_nothing() {
    let k = platform();
    let server = PromiseServer::start(TOKEN);
    server.publish("/thing.yaml", &things::promise_at("v1", &["a"]));
    server.publish("/garbage", "<html><body>Sorry: [we moved</body></html>\n");
    k.apply_yaml(
        &format!(
            "{}\n---\n{}",
            secret("registry", TOKEN),
            secret("wrong", "Bearer s3cret-wrong")
        ),
        &[],
    )
    .assert_ok();
    let cases = [
        (
            "wrong-token",
            "v1",
            "/thing.yaml",
            "wrong",
            "status code 401",
        ),
        (
            "garbage",
            "v1",
            "/garbage",
            "registry",
            "did not answer with a YAML or JSON document",
        ),
        (
            "missing",
            "v1",
            "/nothing.yaml",
            "registry",
            "status code 404",
        ),
        (
            "other-version",
            "v5",
            "/thing.yaml",
            "registry",
            "Version labels do not match, found: v1, expected: v5",
        ),
    ];
    for (name, version, path, secret_name, want) in cases {
        let applied = k.apply_yaml(
            &release(name, version, &server.url(path), secret_name),
            &["--timeout", "60"],
        );
        applied.assert_failed();
        assert!(applied.stderr.contains(want), "{name}: {}", applied.stderr);
        let r: Value = k.get_json("promiserelease", name, None).expect("release");
        assert_eq!(r["status"]["status"], "Error installing", "{name}");
        let c = condition(&r, "Installed").expect("Installed");
        assert_eq!(c["status"], "False", "{name}");
        assert!(
            c["message"].as_str().unwrap_or_default().contains(want),
            "{name}: {c}"
        );
        assert!(k.get_json("promise", "thing", None).is_none(), "{name}");
        assert_no_secret(&k, name);
    }
}

/// A release that names no source to fetch from is refused before anything is stored, as
/// Kratix's webhook refuses it, naming the field.
#[test]
fn a_release_without_a_url_is_refused_naming_the_field() {
    let k = Kratix::new();
    let applied = k.apply_yaml(&release("nowhere", "v1", "", "registry"), &["--no-wait"]);
    applied.assert_failed();
    assert!(
        applied
            .stderr
            .contains("(PromiseRelease nowhere): spec.sourceRef.url: required"),
        "{}",
        applied.stderr
    );
    assert!(k.get_json("promiserelease", "nowhere", None).is_none());
}
