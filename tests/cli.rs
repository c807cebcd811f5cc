//! The command-line contract (docs/cli.md) and the foundation: apply, get, wait, bad
//! input refused before anything is stored, the quickstart.

mod support;

use std::time::Duration;

use serde_json::Value;
use support::{condition, fixtures, Kratix};
use testkit::git;

const STORE_AND_DESTINATION: &str = r"
apiVersion: platform.kratix.io/v1alpha1
kind: GitStateStore
metadata:
  name: default
spec:
  url: state.git
---
apiVersion: platform.kratix.io/v1alpha1
kind: Destination
metadata:
  name: worker-1
  labels: {environment: dev}
spec:
  path: worker-1
  stateStoreRef: {kind: GitStateStore, name: default}
";

fn quickstart_promise() -> String {
    std::fs::read_to_string(fixtures().join("quickstart/10-promise.yaml")).expect("fixture")
}

/// A platform with the quickstart Promise applied (not waited for).
fn with_promise() -> Kratix {
    let k = Kratix::new();
    k.apply_yaml(
        &format!("{STORE_AND_DESTINATION}\n---\n{}", quickstart_promise()),
        &["--no-wait"],
    )
    .assert_ok();
    k
}

#[test]
fn quickstart_stores_objects_and_writes_one_commit_per_pipeline_and_destination() {
    let k = Kratix::new();
    let quickstart = fixtures().join("quickstart");
    let run = k.run(&["apply", "-f", quickstart.to_str().expect("utf-8 path")]);
    run.assert_ok();
    let repo = k.home().join("state-store.git");
    assert!(
        run.stdout.contains(&repo.display().to_string()),
        "apply says where the store is: {}",
        run.stdout
    );
    assert!(
        run.stdout.contains("git --git-dir"),
        "apply says how to look at it: {}",
        run.stdout
    );

    let promises = k.list_json("promises", &[]);
    assert_eq!(promises.len(), 1);
    assert_eq!(promises[0]["metadata"]["generation"], 1);
    assert_eq!(promises[0]["status"]["status"], "Available");
    let dests = k.list_json("destinations", &[]);
    assert_eq!(dests[0]["metadata"]["labels"]["environment"], "dev");
    assert_eq!(
        condition(&dests[0], "Ready").expect("Ready")["status"],
        "True"
    );
    let apps = k.list_json("webapps", &[]);
    assert_eq!(apps.len(), 2);
    for app in &apps {
        assert_eq!(app["metadata"]["generation"], 1);
        assert_eq!(app["status"]["observedGeneration"], 1);
        assert_eq!(
            app["metadata"]["labels"]["kratix.io/promise-name"],
            "webapp"
        );
        assert_eq!(
            condition(app, "Reconciled").expect("Reconciled")["status"],
            "True"
        );
        assert_eq!(
            app["status"]["validated"], true,
            "status.yaml of the validate pipeline is merged"
        );
    }
    // Defaults from the schema were applied before storing.
    let blog = k.get_json("webapp", "blog", None).expect("blog");
    assert_eq!(blog["spec"]["replicas"], 1);

    let log = git(
        &[
            "--git-dir",
            repo.to_str().expect("utf-8"),
            "log",
            "--format=%s",
        ],
        k.home(),
    );
    let subjects: Vec<&str> = log.lines().collect();
    for expected in [
        "Update from: webapp-shop-deployment",
        "Update from: webapp-shop-service",
        "Update from: webapp-blog-deployment",
        "Update from: webapp-blog-service",
        "Update from: webapp-setup",
        "Update from: webapp-static-deps",
    ] {
        assert_eq!(
            subjects.iter().filter(|s| **s == expected).count(),
            1,
            "{expected} once in {subjects:?}"
        );
    }
    // Applying the same again changes nothing in the store.
    k.run(&["apply", "-f", quickstart.to_str().expect("utf-8 path")])
        .assert_ok();
    let again = git(
        &[
            "--git-dir",
            repo.to_str().expect("utf-8"),
            "log",
            "--format=%s",
        ],
        k.home(),
    );
    assert_eq!(again, log, "an identical re-apply makes no commit");
}

