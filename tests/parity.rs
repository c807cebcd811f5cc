//! Features Kratix acts on, through the binary: `label` and `annotate`, required Promises,
//! pausing.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::{condition, eventually, fixtures, things, Kratix};

/// The quickstart applied and settled: a Git store, a Destination, the webapp Promise and two
/// requests.
fn quickstart() -> Kratix {
    let k = Kratix::new();
    let quickstart = fixtures().join("quickstart");
    k.run(&["apply", "-f", quickstart.to_str().expect("utf-8 path")])
        .assert_ok();
    k
}

fn all_runs(k: &Kratix) -> usize {
    k.list_json("pipelineruns", &["-A"]).len()
}

#[test]
fn label_and_annotate_change_metadata_only() {
    let k = quickstart();
    let runs = all_runs(&k);
    let app = |k: &Kratix| k.get_json("webapp", "shop", None).expect("shop");
    let before = app(&k);
    let generation = before["metadata"]["generation"].clone();

    let out = k.run(&["label", "wa", "shop", "team=blue", "tier=web"]);
    out.assert_ok();
    assert_eq!(out.stdout.trim(), "webapp/shop labeled");
    let after = app(&k);
    assert_eq!(after["metadata"]["labels"]["team"], "blue");
    assert_eq!(after["metadata"]["labels"]["tier"], "web");
    assert_eq!(
        after["metadata"]["generation"], generation,
        "labels are not spec"
    );

    // Changing a value needs --overwrite, with kubectl's message; nothing is written.
    let refused = k.run(&["label", "webapp", "shop", "team=red"]);
    refused.assert_failed();
    assert!(
        refused
            .stderr
            .contains("'team' already has a value (blue), and --overwrite is false"),
        "{}",
        refused.stderr
    );
    assert_eq!(app(&k)["metadata"]["labels"]["team"], "blue");
    k.run(&["label", "webapp", "shop", "team=red", "--overwrite"])
        .assert_ok();
    assert_eq!(app(&k)["metadata"]["labels"]["team"], "red");

    let removed = k.run(&["label", "webapp", "shop", "team-", "tier-"]);
    removed.assert_ok();
    assert_eq!(removed.stdout.trim(), "webapp/shop unlabeled");
    let labels = app(&k)["metadata"]["labels"].clone();
    assert!(labels.get("team").is_none() && labels.get("tier").is_none());
    assert_eq!(
        labels["kratix.io/promise-name"], "webapp",
        "other labels stay"
    );
    let again = k.run(&["label", "webapp", "shop", "team-"]);
    again.assert_ok();
    assert_eq!(again.stdout.trim(), "webapp/shop not labeled");

    let out = k.run(&["annotate", "promise", "webapp", "owner=platform team: a/b"]);
    out.assert_ok();
    assert_eq!(out.stdout.trim(), "promise/webapp annotated");
    let promise = k.get_json("promise", "webapp", None).expect("promise");
    assert_eq!(
        promise["metadata"]["annotations"]["owner"],
        "platform team: a/b"
    );
    assert_eq!(promise["metadata"]["generation"], 1);
    let refused = k.run(&["annotate", "promise", "webapp", "owner=x"]);
    refused.assert_failed();
    assert!(
        refused.stderr.contains(
            "--overwrite is false but found the following declared annotation(s): 'owner' already has a value (platform team: a/b)"
        ),
        "{}",
        refused.stderr
    );
    k.run(&["annotate", "promise", "webapp", "owner-"])
        .assert_ok();
    let promise = k.get_json("promise", "webapp", None).expect("promise");
    assert!(promise["metadata"]["annotations"].get("owner").is_none());

    // Metadata changes run no workflow.
    k.run(&[
        "wait",
        "webapp",
        "shop",
        "--for",
        "condition=Reconciled",
        "--timeout",
        "60",
    ])
    .assert_ok();
    assert_eq!(all_runs(&k), runs);
}

#[test]
fn label_refuses_bad_input_naming_it() {
    let k = quickstart();
    let cases: &[(&[&str], &str)] = &[
        (&["label", "webapp", "shop", "a=b c"], "invalid label value"),
        (
            &["label", "webapp", "shop", "Bad/x=1"],
            "invalid label spec",
        ),
        (
            &["label", "webapp", "shop", "novalue"],
            "unknown label spec",
        ),
        (
            &["label", "webapp", "shop", "a=1", "a-"],
            "can not both modify and remove",
        ),
        (&["label", "webapp", "missing", "a=1"], "not found"),
        (&["label", "nosuchkind", "x", "a=1"], "nosuchkind"),
        (
            &["annotate", "webapp", "shop", "_x=1"],
            "invalid annotation spec",
        ),
    ];
    for (args, want) in cases {
        let run = k.run(args);
        run.assert_failed();
        assert!(run.stderr.contains(want), "{args:?}: {}", run.stderr);
    }
    let todo = k.get_json("webapp", "shop", None).expect("shop");
    assert!(todo["metadata"]["labels"].get("a").is_none());
}

