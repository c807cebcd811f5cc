//! A loop through the platform Destination, through the binary on a Git store served by
//! `git daemon`: a Promise placed on the platform whose pipeline writes a request of its own
//! kind, different at every run, would apply, rerun and write again for ever. The sync changes
//! that object at most `KRATIX_PLATFORM_SYNC_MAX_CHANGES` times within the window, then holds
//! its document and names it on the Destination.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::{condition, eventually, Kratix};

const WAIT: Duration = Duration::from_secs(180);

/// The Promise `loop` (kind `Loop`), placed on the platform: every request's pipeline writes
/// the Loop `echo` with a new `spec.n` each run, so `echo` writes itself again and again.
fn loop_promise() -> String {
    let script = r#"out="${KRATIX_OUTPUT_DIR:-/kratix/output}"
cat > "$out/echo.yaml" <<YAML
apiVersion: test.kratix.io/v1alpha1
kind: Loop
metadata: {name: echo, namespace: default}
spec: {n: "$(date +%s%N)"}
YAML"#;
    json!({
        "apiVersion": "platform.kratix.io/v1alpha1",
        "kind": "Promise",
        "metadata": {"name": "loop"},
        "spec": {
            "destinationSelectors": [{"matchLabels": {"environment": "platform"}}],
            "api": {
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": "loops.test.kratix.io"},
                "spec": {
                    "group": "test.kratix.io",
                    "names": {"kind": "Loop", "plural": "loops", "singular": "loop"},
                    "scope": "Namespaced",
                    "versions": [{
                        "name": "v1alpha1", "served": true, "storage": true,
                        "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                            "spec": {"type": "object", "properties": {
                                "n": {"type": "string"},
                            }},
                        }}},
                    }],
                },
            },
            "workflows": {"resource": {"configure": [{
                "apiVersion": "platform.kratix.io/v1alpha1",
                "kind": "Pipeline",
                "metadata": {"name": "again"},
                "spec": {"containers": [{
                    "name": "main", "image": "local/sh", "command": ["sh", "-c", script],
                }]},
            }]}},
        },
    })
    .to_string()
}

fn echo(k: &Kratix) -> Option<Value> {
    k.get_json("loop", "echo", Some("default"))
}

#[test]
fn a_promise_that_writes_itself_again_is_held_and_named_on_the_destination() {
    let daemon = testkit::GitDaemon::start().expect("git daemon on loopback");
    let bare = daemon.bare_repo("state.git").expect("a bare repository");
    let url = daemon.url("state.git");
    let mut k = Kratix::new()
        .with_env("KRATIX_PLATFORM_SYNC_INTERVAL", "1")
        .with_env("KRATIX_PLATFORM_SYNC_MAX_CHANGES", "3")
        .with_env("KRATIX_PLATFORM_SYNC_CHANGE_WINDOW", "1h");
    k.start_serve();
    let platform = support::git_destination_yaml(&url, "platform", "{environment: platform}");
    k.apply_yaml(&platform, &["--timeout", "120"]).assert_ok();
    k.run(&[
        "annotate",
        "destination",
        "platform",
        "kratix-rs.io/apply-to-platform=true",
    ])
    .assert_ok();
    k.apply_yaml(&loop_promise(), &["--timeout", "120"])
        .assert_ok();
    k.apply_yaml(
        "apiVersion: test.kratix.io/v1alpha1\nkind: Loop\nmetadata: {name: seed, namespace: default}\nspec: {n: \"0\"}\n",
        &[],
    )
    .assert_ok();

    // `echo` is made, changed twice by its own pipeline, and then held.
    let message = eventually("the loop named on the Destination", WAIT, || {
        let dest = k.get_json("destination", "platform", None)?;
        condition(&dest, "PlatformSynced")
            .filter(|c| c["status"] == "False" && c["reason"] == "TooManyChanges")
            .and_then(|c| c["message"].as_str().map(str::to_string))
    });
    assert!(
        message.contains("platform/resources/default/loop/echo/")
            && message.contains("Loop default/echo was changed 3 times within 3600s"),
        "{message}"
    );
    let held = echo(&k).expect("the Loop echo");
    assert_eq!(held["metadata"]["generation"], 3, "{held}");

    // It stays held: the store has a newer document for it, the platform keeps the old one.
    let n = held["spec"]["n"].as_str().expect("spec.n").to_string();
    eventually("a newer document for echo in the store", WAIT, || {
        let listed = testkit::git(&["ls-tree", "-r", "--name-only", "main"], &bare);
        let file = listed.lines().find(|f| {
            f.starts_with("platform/resources/default/loop/echo/") && f.ends_with("/echo.yaml")
        })?;
        let text = testkit::git(&["show", &format!("main:{file}")], &bare);
        (!text.contains(&n)).then_some(())
    });
    std::thread::sleep(Duration::from_secs(3));
    let later = echo(&k).expect("the Loop echo");
    assert_eq!(later["metadata"]["generation"], 3, "{later}");
    assert_eq!(later["spec"]["n"], n.as_str());
    let dest = k
        .get_json("destination", "platform", None)
        .expect("the Destination");
    let churn = dest["status"]["platformSync"]["churn"]
        .as_array()
        .expect("the churn recorded");
    let echoes: Vec<&Value> = churn.iter().filter(|c| c["name"] == "echo").collect();
    assert_eq!(echoes.len(), 1, "{dest}");
    assert_eq!(echoes[0]["changes"], 3, "{dest}");

    let events = k.run(&["events", "destination", "platform"]);
    events.assert_ok();
    assert!(
        events.stdout.contains("PlatformSyncFailed")
            && events
                .stdout
                .contains("Loop default/echo was changed 3 times"),
        "{}",
        events.stdout
    );
}