#[test]
fn get_resolves_kinds_like_kubectl_and_prints_tables_and_lists() {
    let k = with_promise();
    k.apply_yaml(
        "apiVersion: example.kratix.io/v1alpha1\nkind: WebApp\nmetadata: {name: a, labels: {team: x}}\nspec: {image: nginx}\n---\napiVersion: example.kratix.io/v1alpha1\nkind: WebApp\nmetadata: {name: b, labels: {team: y}}\nspec: {image: nginx}\n",
        &["--no-wait"],
    )
    .assert_ok();
    for name in [
        "webapps",
        "webapp",
        "WebApp",
        "wa",
        "WEBAPPS",
        "webapps.example.kratix.io",
    ] {
        let run = k.run(&["get", name]);
        run.assert_ok();
        assert!(run.stdout.starts_with("NAME"), "{name}: {}", run.stdout);
        let names: Vec<&str> = run
            .stdout
            .lines()
            .skip(1)
            .filter_map(|l| l.split_whitespace().next())
            .collect();
        assert_eq!(names, vec!["a", "b"], "{name}: {}", run.stdout);
    }
    for name in [
        "dest",
        "destinations",
        "Destination",
        "promises",
        "gitstatestores",
    ] {
        k.run(&["get", name]).assert_ok();
    }
    let selected = k.list_json("webapps", &["-l", "team=x"]);
    assert_eq!(selected.len(), 1);
    assert_eq!(selected[0]["metadata"]["name"], "a");
    let run = k.run(&["get", "webapps", "-o", "json"]);
    let list: Value = serde_json::from_str(&run.stdout).expect("json");
    assert_eq!(list["apiVersion"], "v1");
    assert_eq!(list["kind"], "List");
    let one = k.get_json("webapps", "a", None).expect("a");
    assert_eq!(one["kind"], "WebApp");
    let yaml = k.run(&["get", "webapp", "a", "-o", "yaml"]);
    assert!(yaml.stdout.contains("kind: WebApp"), "{}", yaml.stdout);
    let wide = k.run(&["get", "webapps", "-o", "wide"]);
    assert!(
        wide.stdout.contains("GENERATION") && wide.stdout.contains("team=x"),
        "{}",
        wide.stdout
    );
    let missing = k.run(&["get", "nosuchkind"]);
    missing.assert_failed();
    assert!(missing.stderr.contains("nosuchkind"), "{}", missing.stderr);
    let absent = k.run(&["get", "webapp", "zzz"]);
    absent.assert_failed();
    assert!(
        absent.stderr.contains("zzz") && absent.stderr.contains("not found"),
        "{}",
        absent.stderr
    );
}

#[test]
fn secrets_are_never_printed() {
    let k = Kratix::new();
    k.apply_yaml(
        "apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\nstringData: {password: hunter2-very-secret}\ndata: {username: YWRtaW4=}\n",
        &[],
    )
    .assert_ok();
    for format in ["json", "yaml", "table", "wide"] {
        let run = k.run(&["get", "secret", "creds", "-o", format]);
        run.assert_ok();
        assert!(!run.stdout.contains("hunter2"), "{format}: {}", run.stdout);
        assert!(!run.stdout.contains("YWRtaW4="), "{format}: {}", run.stdout);
        assert!(
            !run.stdout.contains(&base64_of("hunter2-very-secret")),
            "{format}: {}",
            run.stdout
        );
    }
}

fn base64_of(s: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(s)
}

