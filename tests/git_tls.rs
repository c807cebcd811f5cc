//! GitStateStores on an HTTPS Git server whose certificate no system trusts (git http-backend
//! behind TLS, with a CA made for it): refused by default with a message that says how to trust
//! it, written with `spec.insecure: true` (saying so, with a Warning event), written with the CA
//! in the credentials Secret's `caFile`; and `spec.insecure` validated.

mod support;

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};
use support::{condition, condition_is, eventually, Kratix};

const WAIT: Duration = Duration::from_secs(180);

fn secret(name: &str, ca: Option<&str>) -> Value {
    let mut data = json!({"username": "kratix", "password": "tls-test-password"});
    if let Some(pem) = ca {
        data["caFile"] = json!(pem);
    }
    json!({"apiVersion": "v1", "kind": "Secret",
           "metadata": {"name": name, "namespace": "default"}, "stringData": data})
}

fn store(name: &str, url: &str, insecure: Option<Value>) -> Value {
    let mut spec = json!({"url": url, "branch": "main",
                          "secretRef": {"name": name, "namespace": "default"}});
    if let Some(insecure) = insecure {
        spec["insecure"] = insecure;
    }
    json!({"apiVersion": "platform.kratix.io/v1alpha1", "kind": "GitStateStore",
           "metadata": {"name": name}, "spec": spec})
}

fn destination(name: &str) -> Value {
    json!({"apiVersion": "platform.kratix.io/v1alpha1", "kind": "Destination",
           "metadata": {"name": name, "labels": {"target": name}},
           "spec": {"path": name, "stateStoreRef": {"kind": "GitStateStore", "name": name}}})
}

fn docs(values: &[Value]) -> String {
    values
        .iter()
        .map(|v| format!("---\n{v}\n"))
        .collect::<String>()
}

/// The files on the repository's `main`, empty when it has no commit.
fn files(bare: &Path) -> Vec<String> {
    let out = testkit::hermetic_git_command(bare)
        .args(["ls-tree", "-r", "--name-only", "main"])
        .output()
        .expect("git runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

fn ready_of(k: &Kratix, store: &str, status: &str) -> Value {
    eventually(&format!("{store} Ready={status}"), WAIT, || {
        let s = k.get_json("gitstatestore", store, None)?;
        condition_is(&s, "Ready", status).then(|| condition(&s, "Ready").cloned())?
    })
}

#[test]
fn an_https_server_s_certificate_is_verified_unless_the_store_says_insecure() {
    let server = testkit::GitHttp::start_tls("kratix", "tls-test-password")
        .expect("git over https on loopback");
    let ca = server.ca_pem().expect("the server's CA").to_string();
    let names = ["refused", "skipping", "trusting"];
    let bare: Vec<_> = names
        .iter()
        .map(|n| {
            server
                .bare_repo(&format!("{n}.git"))
                .expect("bare repository")
        })
        .collect();
    let url = |n: &str| server.url(&format!("{n}.git"));
    let mut k = Kratix::new().with_env("KRATIX_STORE_RECHECK", "1");
    k.start_serve();
    k.apply_yaml(
        &docs(&[
            secret("refused", None),
            store("refused", &url("refused"), None),
            destination("refused"),
            secret("skipping", None),
            store("skipping", &url("skipping"), Some(json!(true))),
            destination("skipping"),
            secret("trusting", Some(&ca)),
            store("trusting", &url("trusting"), Some(json!(false))),
            destination("trusting"),
        ]),
        &["--no-wait"],
    )
    .assert_ok();

    // By default the certificate is verified, and refused: the message says how to trust it.
    let refused = ready_of(&k, "refused", "False");
    let message = refused["message"].as_str().unwrap_or_default();
    for want in [
        "TLS certificate is not trusted",
        "credentials Secret (spec.secretRef) under the key caFile",
        "spec.insecure: true",
    ] {
        assert!(message.contains(want), "{want:?} in {refused}");
    }
    assert!(!message.contains("tls-test-password"), "{refused}");

    // `insecure: true`: written, saying that the certificate is not verified, with a Warning.
    let skipping = ready_of(&k, "skipping", "True");
    assert_eq!(
        skipping["message"],
        "State store is ready; the server's TLS certificate is not verified (spec.insecure: true)"
    );
    let warning = support::event_of(&k, "gitstatestore", "skipping", "TlsNotVerified");
    assert_eq!(warning["type"], "Warning");

    // The CA in the Secret's `caFile`: verified and trusted.
    let trusting = ready_of(&k, "trusting", "True");
    assert_eq!(trusting["message"], "State store is ready");

    for (name, bare) in names.iter().zip(&bare).skip(1) {
        eventually(&format!("{name}'s canary files"), WAIT, || {
            files(bare)
                .iter()
                .any(|f| f.starts_with(&format!("{name}/")))
                .then_some(())
        });
    }
    assert!(
        files(&bare[0]).is_empty(),
        "nothing reaches an untrusted server"
    );
    let destination = k
        .get_json("destination", "refused", None)
        .expect("destination");
    assert!(
        condition_is(&destination, "Ready", "False"),
        "{destination}"
    );

    // A caFile that did not issue the server's certificate is refused, saying so.
    let other = testkit::GitHttp::start_tls("kratix", "tls-test-password").expect("another");
    let wrong_ca = other.ca_pem().expect("a CA").to_string();
    k.apply_yaml(&docs(&[secret("refused", Some(&wrong_ca))]), &["--no-wait"])
        .assert_ok();
    eventually("refused says its caFile did not issue it", WAIT, || {
        let s = k.get_json("gitstatestore", "refused", None)?;
        condition(&s, "Ready")?["message"]
            .as_str()?
            .contains("the caFile given did not issue it")
            .then_some(())
    });
    // And the right one makes it ready, and written.
    k.apply_yaml(&docs(&[secret("refused", Some(&ca))]), &["--no-wait"])
        .assert_ok();
    ready_of(&k, "refused", "True");
    eventually("refused's canary files", WAIT, || {
        (!files(&bare[0]).is_empty()).then_some(())
    });
}

#[test]
fn insecure_is_a_boolean_or_nothing() {
    let k = Kratix::new();
    for bad in [json!("yes"), json!(1), json!({"on": true})] {
        let run = k.apply_yaml(
            &docs(&[store("bad", "https://127.0.0.1:1/x.git", Some(bad.clone()))]),
            &["--no-wait"],
        );
        run.assert_failed();
        assert!(
            run.stderr.contains("spec.insecure"),
            "{bad}: {}",
            run.stderr
        );
        assert!(k.get_json("gitstatestore", "bad", None).is_none(), "{bad}");
    }
    for good in [
        Some(json!(true)),
        Some(json!(false)),
        Some(Value::Null),
        None,
    ] {
        k.apply_yaml(
            &docs(&[store("good", "https://127.0.0.1:1/x.git", good.clone())]),
            &["--no-wait"],
        )
        .assert_ok();
    }
    let crds = k.run(&["crds"]);
    crds.assert_ok();
    assert!(crds.stdout.contains("insecure:"), "the CRD declares it");
}