const APP_IMAGE: &str =
    "ghcr.io/syntasso/kratix-marketplace/app-as-a-service-configure-pipeline:v0.1.0";

/// A Promise with no API and no workflows, labelled with a version: available at once.
fn small_promise(name: &str, version: &str) -> String {
    format!(
        "apiVersion: platform.kratix.io/v1alpha1\nkind: Promise\nmetadata:\n  name: {name}\n  labels:\n    kratix.io/promise-version: {version}\nspec: {{}}\n"
    )
}

fn states(promise: &Value) -> Vec<(String, String)> {
    promise["status"]["requiredPromises"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap_or_default().to_string(),
                r["state"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

#[test]
fn a_promise_waits_for_its_required_promises_at_their_versions() {
    let mut k = Kratix::new();
    // The marketplace pipeline's image stands for a command that renders nothing.
    std::fs::write(
        k.home().join("images.yaml"),
        format!("{APP_IMAGE}: [sh, -c, 'true']\n"),
    )
    .expect("image map");
    k.start_serve();
    let app_promise = fixtures().join("marketplace/app-as-a-service.yaml");
    let applied = k.run(&[
        "apply",
        "--no-wait",
        "-f",
        app_promise.to_str().expect("utf-8"),
    ]);
    applied.assert_ok();
    // Warned as Kratix's admission webhook warns; stored all the same.
    for warning in [
        "Required Promise \"postgresql\" at version \"v1.0.0-beta.3\" not installed",
        "Required Promise \"nginx-ingress\" at version \"v1.0.0-beta.2\" not installed",
        "Promise will not be available until the above issue(s) is resolved",
    ] {
        assert!(applied.stderr.contains(warning), "{}", applied.stderr);
    }
    let app = |k: &Kratix| k.get_json("promise", "app", None).expect("app");
    let waiting = |k: &Kratix, want: &[(&str, &str)]| {
        let want: Vec<(String, String)> = want
            .iter()
            .map(|(n, s)| (n.to_string(), s.to_string()))
            .collect();
        eventually(
            "the app Promise's requirements",
            Duration::from_secs(60),
            || {
                let p = app(k);
                (states(&p) == want).then_some(p)
            },
        )
    };
    let p = waiting(
        &k,
        &[
            ("postgresql", "Requirement not installed"),
            ("nginx-ingress", "Requirement not installed"),
        ],
    );
    let fulfilled = condition(&p, "RequirementsFulfilled").expect("RequirementsFulfilled");
    assert_eq!(fulfilled["status"], "False");
    assert_eq!(fulfilled["reason"], "RequirementsNotInstalled");
    assert_eq!(fulfilled["message"], "Requirements not fulfilled");
    assert_eq!(p["status"]["status"], "Unavailable");
    let available = condition(&p, "Available").expect("Available");
    assert_eq!(
        (&available["status"], &available["message"]),
        (&json!("False"), &json!("Cannot fulfil resource requests"))
    );
    assert_eq!(
        p["status"]["requiredPromises"][0]["version"],
        "v1.0.0-beta.3"
    );

    // Its requests wait and nothing runs.
    k.apply_yaml(
        "apiVersion: marketplace.kratix.io/v1\nkind: app\nmetadata: {name: shop}\nspec: {name: shop, image: nginx}\n",
        &["--no-wait"],
    )
    .assert_ok();
    eventually("the request to wait", Duration::from_secs(60), || {
        let r = k.get_json("app", "shop", None)?;
        (condition(&r, "PromiseAvailable")?["status"] == "False").then_some(())
    });

    // One at another version, the other at the right one.
    k.apply_yaml(
        &format!(
            "{}---\n{}",
            small_promise("postgresql", "v1.0.0-beta.2"),
            small_promise("nginx-ingress", "v1.0.0-beta.2")
        ),
        &[],
    )
    .assert_ok();
    let p = waiting(
        &k,
        &[
            (
                "postgresql",
                "Requirement not installed at the specified version",
            ),
            ("nginx-ingress", "Requirement installed"),
        ],
    );
    assert_eq!(p["status"]["status"], "Unavailable");
    assert!(k.list_json("pipelineruns", &["-A"]).is_empty());

    // The required version appears: the Promise becomes available and its request runs.
    k.run(&[
        "label",
        "promise",
        "postgresql",
        "kratix.io/promise-version=v1.0.0-beta.3",
        "--overwrite",
    ])
    .assert_ok();
    let p = waiting(
        &k,
        &[
            ("postgresql", "Requirement installed"),
            ("nginx-ingress", "Requirement installed"),
        ],
    );
    let fulfilled = condition(&p, "RequirementsFulfilled").expect("RequirementsFulfilled");
    assert_eq!(
        (&fulfilled["status"], &fulfilled["reason"]),
        (&json!("True"), &json!("RequirementsInstalled"))
    );
    k.run(&[
        "wait",
        "app",
        "shop",
        "--for",
        "condition=ConfigureWorkflowCompleted",
        "--timeout",
        "120",
    ])
    .assert_ok();
    assert_eq!(app(&k)["status"]["status"], "Available");
    assert_eq!(k.list_json("pipelineruns", &["-A"]).len(), 1);

    // A required Promise going away makes it unavailable again.
    k.run(&["delete", "promise", "nginx-ingress"]).assert_ok();
    let p = waiting(
        &k,
        &[
            ("postgresql", "Requirement installed"),
            ("nginx-ingress", "Requirement not installed"),
        ],
    );
    assert_eq!(p["status"]["status"], "Unavailable");
}

fn reconciled_reason(obj: &Value) -> String {
    condition(obj, "Reconciled")
        .and_then(|c| c["reason"].as_str())
        .unwrap_or_default()
        .to_string()
}

#[test]
fn the_paused_label_stops_workflows_until_removed() {
    let mut k = Kratix::new();
    k.start_serve();
    let gate_dir = support::sandbox_visible_dir();
    let gate = gate_dir.path().join("open");
    let gated = vec![
        "sh".to_string(),
        "-c".to_string(),
        format!("while [ ! -e '{}' ]; do sleep 0.1; done", gate.display()),
    ];
    let done = vec!["true".to_string()];
    k.apply_yaml(
        &things::promise_with(&[("gated", gated), ("after", done)]),
        &[],
    )
    .assert_ok();
    k.apply_yaml(&things::request("a", 1), &["--no-wait"])
        .assert_ok();
    let wait_secs = Duration::from_secs(60);
    eventually("the first pipeline to run", wait_secs, || {
        let runs = things::runs(&k, "a");
        (runs.len() == 1 && runs[0].phase == "Running").then_some(())
    });

    // Paused while its first pipeline runs: that one finishes, the next never starts.
    k.run(&["label", "thing", "a", "kratix.io/paused=true"])
        .assert_ok();
    let paused = eventually("the request to say it is paused", wait_secs, || {
        let a = k.get_json("thing", "a", None)?;
        (reconciled_reason(&a) == "PausedReconciliation").then_some(a)
    });
    let reconciled = condition(&paused, "Reconciled").expect("Reconciled");
    assert_eq!(
        (&reconciled["status"], &reconciled["message"]),
        (&json!("Unknown"), &json!("Paused"))
    );
    std::fs::write(&gate, "").expect("open the gate");
    eventually("the running pipeline to finish", wait_secs, || {
        let runs = things::runs(&k, "a");
        (runs.len() == 1 && runs[0].phase == "Succeeded").then_some(())
    });
    // Completing the run wakes the request; a short look proves nothing new started.
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(things::runs(&k, "a").len(), 1);
    let a = k.get_json("thing", "a", None).expect("a");
    assert_eq!(reconciled_reason(&a), "PausedReconciliation");

    // Removing the label runs the configure workflow again from its first pipeline.
    k.run(&["label", "thing", "a", "kratix.io/paused-"])
        .assert_ok();
    eventually("the request to be reconciled again", wait_secs, || {
        things::reconciled(&k, "a")
    });
    let pipelines: Vec<String> = things::runs(&k, "a")
        .into_iter()
        .map(|r| r.pipeline)
        .collect();
    assert_eq!(pipelines, ["gated", "gated", "after"]);

    // A paused Promise is unavailable and pauses its requests, new ones included.
    k.run(&["label", "promise", "thing", "kratix.io/paused=true"])
        .assert_ok();
    let promise = eventually("the Promise to say it is paused", wait_secs, || {
        let p = k.get_json("promise", "thing", None)?;
        (reconciled_reason(&p) == "PausedReconciliation").then_some(p)
    });
    assert_eq!(promise["status"]["status"], "Unavailable");
    let available = condition(&promise, "Available").expect("Available");
    assert_eq!(
        (
            &available["status"],
            &available["reason"],
            &available["message"]
        ),
        (
            &json!("False"),
            &json!("PausedReconciliation"),
            &json!("Paused")
        )
    );
    k.apply_yaml(&things::request("b", 2), &["--no-wait"])
        .assert_ok();
    for name in ["a", "b"] {
        eventually("its requests to say they are paused", wait_secs, || {
            let r = k.get_json("thing", name, None)?;
            (reconciled_reason(&r) == "PausedReconciliation").then_some(())
        });
    }
    assert!(things::runs(&k, "b").is_empty());

    k.run(&["label", "promise", "thing", "kratix.io/paused-"])
        .assert_ok();
    eventually("the new request to be reconciled", wait_secs, || {
        things::reconciled(&k, "b")
    });
    let promise = k.get_json("promise", "thing", None).expect("thing");
    assert_eq!(promise["status"]["status"], "Available");
}