/// Every bad document makes the whole apply fail, naming the document and field, and stores
/// nothing from that apply — not even the valid documents before it.
#[test]
fn bad_input_is_refused_and_nothing_from_that_apply_is_stored() {
    let valid_first =
        "apiVersion: v1\nkind: Secret\nmetadata: {name: innocent}\nstringData: {a: b}\n---\n";
    let cases: &[(&str, &str, &[&str])] = &[
        ("unparsable YAML", "kind: [unclosed\n", &["document 2", "invalid YAML"]),
        ("no kind", "apiVersion: v1\nmetadata: {name: x}\n", &["document 2", "kind: required"]),
        (
            "unknown kind",
            "apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: x}\n",
            &["document 2", "Gadget", "unknown kind"],
        ),
        (
            "unknown apiVersion",
            "apiVersion: platform.kratix.io/v9\nkind: Destination\nmetadata: {name: x}\nspec: {path: x}\n",
            &["document 2", "apiVersion", "platform.kratix.io/v9"],
        ),
        (
            "request breaking its schema",
            "apiVersion: example.kratix.io/v1alpha1\nkind: WebApp\nmetadata: {name: x}\nspec: {image: nginx, replicas: big}\n",
            &["document 2", "(WebApp x)", "spec.replicas: \"big\" is not of type integer"],
        ),
        (
            "request missing a required field",
            "apiVersion: example.kratix.io/v1alpha1\nkind: WebApp\nmetadata: {name: x}\nspec: {replicas: 2}\n",
            &["spec.image", "required"],
        ),
        (
            "request out of range",
            "apiVersion: example.kratix.io/v1alpha1\nkind: WebApp\nmetadata: {name: x}\nspec: {image: n, replicas: 11}\n",
            &["spec.replicas", "maximum"],
        ),
        (
            "destination on another's path",
            "apiVersion: platform.kratix.io/v1alpha1\nkind: Destination\nmetadata: {name: x}\nspec: {path: worker-1, stateStoreRef: {kind: GitStateStore, name: default}}\n",
            &["document 2", "spec.path", "destination path 'worker-1' already exists for state store 'default'"],
        ),
        (
            "duplicate in one apply",
            "apiVersion: v1\nkind: Secret\nmetadata: {name: innocent}\nstringData: {a: c}\n",
            &["document 2", "innocent", "document 1"],
        ),
        (
            "promise with an invalid pipeline",
            "apiVersion: platform.kratix.io/v1alpha1\nkind: Promise\nmetadata: {name: p}\nspec:\n  workflows:\n    resource:\n      configure:\n        - {apiVersion: platform.kratix.io/v1alpha1, kind: NotAPipeline, metadata: {name: a}}\n",
            &["spec.workflows.resource.configure[0]", "Pipeline"],
        ),
    ];
    for (name, bad, expected) in cases {
        let k = with_promise();
        let before_secrets = k.list_json("secrets", &["-A"]).len();
        let before_apps = k.list_json("webapps", &["-A"]).len();
        let run = k.apply_yaml(&format!("{valid_first}{bad}"), &["--no-wait"]);
        run.assert_failed();
        for e in *expected {
            assert!(
                run.stderr.contains(e),
                "{name}: expected {e:?} in: {}",
                run.stderr
            );
        }
        assert!(
            run.stderr.contains("<stdin>"),
            "{name}: names the source: {}",
            run.stderr
        );
        assert_eq!(
            k.list_json("secrets", &["-A"]).len(),
            before_secrets,
            "{name}: nothing stored"
        );
        assert_eq!(
            k.list_json("webapps", &["-A"]).len(),
            before_apps,
            "{name}: nothing stored"
        );
    }
}

#[test]
fn files_and_folders_are_read_recursively() {
    let k = Kratix::new();
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("nested/deeper")).expect("mkdir");
    std::fs::write(
        dir.path().join("a.yaml"),
        "apiVersion: v1\nkind: Secret\nmetadata: {name: a}\n",
    )
    .expect("write");
    std::fs::write(dir.path().join("nested/deeper/b.yml"), "apiVersion: v1\nkind: Secret\nmetadata: {name: b}\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: c}\n").expect("write");
    std::fs::write(dir.path().join("nested/ignored.txt"), "not yaml").expect("write");
    k.run(&["apply", "-f", dir.path().to_str().expect("utf-8")])
        .assert_ok();
    let names: Vec<String> = k
        .list_json("secrets", &[])
        .iter()
        .map(|s| {
            s["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert_eq!(names, vec!["a", "b", "c"]);
}

#[test]
fn generation_bumps_on_spec_changes_only_and_wait_follows_it() {
    let k = with_promise();
    let app = |replicas: u32, team: &str| {
        format!("apiVersion: example.kratix.io/v1alpha1\nkind: WebApp\nmetadata: {{name: a, labels: {{team: {team}}}}}\nspec: {{image: nginx, replicas: {replicas}}}\n")
    };
    k.apply_yaml(&app(1, "x"), &["--no-wait"]).assert_ok();
    let g =
        |k: &Kratix| k.get_json("webapp", "a", None).expect("a")["metadata"]["generation"].clone();
    assert_eq!(g(&k), 1);
    k.apply_yaml(&app(1, "y"), &["--no-wait"]).assert_ok();
    assert_eq!(g(&k), 1, "a label change is not a spec change");
    k.apply_yaml(&app(2, "y"), &["--no-wait"]).assert_ok();
    assert_eq!(g(&k), 2);
    // Nothing has reconciled generation 2 yet, so wait has to drive it.
    k.run(&[
        "wait",
        "webapp",
        "a",
        "--for",
        "condition=Reconciled",
        "--timeout",
        "120",
    ])
    .assert_ok();
    let obj = k.get_json("webapp", "a", None).expect("a");
    assert_eq!(obj["status"]["observedGeneration"], 2);
    let bad = k.run(&["wait", "webapp", "a", "--for", "bogus"]);
    bad.assert_failed();
    assert!(bad.stderr.contains("condition=TYPE"), "{}", bad.stderr);
}

#[test]
fn delete_removes_objects_and_wait_for_delete_returns() {
    let k = Kratix::new();
    k.apply_yaml(
        "apiVersion: v1\nkind: Secret\nmetadata: {name: gone}\n",
        &[],
    )
    .assert_ok();
    k.run(&["delete", "secret", "gone"]).assert_ok();
    assert!(k.get_json("secret", "gone", None).is_none());
    k.run(&[
        "wait",
        "secret",
        "gone",
        "--for",
        "delete",
        "--timeout",
        "5",
    ])
    .assert_ok();
    let missing = k.run(&["delete", "secret", "gone"]);
    missing.assert_failed();
    assert!(missing.stderr.contains("gone"), "{}", missing.stderr);
}

#[test]
fn serve_does_the_work_and_apply_only_watches() {
    let mut k = Kratix::new();
    k.start_serve();
    let again = k.run(&["serve"]);
    again.assert_failed();
    assert!(again.stderr.contains("already serving"), "{}", again.stderr);
    let quickstart = fixtures().join("quickstart");
    k.run(&[
        "apply",
        "-f",
        quickstart.to_str().expect("utf-8"),
        "--timeout",
        "120",
    ])
    .assert_ok();
    assert_eq!(k.list_json("webapps", &[]).len(), 2);
    k.stop_serve();
    // serve released the home: a later command can reconcile by itself.
    support::eventually("serve to stop", Duration::from_secs(20), || {
        k.run(&["reconcile", "webapp", "shop", "--timeout", "120"])
            .ok()
            .then_some(())
    });
}

#[test]
fn crds_prints_every_kratix_kind() {
    let k = Kratix::new();
    let run = k.run(&["crds"]);
    run.assert_ok();
    for kind in [
        "Promise",
        "Destination",
        "GitStateStore",
        "BucketStateStore",
        "Work",
        "WorkPlacement",
        "PipelineRun",
    ] {
        assert!(
            run.stdout.contains(&format!("kind: {kind}\n")),
            "{kind} missing"
        );
    }
}

#[test]
fn controller_without_a_cluster_fails_naming_its_kubeconfig() {
    let k = Kratix::new();
    let missing = k.home().join("no-such-kubeconfig");
    let missing = missing.to_str().expect("UTF-8 path");
    let run = k.run(&["controller", "--kubeconfig", missing]);
    run.assert_failed();
    assert!(
        run.stderr
            .contains(&format!("reading kubeconfig {missing}")),
        "{}",
        run.stderr
    );
    let help = k.run(&["controller", "--help"]);
    help.assert_ok();
    assert!(!help.stdout.contains("not available"), "{}", help.stdout);
    assert!(help.stdout.contains("--leader-elect"), "{}", help.stdout);
}

/// The README's quick start uses the default, relative home (`./.kratix`): pipelines must still
/// find their folders.
#[test]
fn a_relative_home_works_as_the_default_does() {
    let dir = tempfile::tempdir().expect("tempdir");
    let quickstart = fixtures().join("quickstart");
    let out = std::process::Command::new(support::binary())
        .current_dir(dir.path())
        .env_remove("KRATIX_HOME")
        .args(["apply", "-f", quickstart.to_str().expect("utf-8")])
        .output()
        .expect("kratix-rs runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let repo = dir.path().join(".kratix/state-store.git");
    let log = git(
        &[
            "--git-dir",
            repo.to_str().expect("utf-8"),
            "log",
            "--format=%s",
        ],
        dir.path(),
    );
    assert!(log.contains("Update from: webapp-shop-service"), "{log}");
}

/// `apply` of a changed Promise returns only once its requests have re-run for it.
#[test]
fn applying_a_changed_promise_waits_for_its_requests_to_rerun() {
    let k = Kratix::new();
    let quickstart = fixtures().join("quickstart");
    k.run(&["apply", "-f", quickstart.to_str().expect("utf-8")])
        .assert_ok();
    let changed = quickstart_promise().replace("- port: 80", "- port: 8080");
    assert_ne!(
        changed,
        quickstart_promise(),
        "the fixture has the port to change"
    );
    k.apply_yaml(&changed, &[]).assert_ok();
    let repo = k.home().join("state-store.git");
    for app in k.list_json("webapps", &[]) {
        let name = app["metadata"]["name"].as_str().expect("name");
        assert_eq!(app["status"]["observedPromiseGeneration"], 2, "{name}");
        assert_eq!(
            condition(&app, "Reconciled").expect("Reconciled")["status"],
            "True",
            "{name}"
        );
        let service = git(
            &[
                "--git-dir",
                repo.to_str().expect("utf-8"),
                "show",
                &format!(
                    "main:worker-1/resources/default/webapp/{name}/service/5058f/service.yaml"
                ),
            ],
            k.home(),
        );
        assert!(service.contains("port: 8080"), "{name}: {service}");
    }
}

/// A request whose files were never written (here: no Destination matches its Promise's
/// selectors) is deleted at once, without waiting for any store.
#[test]
fn deleting_a_request_whose_files_were_never_written_completes_at_once() {
    let mut k = Kratix::new();
    let promise = quickstart_promise().replace("environment: dev", "environment: nowhere");
    // The Promise's own Works can't be placed either, so it never settles: don't wait for it.
    k.apply_yaml(
        &format!("{STORE_AND_DESTINATION}\n---\n{promise}"),
        &["--no-wait"],
    )
    .assert_ok();
    k.start_serve();
    k.apply_yaml(
        "apiVersion: example.kratix.io/v1alpha1\nkind: WebApp\nmetadata: {name: lost}\nspec: {image: nginx}\n",
        &["--no-wait"],
    )
    .assert_ok();
    support::eventually(
        "the request's Works to be unschedulable",
        Duration::from_secs(60),
        || {
            // validate writes no files: its Work has no workload group to place.
            let works = k.list_json(
                "works",
                &[
                    "-l",
                    "kratix.io/resource-name=lost,kratix.io/pipeline-name!=validate",
                ],
            );
            (works.len() == 2
                && works.iter().all(|w| {
                    condition(w, "ScheduleSucceeded").is_some_and(|c| c["status"] == "False")
                }))
            .then_some(())
        },
    );
    k.run(&["delete", "webapp", "lost", "--timeout", "60"])
        .assert_ok();
    assert!(k.get_json("webapp", "lost", None).is_none());
    assert!(k
        .list_json("works", &["-A", "-l", "kratix.io/resource-name=lost"])
        .is_empty());
}

/// `reconcile promise NAME` re-runs the Promise's own configure workflow.
#[test]
fn reconcile_reruns_a_promises_configure_workflow() {
    let k = Kratix::new();
    let quickstart = fixtures().join("quickstart");
    k.run(&["apply", "-f", quickstart.to_str().expect("utf-8")])
        .assert_ok();
    let setup_runs = |k: &Kratix| {
        k.list_json(
            "pipelineruns",
            &[
                "-n",
                "kratix-platform-system",
                "-l",
                "kratix.io/pipeline-name=setup",
            ],
        )
        .len()
    };
    assert_eq!(setup_runs(&k), 1);
    k.run(&["reconcile", "promise", "webapp"]).assert_ok();
    assert_eq!(setup_runs(&k), 2);
    let promise = k.get_json("promise", "webapp", None).expect("promise");
    assert!(promise["metadata"]["labels"]
        .get("kratix.io/manual-reconciliation")
        .is_none());
    assert_eq!(
        condition(&promise, "Reconciled").expect("Reconciled")["status"],
        "True"
    );
}
