//! kratix-rs on a real Kubernetes control plane (scripts/testworld: etcd, kube-apiserver and
//! kube-controller-manager on loopback; no kubelet): the `ControlPlane` contract on the
//! Kubernetes backend, Promise APIs as CRDs, and `kratix-rs controller` running pipelines as
//! Jobs (whose pods a test kubelet runs as local processes) into a Git store served by
//! `git daemon`, alone and as two replicas with a Lease. Each test starts its own API server: controllers act on everything they see.
//! Skipped, with a NOTE, when the test world is not installed (it fails instead under
//! `KRATIX_REQUIRE_REAL=1`).

mod support;

use std::path::Path;
use std::time::Duration;

use futures::StreamExt;
use kratix::store::{ControlPlane, Error};
use serde_json::{json, Value};
use support::kube::{http_get, Controller, TestEnv};
use support::{condition, eventually};
use testkit::{git, GitDaemon};

/// Generous bound for anything a test waits for; never a timing assertion.
const PATIENCE: Duration = Duration::from_secs(120);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_plane_contract_holds_on_kubernetes() {
    let Some(env) = TestEnv::start() else { return };
    let cp = env.control_plane().await;
    for i in 0..support::contract::CASES.len() {
        env.create_namespace(&format!("contract-{i}"));
    }
    kratix::kube::KubeControlPlane::ensure_system_namespace(&cp)
        .await
        .expect("system namespace");
    support::contract::run_all(&cp, |i| format!("contract-{i}")).await;
}

/// Each handle stands for a controller process: it reserves numbers in blocks and hands them
/// out itself, so handles at once share no number, each one's grow, and a handle made after
/// the others (a restarted controller, a new leader) numbers above all of theirs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_handles_never_get_the_same_sequence_value() {
    let Some(env) = TestEnv::start() else { return };
    let first = env.control_plane().await;
    first
        .ensure_system_namespace()
        .await
        .expect("system namespace");
    let mut tasks = vec![];
    for _ in 0..3 {
        let cp = env.control_plane().await;
        // Two tasks on one handle take from its block at once, as reconciles do.
        let takers: Vec<_> = (0..2)
            .map(|_| {
                let cp = cp.clone();
                tokio::spawn(async move {
                    let mut got = vec![];
                    for _ in 0..40 {
                        got.push(cp.next_sequence("pipelinerun").await.expect("sequence"));
                    }
                    got
                })
            })
            .collect();
        tasks.push(takers);
    }
    let mut all = vec![];
    for takers in tasks {
        let mut of_handle = vec![];
        for task in takers {
            let got = task.await.expect("task");
            assert!(got.windows(2).all(|w| w[0] < w[1]), "{got:?}");
            of_handle.extend(got);
        }
        all.extend(of_handle);
    }
    let count = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), count, "a number handed out twice: {all:?}");
    let highest = *all.last().expect("numbers");
    let restarted = env.control_plane().await;
    let next = restarted
        .next_sequence("pipelinerun")
        .await
        .expect("sequence");
    assert!(next > highest, "{next} after {highest}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_from_a_forgotten_position_expires() {
    let Some(env) = TestEnv::start() else { return };
    let cp = env.control_plane().await;
    // The API server keeps a window of recent positions; position 1 is long gone once the
    // CRDs were installed and compacted away or outside the watch cache.
    let mut stream = cp.watch(&[kratix::api::Builtin::Work.info()], "1");
    let first = tokio::time::timeout(PATIENCE, stream.next())
        .await
        .expect("an answer within the bound")
        .expect("the stream yields");
    assert!(matches!(first, Err(Error::Expired { .. })), "{first:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn promise_api_is_a_crd_only_while_the_promise_exists() {
    let Some(env) = TestEnv::start() else { return };
    let cp = env.control_plane().await;
    let promise: Value = serde_json::from_str(&support::things::promise(&["a"])).expect("json");
    let api = &promise["spec"]["api"];
    cp.register_kind("thing", api).await.expect("install CRD");
    let crd = env
        .get_json("crd", "things.test.kratix.io", None)
        .expect("the CRD is installed");
    assert_eq!(crd["metadata"]["labels"]["kratix.io/promise-name"], "thing");
    // The API server now validates requests against the Promise's schema.
    let bad = support::things::request("bad", 1).replace("\"size\":1", "\"size\":\"big\"");
    let refused = env.try_kubectl(&["apply", "-f", "-"], &bad);
    assert!(
        refused.as_ref().is_err_and(|e| e.contains("spec.size")),
        "{refused:?}"
    );
    env.apply(&support::things::request("good", 2));
    let kind =
        kratix::api::promise_api::kinds_from_promises(&[
            serde_json::from_value(promise.clone()).expect("object")
        ])
        .remove(0);
    let stored = cp.get(&kind, Some("default"), "good").await.expect("get");
    assert_eq!(stored.expect("stored").data["spec"]["size"], json!(2));
    // Installing again is a no-op; another Promise's CRD is left alone; ours goes.
    cp.register_kind("thing", api).await.expect("again");
    cp.remove_kind("other", &kind).await.expect("not ours");
    assert!(env.get_json("crd", "things.test.kratix.io", None).is_some());
    cp.remove_kind("thing", &kind).await.expect("remove");
    eventually("the CRD to go", PATIENCE, || {
        env.get_json("crd", "things.test.kratix.io", None)
            .is_none()
            .then_some(())
    });
}

// ---------------------------------------------------------------------------------------------
// `kratix-rs controller`
// ---------------------------------------------------------------------------------------------

/// A Git state store served by `git daemon` and Destination `worker-1` on it.
fn git_platform(env: &TestEnv, daemon: &GitDaemon) {
    daemon.bare_repo("state.git").expect("bare repository");
    env.apply(&support::git_destination_yaml(
        &daemon.url("state.git"),
        "worker-1",
        "{env: dev}",
    ));
}

/// The request `name` once reconciled for its current generation.
fn reconciled(env: &TestEnv, name: &str) -> Option<Value> {
    let obj = env.get_json("things", name, Some("default"))?;
    let current = obj["status"]["observedGeneration"] == obj["metadata"]["generation"];
    let done = condition(&obj, "Reconciled").and_then(|c| c["status"].as_str()) == Some("True");
    (current && done).then_some(obj)
}

fn runs(env: &TestEnv, request: &str) -> Vec<support::things::RunInfo> {
    let selector = format!("kratix.io/resource-name={request}");
    let mut runs: Vec<_> = env
        .list_json("pipelineruns", &["-A", "-l", &selector])
        .iter()
        .map(support::things::RunInfo::from_json)
        .collect();
    runs.sort_by_key(|r| r.sequence);
    runs
}

/// Subjects of the commits of `main` that touched `path`.
fn commits_touching(repo: &Path, path: &str) -> Vec<String> {
    let repo = repo.to_str().expect("UTF-8 path");
    git(
        &["--git-dir", repo, "log", "--format=%s", "main", "--", path],
        Path::new("/"),
    )
    .lines()
    .map(str::to_string)
    .collect()
}

/// The request `name` once reconciled; on timeout, the panic shows the controller's log and the
/// pipeline Jobs and pods.
#[track_caller]
fn settled(env: &TestEnv, controller: &Controller, name: &str) -> Value {
    let deadline = std::time::Instant::now() + PATIENCE;
    loop {
        if let Some(obj) = reconciled(env, name) {
            return obj;
        }
        if std::time::Instant::now() > deadline {
            let jobs = env.try_kubectl(&["get", "jobs,pods", "-A", "-o", "wide"], "");
            let failures: Vec<Value> = env
                .list_json("pods", &["-A"])
                .iter()
                .map(|p| p["status"].clone())
                .collect();
            let pod_logs: Vec<(String, String)> = walkdir(&env.dir().join("pods"));
            let obj = env.get_json("things", name, Some("default"));
            let log = controller.log();
            let tail: Vec<&str> = log.lines().rev().take(40).collect();
            panic!(
                "{name} not reconciled: {obj:#?}\n{jobs:?}\n{failures:#?}\n{pod_logs:#?}\ncontroller log (last lines first):\n{}",
                tail.join("\n")
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The containers' logs the test kubelet kept.
fn walkdir(dir: &Path) -> Vec<(String, String)> {
    let mut found = vec![];
    for pod in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        for file in std::fs::read_dir(pod.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let path = file.path();
            if path.extension().is_some_and(|e| e == "log") {
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                found.push((path.display().to_string(), text));
            }
        }
    }
    found
}

/// Applies the `thing` Promise and waits for its CRD (installed by the controller).
fn apply_promise(env: &TestEnv, pipelines: &[&str]) {
    env.apply(&support::things::promise(pipelines));
    eventually("the Promise's CRD", PATIENCE, || {
        env.get_json("crd", "things.test.kratix.io", None)
            .filter(|crd| {
                condition(crd, "Established").and_then(|c| c["status"].as_str()) == Some("True")
            })
            .map(|_| ())
    });
}

#[test]
fn controller_runs_three_pipelines_in_order_with_one_commit_each() {
    let Some(env) = TestEnv::start() else { return };
    let daemon = GitDaemon::start().expect("git daemon");
    let work = tempfile::tempdir().expect("work dir");
    let _kubelet = env.kubelet();
    let mut controller = Controller::start(&env, "solo", work.path(), &[]);
    git_platform(&env, &daemon);
    // Readable commits, as in the embedded runtime: the same controller code.
    env.kubectl(
        &[
            "annotate",
            "gitstatestore",
            "default",
            "kratix.io/commit-message-template=deploy {promise}/{request} by {pipeline}",
        ],
        "",
    );
    env.kubectl(
        &[
            "patch",
            "gitstatestore",
            "default",
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"gitAuthor":{"name":"Platform Bot","email":"bot@example.com"}}}"#,
        ],
        "",
    );
    apply_promise(&env, &["a", "b", "c"]);
    env.apply(&support::things::request("r1", 3));
    let obj = settled(&env, &controller, "r1");
    for type_ in ["ConfigureWorkflowCompleted", "Reconciled", "WorksSucceeded"] {
        assert_eq!(
            condition(&obj, type_).and_then(|c| c["status"].as_str()),
            Some("True"),
            "{type_}: {obj:#}"
        );
    }

    let runs = runs(&env, "r1");
    let names: Vec<&str> = runs.iter().map(|r| r.pipeline.as_str()).collect();
    assert_eq!(names, ["a", "b", "c"], "{runs:#?}");
    assert!(runs.iter().all(|r| r.phase == "Succeeded"), "{runs:#?}");
    support::things::assert_never_overlapped(&runs);

    // The controllers' events are the cluster's own: listed, and shown by `kubectl describe`.
    let events: Value =
        serde_json::from_str(&env.kubectl(&["get", "events", "-n", "default", "-o", "json"], ""))
            .expect("a JSON list");
    let reasons: Vec<&str> = events["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["involvedObject"]["name"] == "r1")
        .filter_map(|e| e["reason"].as_str())
        .collect();
    for reason in ["PipelineStarted", "PipelineSucceeded"] {
        assert!(reasons.contains(&reason), "{reason}: {events:#}");
    }
    let described = env.kubectl(&["describe", "thing", "r1", "-n", "default"], "");
    assert!(described.contains("PipelineSucceeded"), "{described}");

    let repo = daemon.bare_repo("state.git").expect("repository");
    for p in ["a", "b", "c"] {
        let path = format!("worker-1/resources/default/thing/r1/{p}/");
        let commits = eventually("the pipeline's files committed", PATIENCE, || {
            let c = commits_touching(&repo, &path);
            (!c.is_empty()).then_some(c)
        });
        assert_eq!(commits.len(), 1, "one commit for pipeline {p}: {commits:?}");
        assert_eq!(commits[0], format!("deploy thing/r1 by {p}"));
    }
    let authors = git(
        &[
            "--git-dir",
            repo.to_str().expect("UTF-8"),
            "log",
            "--format=%an <%ae>|%cn <%ce>",
            "main",
            "--",
            // NB: the canary may have been written before the store was patched.
            "worker-1/resources/default/thing/r1",
        ],
        Path::new("/"),
    );
    assert_eq!(authors.lines().count(), 3, "{authors}");
    for line in authors.lines() {
        assert_eq!(
            line, "Platform Bot <bot@example.com>|Platform Bot <bot@example.com>",
            "{authors}"
        );
    }

    // A Promise's static dependencies become a dependency Work (no request) written to the
    // Destination, as a promise workflow's output does.
    env.kubectl(
        &[
            "patch",
            "promise",
            "thing",
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"dependencies":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"shared","namespace":"default"},"data":{"a":"b"}}]}}"#,
        ],
        "",
    );
    let dependencies = eventually("the static dependencies written", PATIENCE, || {
        let files = files_under(&repo, "worker-1/dependencies/thing/");
        (!files.is_empty()).then_some(files)
    });
    assert_eq!(dependencies.len(), 1, "{dependencies:?}");

    // Operability: alive, ready, and the reconciles counted.
    assert_eq!(
        http_get(controller.health_port, "/healthz").map(|r| r.0),
        Some(200)
    );
    assert_eq!(
        http_get(controller.health_port, "/readyz").map(|r| r.0),
        Some(200)
    );
    let (code, metrics) = http_get(controller.metrics_port, "/metrics").expect("metrics answer");
    assert_eq!(code, 200);
    assert!(metrics.lines().any(|l| l == "kratix_leader 1"), "{metrics}");
    let requests = metrics
        .lines()
        .find_map(|l| l.strip_prefix("kratix_reconcile_total{controller=\"request\"} "))
        .and_then(|n| n.parse::<u64>().ok())
        .expect("request reconciles counted");
    assert!(requests > 0, "{metrics}");
    let runs = metrics
        .lines()
        .find_map(|l| {
            l.strip_prefix(
                "kratix_pipeline_runs_total{workflow_type=\"resource\",action=\"configure\",result=\"succeeded\"} ",
            )
        })
        .and_then(|n| n.parse::<u64>().ok())
        .expect("pipeline runs counted");
    assert_eq!(runs, 3, "{metrics}");
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("kratix_git_commits_per_push_count ") && !l.ends_with(" 0")),
        "{metrics}"
    );

    // Deleting the Promise deletes its requests, their files, and its CRD.
    env.kubectl(&["delete", "promise", "thing", "--wait=false"], "");
    eventually("the Promise and its CRD gone", PATIENCE, || {
        let gone = env.get_json("promise", "thing", None).is_none()
            && env.get_json("crd", "things.test.kratix.io", None).is_none();
        gone.then_some(())
    });
    let files = git(
        &[
            "--git-dir",
            repo.to_str().expect("UTF-8"),
            "ls-tree",
            "-r",
            "--name-only",
            "main",
        ],
        Path::new("/"),
    );
    assert!(!files.contains("resources/default/thing/r1"), "{files}");

    // SIGTERM stops it cleanly; logs are JSON lines.
    assert_eq!(controller.terminate(), Some(0), "{}", controller.log());
    let log = controller.log();
    assert!(
        log.lines()
            .filter(|l| !l.trim().is_empty())
            .all(|l| serde_json::from_str::<Value>(l).is_ok()),
        "{log}"
    );
}

#[test]
fn pipelines_run_inside_the_controller_when_asked_and_jobs_need_the_adapter_image() {
    let Some(env) = TestEnv::start() else { return };
    // Jobs need the adapter image: without it the controller says so and stops.
    let refused = std::process::Command::new(support::binary())
        .arg("controller")
        .arg("--kubeconfig")
        .arg(&env.kubeconfig)
        .env_remove("KRATIX_PIPELINE_ADAPTER_IMAGE")
        .env_remove("KRATIX_PIPELINES")
        .output()
        .expect("kratix-rs controller runs");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("KRATIX_PIPELINE_ADAPTER_IMAGE is not set"),
        "{stderr}"
    );

    // `--pipelines local`: no kubelet here, and the request is reconciled without any Job.
    let daemon = GitDaemon::start().expect("git daemon");
    let work = tempfile::tempdir().expect("work dir");
    let controller = Controller::start(&env, "local", work.path(), &["--pipelines", "local"]);
    git_platform(&env, &daemon);
    apply_promise(&env, &["a"]);
    env.apply(&support::things::request("r1", 1));
    settled(&env, &controller, "r1");
    assert!(env.list_json("jobs", &["-A"]).is_empty());
}

/// The holder of the controllers' Lease.
fn lease_holder(env: &TestEnv) -> Option<String> {
    env.get_json(
        "lease",
        "kratix-rs-controller",
        Some(kratix::api::SYSTEM_NAMESPACE),
    )?["spec"]["holderIdentity"]
        .as_str()
        .map(str::to_string)
}

fn is_leader(c: &Controller) -> Option<bool> {
    let (_, metrics) = http_get(c.metrics_port, "/metrics")?;
    metrics.lines().find_map(|l| match l {
        "kratix_leader 1" => Some(true),
        "kratix_leader 0" => Some(false),
        _ => None,
    })
}

#[test]
fn two_replicas_with_a_lease_one_acts_and_the_other_takes_over() {
    let Some(env) = TestEnv::start() else { return };
    let daemon = GitDaemon::start().expect("git daemon");
    let work = tempfile::tempdir().expect("work dir");
    let _kubelet = env.kubelet();
    let election = [
        "--leader-elect",
        "--lease-duration",
        "6",
        "--renew-deadline",
        "4",
        "--retry-period",
        "1",
    ];
    let mut replicas = [
        Controller::start(&env, "replica-a", work.path(), &election),
        Controller::start(&env, "replica-b", work.path(), &election),
    ];
    let holder = eventually("a Lease holder", PATIENCE, || lease_holder(&env));
    let leader = replicas
        .iter()
        .position(|r| r.name == holder)
        .expect("a replica holds the Lease");
    let standby = 1 - leader;
    eventually("the leader reports it", PATIENCE, || {
        (is_leader(&replicas[leader]) == Some(true)).then_some(())
    });
    assert_eq!(is_leader(&replicas[standby]), Some(false));
    // The standby is ready to take over.
    let standby_ready = eventually("the standby ready", PATIENCE, || {
        let r = &replicas[standby];
        http_get(r.health_port, "/readyz").filter(|(code, _)| *code == 200)
    });
    assert_eq!(standby_ready.0, 200);

    git_platform(&env, &daemon);
    apply_promise(&env, &["a"]);
    env.apply(&support::things::request("r1", 1));
    eventually("r1 reconciled by the leader", PATIENCE, || {
        reconciled(&env, "r1")
    });
    let acted = |r: &Controller| r.log().contains("starting the controllers");
    assert!(acted(&replicas[leader]), "{}", replicas[leader].log());
    assert!(!acted(&replicas[standby]), "{}", replicas[standby].log());

    // The leader dies without giving the Lease up: the standby takes over once it expires.
    replicas[leader].kill();
    let new_holder = eventually("the standby holds the Lease", PATIENCE, || {
        lease_holder(&env).filter(|h| *h == replicas[standby].name)
    });
    assert_eq!(new_holder, replicas[standby].name);
    env.apply(&support::things::request("r2", 2));
    eventually("r2 reconciled by the new leader", PATIENCE, || {
        reconciled(&env, "r2")
    });
    assert!(acted(&replicas[standby]), "{}", replicas[standby].log());
    assert!(replicas[standby].running());
    // Stopped with SIGTERM, it gives the Lease up.
    assert_eq!(replicas[standby].terminate(), Some(0));
    let released = env
        .get_json(
            "lease",
            "kratix-rs-controller",
            Some(kratix::api::SYSTEM_NAMESPACE),
        )
        .expect("the Lease");
    assert!(
        released["spec"]["holderIdentity"].as_str().is_none(),
        "{released:#}"
    );
}

#[test]
fn a_leader_whose_lease_is_taken_stops_acting_and_exits() {
    let Some(env) = TestEnv::start() else { return };
    let work = tempfile::tempdir().expect("work dir");
    let election = [
        "--leader-elect",
        "--lease-duration",
        "6",
        "--renew-deadline",
        "4",
        "--retry-period",
        "1",
    ];
    let mut leader = Controller::start(&env, "replica-a", work.path(), &election);
    eventually("it leads", PATIENCE, || {
        (is_leader(&leader) == Some(true)).then_some(())
    });
    // Another holder writes the Lease (as a replica that judged it expired would).
    env.kubectl(
        &[
            "patch",
            "lease",
            "kratix-rs-controller",
            "-n",
            kratix::api::SYSTEM_NAMESPACE,
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"holderIdentity":"intruder"}}"#,
        ],
        "",
    );
    eventually("the old leader to exit", PATIENCE, || {
        (!leader.running()).then_some(())
    });
    let log = leader.log();
    assert_eq!(leader.exit_code(), Some(1), "{log}");
    assert!(log.contains("lost the leader election"), "{log}");
    assert_eq!(lease_holder(&env).as_deref(), Some("intruder"));
}

// ---------------------------------------------------------------------------------------------
// The workflow lifecycle through `kratix-rs controller` and Jobs
// ---------------------------------------------------------------------------------------------

/// A pipeline of one `step.sh` container.
fn step(name: &str) -> Value {
    json!({
        "apiVersion": "platform.kratix.io/v1alpha1",
        "kind": "Pipeline",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "main", "image": "local/sh",
                                 "command": support::things::step_command()}]},
    })
}

/// The `thing` Promise with configure pipelines `configure` and the delete pipeline `bye`,
/// which suspends its workflow (`suspend: true`) until the file `release` exists and a manual
/// reconciliation resumes it.
fn lifecycle_promise(configure: &[&str], release: &Path) -> String {
    let configure: Vec<Value> = configure.iter().map(|p| step(p)).collect();
    let script = support::sandbox_fixtures("workflows/scripts").join("suspend-until.sh");
    let counter = release.with_extension("runs");
    let bye = json!({
        "apiVersion": "platform.kratix.io/v1alpha1",
        "kind": "Pipeline",
        "metadata": {"name": "bye"},
        "spec": {"containers": [{"name": "main", "image": "local/sh",
            "command": ["sh", script.display().to_string()],
            "env": [{"name": "RELEASE", "value": release.display().to_string()},
                    {"name": "COUNTER", "value": counter.display().to_string()}]}]},
    });
    support::things::promise_with_workflows(
        json!({"resource": {"configure": configure, "delete": [bye]}}),
    )
}

/// Names of the objects of every kind the executor and the controllers make for an owner that
/// match `selector`, in every namespace: what the label sweep must leave empty.
fn labelled_leftovers(env: &TestEnv, selector: &str) -> Vec<String> {
    let kinds = [
        "jobs",
        "configmaps",
        "serviceaccounts",
        "roles",
        "rolebindings",
        "clusterroles",
        "clusterrolebindings",
        "works",
        "workplacements",
        "crds",
    ];
    kinds
        .iter()
        .flat_map(|kind| {
            env.list_json(kind, &["-A", "-l", selector])
                .into_iter()
                .map(move |o| format!("{kind} {}", o["metadata"]["name"]))
        })
        .collect()
}

/// WorkPlacements of a `thing` request's Works: they carry their Work's name rather than the
/// request's labels.
fn placements_of(env: &TestEnv, request: &str) -> Vec<String> {
    let prefix = format!("thing-{request}-");
    env.list_json("workplacements", &["-A"])
        .iter()
        .filter_map(|p| p["metadata"]["name"].as_str().map(str::to_string))
        .filter(|n| n.starts_with(&prefix))
        .collect()
}

/// Files of the Git store under `prefix`.
fn files_under(repo: &Path, prefix: &str) -> Vec<String> {
    git(
        &[
            "--git-dir",
            repo.to_str().expect("UTF-8"),
            "ls-tree",
            "-r",
            "--name-only",
            "main",
        ],
        Path::new("/"),
    )
    .lines()
    .filter(|l| l.starts_with(prefix))
    .map(str::to_string)
    .collect()
}

/// The configure runs of `request` after sequence `after`, once they are exactly `expected`,
/// all succeeded and the request is reconciled.
#[track_caller]
fn rerun(
    env: &TestEnv,
    request: &str,
    after: i64,
    expected: &[&str],
) -> Vec<support::things::RunInfo> {
    eventually(
        &format!("{request} re-run as {expected:?}"),
        PATIENCE,
        || {
            let runs: Vec<_> = runs(env, request)
                .into_iter()
                .filter(|r| r.sequence > after && r.action == "configure")
                .collect();
            let names: Vec<&str> = runs.iter().map(|r| r.pipeline.as_str()).collect();
            let done = names == expected
                && runs.iter().all(|r| r.phase == "Succeeded")
                && reconciled(env, request).is_some();
            done.then_some(runs)
        },
    )
}

/// Labels the request `kratix.io/manual-reconciliation=true`.
fn reconcile_by_label(env: &TestEnv, request: &str) {
    label_request(env, request, "kratix.io/manual-reconciliation=true");
}

/// `kubectl label things <request> <change>` (`KEY=VALUE`, or `KEY-` to remove it).
fn label_request(env: &TestEnv, request: &str, change: &str) {
    env.kubectl(&["label", "things", request, "-n", "default", change], "");
}

fn last_sequence(env: &TestEnv, request: &str) -> i64 {
    runs(env, request).last().map_or(0, |r| r.sequence)
}

#[test]
fn lifecycle_through_jobs_reruns_removes_files_runs_delete_workflows_and_sweeps() {
    let Some(env) = TestEnv::start() else { return };
    let daemon = GitDaemon::start().expect("git daemon");
    let work = tempfile::tempdir().expect("work dir");
    let kubelet = env.kubelet();
    let controller = Controller::start(&env, "solo", work.path(), &[]);
    git_platform(&env, &daemon);
    let repo = daemon.bare_repo("state.git").expect("repository");
    apply_promise(&env, &["a", "b", "c"]);
    // The same pipelines, and a delete workflow.
    let release = work.path().join("release-bye");
    env.apply(&lifecycle_promise(&["a", "b", "c"], &release));
    env.apply(&support::things::request("r1", 1));
    let obj = settled(&env, &controller, "r1");
    assert_eq!(
        condition(&obj, "ConfigureWorkflowCompleted").and_then(|c| c["status"].as_str()),
        Some("True"),
        "{obj:#}"
    );
    let files = |p: &str| files_under(&repo, &format!("worker-1/resources/default/thing/r1/{p}/"));
    for p in ["a", "b", "c"] {
        eventually("the pipeline's files", PATIENCE, || {
            (!files(p).is_empty()).then_some(())
        });
    }
    // Kratix's keyed workflow status, kept whole by the API server under the request CRD the
    // controller installed: each pipeline with the hash of its run.
    let configure = &obj["status"]["kratix"]["workflows"]["configure"];
    let hash = runs(&env, "r1").last().map(|r| r.hash.clone());
    let entries: Vec<(&str, &str, Option<&str>)> = configure["pipelines"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            (
                p["name"].as_str().unwrap_or_default(),
                p["phase"].as_str().unwrap_or_default(),
                p["hash"].as_str(),
            )
        })
        .collect();
    assert_eq!(
        entries,
        ["a", "b", "c"].map(|p| (p, "Succeeded", hash.as_deref())),
        "{obj:#}"
    );
    assert!(
        configure["lastSuccessfulConfigureWorkflowTime"].is_string(),
        "{obj:#}"
    );

    // Update while running: the run in progress finishes, then the workflow starts again from
    // the first pipeline for the newest spec.
    let before = last_sequence(&env, "r1");
    env.apply(&support::things::request("r1", 2));
    eventually("a run of the update started", PATIENCE, || {
        runs(&env, "r1")
            .iter()
            .any(|r| r.sequence > before && r.phase == "Running")
            .then_some(())
    });
    env.apply(&support::things::request("r1", 3));
    eventually("r1 reconciled at size 3", PATIENCE, || {
        let obj = reconciled(&env, "r1")?;
        let path = files("c").into_iter().next()?;
        let c = git(
            &["--git-dir", repo.to_str()?, "show", &format!("main:{path}")],
            Path::new("/"),
        );
        (c.contains("size: \"3\"") && obj["spec"]["size"] == 3).then_some(())
    });
    let after_update: Vec<_> = runs(&env, "r1")
        .into_iter()
        .filter(|r| r.sequence > before)
        .collect();
    support::things::assert_never_overlapped(&after_update);
    assert_eq!(
        after_update
            .iter()
            .rev()
            .take(3)
            .map(|r| r.pipeline.as_str())
            .collect::<Vec<_>>(),
        ["c", "b", "a"],
        "the newest spec ran every pipeline in order: {after_update:#?}"
    );

    // The manual reconciliation label re-runs every pipeline and is cleared.
    let before = last_sequence(&env, "r1");
    reconcile_by_label(&env, "r1");
    let again = rerun(&env, "r1", before, &["a", "b", "c"]);
    support::things::assert_never_overlapped(&again);
    eventually("the label cleared", PATIENCE, || {
        let obj = env.get_json("things", "r1", Some("default"))?;
        obj["metadata"]["labels"]
            .get("kratix.io/manual-reconciliation")
            .is_none()
            .then_some(())
    });

    // N → N−1 and rename (b → x, c dropped): b's and c's files leave the store, x's arrive.
    let before = last_sequence(&env, "r1");
    env.apply(&lifecycle_promise(&["a", "x"], &release));
    rerun(&env, "r1", before, &["a", "x"]);
    eventually("b's and c's files gone, x's written", PATIENCE, || {
        (files("b").is_empty() && files("c").is_empty() && !files("x").is_empty()).then_some(())
    });
    // Their runs and Jobs went with them.
    assert!(
        runs(&env, "r1")
            .iter()
            .all(|r| r.pipeline != "b" && r.pipeline != "c"),
        "{:#?}",
        runs(&env, "r1")
    );
    for gone in ["b", "c"] {
        let selector = format!("kratix.io/resource-name=r1,kratix.io/pipeline-name={gone}");
        let jobs = env.list_json("jobs", &["-A", "-l", &selector]);
        assert!(jobs.is_empty(), "{gone}'s Jobs pruned: {jobs:#?}");
    }
    assert!(
        !env.list_json("jobs", &["-A", "-l", "kratix.io/pipeline-name=x"])
            .is_empty(),
        "x's Job stays"
    );

    // Deleting the request runs its delete workflow as a Job, then sweeps its Jobs and
    // ConfigMaps and removes its Works and files.
    let request = "kratix.io/promise-name=thing,kratix.io/resource-name=r1";
    let before_delete = labelled_leftovers(&env, request);
    for kind in ["jobs ", "works "] {
        assert!(
            before_delete.iter().any(|o| o.starts_with(kind)),
            "{kind}labelled for r1 exist before: {before_delete:?}"
        );
    }
    assert!(!placements_of(&env, "r1").is_empty());
    env.kubectl(
        &["delete", "things", "r1", "-n", "default", "--wait=false"],
        "",
    );
    // Its pipeline's workflow-control.yaml, handed back from the Job, suspends the delete
    // workflow: the request stays, says so (the `kratix.io/workflow-suspended` label too), and
    // reports it under its own key.
    let held = eventually("r1's delete workflow suspended", PATIENCE, || {
        let obj = env.get_json("things", "r1", Some("default"))?;
        let suspended = obj["status"]["kratix"]["workflows"]["delete"]["pipelines"][0]["phase"]
            == "Suspended"
            && obj["metadata"]["labels"]["kratix.io/workflow-suspended"] == "true";
        suspended.then_some(obj)
    });
    let completed = condition(&held, "DeleteWorkflowCompleted").expect("the condition");
    assert_eq!(
        (
            &completed["status"],
            &completed["reason"],
            &completed["message"]
        ),
        (
            &json!("False"),
            &json!("DeleteWorkflowSuspended"),
            &json!("The delete workflow is suspended")
        ),
        "{held:#}"
    );
    assert_eq!(
        held["status"]["kratix"]["workflows"]["configure"]["pipelines"]
            .as_array()
            .map(Vec::len),
        Some(2),
        "the configure entries stay: {held:#}"
    );
    assert_eq!(
        held["metadata"]["finalizers"],
        json!(["kratix.io/workflows-cleanup"])
    );
    std::fs::write(&release, "").expect("release the delete pipeline");
    // Removing the label resumes the delete workflow from its suspended pipeline.
    label_request(&env, "r1", "kratix.io/workflow-suspended-");
    eventually("r1 gone", PATIENCE, || {
        env.get_json("things", "r1", Some("default"))
            .is_none()
            .then_some(())
    });
    let ran = kubelet.kubelet.ran.lock().expect("not poisoned").clone();
    assert!(
        ran.iter()
            .any(|pod| pod.starts_with("kratix-thing-r1-bye-")),
        "the delete pipeline ran as a Job: {ran:?}"
    );
    eventually("nothing labelled for r1", PATIENCE, || {
        labelled_leftovers(&env, request).is_empty().then_some(())
    });
    assert!(files_under(&repo, "worker-1/resources/default/thing/r1").is_empty());
    // WorkPlacements carry their Work's name rather than the request's labels.
    eventually("r1's WorkPlacements gone", PATIENCE, || {
        placements_of(&env, "r1").is_empty().then_some(())
    });

    // Deleting the Promise sweeps everything labelled for it: its pipelines' ServiceAccounts,
    // roles and bindings, and its CRD.
    let promise = "kratix.io/promise-name=thing";
    assert!(
        labelled_leftovers(&env, promise)
            .iter()
            .any(|o| o.starts_with("serviceaccounts")),
        "the pipelines' ServiceAccounts exist before: {:?}",
        labelled_leftovers(&env, promise)
    );
    env.kubectl(&["delete", "promise", "thing", "--wait=false"], "");
    eventually("the Promise gone", PATIENCE, || {
        env.get_json("promise", "thing", None)
            .is_none()
            .then_some(())
    });
    let left = eventually("nothing labelled for the Promise", PATIENCE, || {
        let left = labelled_leftovers(&env, promise);
        left.is_empty().then_some(left)
    });
    assert!(left.is_empty());
    drop(controller);
}

/// Reconciliation intervals and health with `kratix-rs controller`: a request's workflow runs
/// again at the platform's interval, and HealthRecords show on its status until deleted.
#[test]
fn deleting_a_requests_namespace_skips_its_delete_workflow_and_the_namespace_goes() {
    let Some(env) = TestEnv::start() else { return };
    let daemon = GitDaemon::start().expect("git daemon");
    let work = tempfile::tempdir().expect("work dir");
    let _kubelet = env.kubelet();
    let controller = Controller::start(&env, "solo", work.path(), &[]);
    git_platform(&env, &daemon);
    let repo = daemon.bare_repo("state.git").expect("repository");
    apply_promise(&env, &["a"]);
    // A delete workflow that would hold the request for ever if it ran: its file is never made.
    let never = work.path().join("never-released");
    env.apply(&lifecycle_promise(&["a"], &never));
    env.kubectl(&["create", "namespace", "doomed"], "");
    let request = support::things::request("r1", 1).replace("\"default\"", "\"doomed\"");
    env.apply(&request);
    let prefix = "worker-1/resources/doomed/thing/r1/";
    eventually("r1's files", PATIENCE, || {
        let obj = env.get_json("things", "r1", Some("doomed"))?;
        let done = condition(&obj, "Reconciled").and_then(|c| c["status"].as_str()) == Some("True");
        (done && !files_under(&repo, prefix).is_empty()).then_some(())
    });

    // The namespace takes no new objects once it is being deleted, so no delete run can be
    // made in it: the request goes without its delete workflow, its files with it, and the
    // namespace does not wait for ever.
    env.kubectl(&["delete", "namespace", "doomed", "--wait=false"], "");
    let log = || controller.log();
    eventually("the namespace gone", PATIENCE, || {
        env.get_json("namespace", "doomed", None)
            .is_none()
            .then_some(())
    });
    assert!(
        files_under(&repo, prefix).is_empty(),
        "{:?}",
        files_under(&repo, prefix)
    );
    assert!(
        log().contains("the delete workflow cannot run there and is skipped"),
        "{}",
        log()
    );
    assert!(
        !never.with_extension("runs").exists(),
        "the delete pipeline ran"
    );
}

#[test]
fn controller_reruns_at_the_interval_and_combines_health_records() {
    let Some(env) = TestEnv::start() else { return };
    let daemon = GitDaemon::start().expect("git daemon");
    let work = tempfile::tempdir().expect("work dir");
    let controller = Controller::start(
        &env,
        "intervals",
        work.path(),
        &["--pipelines", "local", "--reconciliation-interval", "2s"],
    );
    git_platform(&env, &daemon);
    apply_promise(&env, &["a"]);
    env.apply(&support::things::request("r1", 1));
    settled(&env, &controller, "r1");
    eventually("the workflow ran again", PATIENCE, || {
        let succeeded = runs(&env, "r1")
            .iter()
            .filter(|r| r.phase == "Succeeded")
            .count();
        (succeeded >= 2).then_some(())
    });

    let record = |name: &str, state: &str| {
        json!({
            "apiVersion": "platform.kratix.io/v1alpha1",
            "kind": "HealthRecord",
            "metadata": {"name": name, "namespace": "default"},
            "data": {"promiseRef": {"name": "thing"},
                     "resourceRef": {"name": "r1", "namespace": "default"},
                     "state": state, "lastRun": 1_700_000_000},
        })
        .to_string()
    };
    env.apply(&record("probe-a", "healthy"));
    env.apply(&record("probe-b", "degraded"));
    let health = |env: &TestEnv| {
        env.get_json("things", "r1", Some("default"))
            .map_or(Value::Null, |o| o["status"]["healthStatus"].clone())
    };
    eventually("the worst state shows", PATIENCE, || {
        let h = health(&env);
        (h["state"] == "degraded" && h["healthRecords"].as_array().map(Vec::len) == Some(2))
            .then_some(())
    });
    env.kubectl(&["delete", "healthrecord", "probe-b", "-n", "default"], "");
    eventually("the status recomputed", PATIENCE, || {
        let h = health(&env);
        (h["state"] == "healthy" && h["healthRecords"].as_array().map(Vec::len) == Some(1))
            .then_some(())
    });
}

/// A Promise with no API and no workflows, at a version, requiring others (`name@version`).
fn plain_promise(name: &str, version: &str, requires: &[(&str, &str)]) -> String {
    let required: Vec<Value> = requires
        .iter()
        .map(|(n, v)| json!({"name": n, "version": v}))
        .collect();
    json!({
        "apiVersion": "platform.kratix.io/v1alpha1", "kind": "Promise",
        "metadata": {"name": name, "labels": {"kratix.io/promise-version": version}},
        "spec": {"requiredPromises": required},
    })
    .to_string()
}

/// The binding of a request, once it says `applied` was last applied.
fn binding_applied(env: &TestEnv, request: &str, applied: &str) -> Value {
    eventually(
        &format!("{request}'s binding at {applied}"),
        PATIENCE,
        || {
            env.list_json("resourcebindings", &["-A"])
                .into_iter()
                .find(|b| {
                    b["spec"]["resourceRef"]["name"] == request
                        && b["status"]["lastAppliedVersion"] == applied
                })
        },
    )
}

#[test]
fn versions_and_releases_work_with_the_controller() {
    let Some(env) = TestEnv::start() else { return };
    let daemon = GitDaemon::start().expect("git daemon");
    let work = tempfile::tempdir().expect("work dir");
    let controller = Controller::start(&env, "versions", work.path(), &["--pipelines", "local"]);
    git_platform(&env, &daemon);

    // A versioned Promise: a revision per version, requests bound to `latest` and upgraded.
    env.apply(&support::things::promise_at("v1", &["a"]));
    eventually("the Promise's CRD", PATIENCE, || {
        env.get_json("crd", "things.test.kratix.io", None)
    });
    env.apply(&support::things::request("r1", 1));
    settled(&env, &controller, "r1");
    let binding = binding_applied(&env, "r1", "v1");
    assert_eq!(binding["spec"]["version"], "latest");
    env.apply(&support::things::promise_at("v2", &["a", "b"]));
    let binding = binding_applied(&env, "r1", "v2");
    assert_eq!(
        condition(&binding, "UpgradeSucceeded").and_then(|c| c["status"].as_str()),
        Some("True"),
        "{binding:#}"
    );
    let revisions = env.list_json("promiserevisions", &[]);
    let latest: Vec<(&str, bool)> = revisions
        .iter()
        .map(|r| {
            (
                r["spec"]["version"].as_str().unwrap_or_default(),
                r["status"]["latest"].as_bool().unwrap_or(false),
            )
        })
        .collect();
    assert!(
        latest.contains(&("v1", false)) && latest.contains(&("v2", true)),
        "{latest:?}"
    );
    assert!(runs(&env, "r1").iter().any(|r| r.pipeline == "b"));

    // Without an admission webhook nothing refuses deleting the latest revision here: the
    // controller makes it again.
    let latest_name = revisions
        .iter()
        .find(|r| r["spec"]["version"] == "v2")
        .and_then(|r| r["metadata"]["name"].as_str())
        .expect("the v2 revision")
        .to_string();
    let old_uid = env
        .get_json("promiserevision", &latest_name, None)
        .expect("revision")["metadata"]["uid"]
        .clone();
    env.kubectl(&["delete", "promiserevision", &latest_name], "");
    eventually("the latest revision made again", PATIENCE, || {
        let r = env.get_json("promiserevision", &latest_name, None)?;
        (r["metadata"]["uid"] != old_uid && r["status"]["latest"] == true).then_some(())
    });
    // The Promise says so with a Warning event, once: not for the revisions made for the
    // first time.
    let recreated = eventually("an event about the revision made again", PATIENCE, || {
        let out = env.kubectl(&["get", "events", "-n", "default", "-o", "json"], "");
        let events: Value = serde_json::from_str(&out).ok()?;
        let found: Vec<Value> = events["items"]
            .as_array()?
            .iter()
            .filter(|e| e["reason"] == "LatestRevisionRecreated")
            .cloned()
            .collect();
        (!found.is_empty()).then_some(found)
    });
    assert_eq!(recreated.len(), 1, "{recreated:#?}");
    let event = &recreated[0];
    assert_eq!(
        (
            &event["type"],
            &event["involvedObject"]["kind"],
            &event["count"]
        ),
        (&json!("Warning"), &json!("Promise"), &json!(1)),
        "{event:#}"
    );
    assert!(
        event["message"]
            .as_str()
            .is_some_and(|m| m.contains(&latest_name)),
        "{event:#}"
    );

    // A PromiseRelease installs its Promise from a URL with the Secret's header, and removes it.
    let server = support::promise_server::PromiseServer::start("Bearer k8s-t0ken");
    server.publish("/released.yaml", &plain_promise("released", "v1.0", &[]));
    env.apply(
        &json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "registry", "namespace": "default"},
            "stringData": {"authorizationHeader": "Bearer k8s-t0ken"}})
        .to_string(),
    );
    env.apply(
        &json!({"apiVersion": "platform.kratix.io/v1alpha1", "kind": "PromiseRelease",
            "metadata": {"name": "released"},
            "spec": {"sourceRef": {"type": "http", "url": server.url("/released.yaml"),
                "secretRef": {"name": "registry", "namespace": "default"}}}})
        .to_string(),
    );
    eventually("the released Promise", PATIENCE, || {
        let p = env.get_json("promise", "released", None)?;
        (p["metadata"]["labels"]["kratix.io/promise-release-name"] == "released").then_some(())
    });
    let release = eventually("the release installed", PATIENCE, || {
        let r = env.get_json("promiserelease", "released", None)?;
        (r["status"]["status"] == "Installed").then_some(r)
    });
    assert_eq!(release["spec"]["version"], "v1.0");
    env.kubectl(
        &["delete", "promiserelease", "released", "--wait=false"],
        "",
    );
    eventually("the release and its Promise gone", PATIENCE, || {
        let gone = env.get_json("promiserelease", "released", None).is_none()
            && env.get_json("promise", "released", None).is_none();
        gone.then_some(())
    });
    assert!(!controller.log().contains("k8s-t0ken"));
}

#[test]
fn required_promises_and_pausing_work_with_the_controller() {
    let Some(env) = TestEnv::start() else { return };
    let daemon = GitDaemon::start().expect("git daemon");
    let work = tempfile::tempdir().expect("work dir");
    let controller = Controller::start(&env, "parity", work.path(), &["--pipelines", "local"]);
    git_platform(&env, &daemon);

    // Required Promises: unavailable until the required one exists at its version.
    env.apply(&plain_promise("needs", "v1", &[("base", "v2")]));
    eventually("needs waiting for base", PATIENCE, || {
        let p = env.get_json("promise", "needs", None)?;
        let c = condition(&p, "RequirementsFulfilled")?;
        (c["status"] == "False" && p["status"]["status"] == "Unavailable").then_some(())
    });
    env.apply(&plain_promise("base", "v1", &[]));
    std::thread::sleep(Duration::from_secs(1));
    let p = env.get_json("promise", "needs", None).expect("needs");
    assert_eq!(
        p["status"]["requiredPromises"][0]["state"],
        "Requirement not installed at the specified version"
    );
    env.apply(&plain_promise("base", "v2", &[]));
    let needs = eventually("needs available", PATIENCE, || {
        let p = env.get_json("promise", "needs", None)?;
        (p["status"]["status"] == "Available").then_some(p)
    });
    // The API server keeps the status fields Kratix fills beside the conditions.
    assert!(
        needs["status"]["lastAvailableTime"].is_string(),
        "{needs:#}"
    );
    assert_eq!(
        needs["status"]["kratix"]["status"], "Available",
        "{needs:#}"
    );
    assert_eq!(
        needs["status"]["kratix"]["lastAvailableTime"],
        needs["status"]["lastAvailableTime"]
    );
    assert_eq!(needs["status"]["workflows"], 0, "{needs:#}");
    eventually("base says needs requires it", PATIENCE, || {
        let base = env.get_json("promise", "base", None)?;
        (base["status"]["requiredBy"]
            == json!([{"promise": {"name": "needs", "version": "v1"}, "requiredVersion": "v2"}]))
        .then_some(())
    });

    // Pausing: a paused request runs nothing new until the label goes.
    apply_promise(&env, &["a"]);
    env.apply(&support::things::request("r1", 1));
    settled(&env, &controller, "r1");
    let before = runs(&env, "r1").len();
    label_request(&env, "r1", "kratix.io/paused=true");
    env.apply(&support::things::request("r1", 2));
    eventually("r1 paused", PATIENCE, || {
        let r = env.get_json("things", "r1", Some("default"))?;
        let c = condition(&r, "Reconciled")?;
        (c["reason"] == "PausedReconciliation").then_some(())
    });
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(runs(&env, "r1").len(), before, "nothing runs while paused");
    label_request(&env, "r1", "kratix.io/paused-");
    settled(&env, &controller, "r1");
    assert!(runs(&env, "r1").len() > before);
}

/// `KRATIX_PROMISE_VERSION` of every container (adapters included) of the Jobs of `request`,
/// one set per Job.
fn job_versions(env: &TestEnv, request: &str) -> Vec<std::collections::BTreeSet<String>> {
    let selector = format!("kratix.io/resource-name={request}");
    env.list_json("jobs", &["-n", "default", "-l", &selector])
        .iter()
        .map(|job| {
            let spec = &job["spec"]["template"]["spec"];
            ["initContainers", "containers"]
                .iter()
                .flat_map(|list| spec[list].as_array().cloned().unwrap_or_default())
                .map(|c| {
                    c["env"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .find(|e| e["name"] == "KRATIX_PROMISE_VERSION")
                        .and_then(|e| e["value"].as_str())
                        .unwrap_or("<unset>")
                        .to_string()
                })
                .collect()
        })
        .collect()
}

/// `thing` at `version` with `version.sh` resource workflows. Without its promise workflow:
/// The test world's API server (v1.20.2, built from Debian's source package) reads an empty string in a custom
/// resource as null, so it refuses a promise workflow's PipelineRun, whose `resourceName` is
/// empty.
fn resource_promise_reporting_versions(version: &str) -> String {
    let mut promise: Value =
        serde_json::from_str(&support::things::promise_reporting_versions(version, None))
            .expect("promise JSON");
    if let Some(workflows) = promise["spec"]["workflows"].as_object_mut() {
        workflows.remove("promise");
    }
    promise.to_string()
}

/// Promise versions through Jobs: every container of a run's Job gets the version the run uses,
/// a request's health follows the version it runs at and reaches its ResourceBinding (whose
/// status the API server keeps), and deleting an older revision leaves the requests that name
/// it, saying so in an event.
#[test]
fn versions_reach_job_containers_health_and_bindings_and_older_revisions_go_alone() {
    let Some(env) = TestEnv::start() else { return };
    let daemon = GitDaemon::start().expect("git daemon");
    let work = tempfile::tempdir().expect("work dir");
    let _kubelet = env.kubelet();
    let controller = Controller::start(&env, "versions-jobs", work.path(), &[]);
    git_platform(&env, &daemon);
    env.apply(&resource_promise_reporting_versions("v1"));
    eventually("the Promise's CRD", PATIENCE, || {
        env.get_json("crd", "things.test.kratix.io", None)
    });
    for request in ["floats", "stays"] {
        env.apply(&support::things::request(request, 1));
        settled(&env, &controller, request);
    }
    let seen = |request: &str| {
        env.get_json("things", request, Some("default"))
            .map_or(Value::Null, |r| r["status"]["seenVersion"].clone())
    };
    assert_eq!(seen("floats"), "v1");
    let versions = job_versions(&env, "floats");
    assert!(
        !versions.is_empty() && versions.iter().all(|v| v.len() == 1 && v.contains("v1")),
        "{versions:?}"
    );

    // `stays` is pinned to v1 by hand.
    let stays = binding_applied(&env, "stays", "v1");
    let name = stays["metadata"]["name"].as_str().expect("binding name");
    env.kubectl(
        &[
            "patch",
            "resourcebinding",
            name,
            "-n",
            "default",
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"version":"v1"}}"#,
        ],
        "",
    );
    eventually("stays bound to v1", PATIENCE, || {
        let r = env.get_json("things", "stays", Some("default"))?;
        (r["status"]["resourceBindingVersion"] == "v1").then_some(())
    });

    // A record of v1 counts, and the binding carries the health.
    let record = |name: &str, state: &str, version: &str| {
        json!({
            "apiVersion": "platform.kratix.io/v1alpha1",
            "kind": "HealthRecord",
            "metadata": {"name": name, "namespace": "default"},
            "data": {"promiseRef": {"name": "thing"},
                     "resourceRef": {"name": "floats", "namespace": "default"},
                     "state": state, "lastRun": 1_700_000_000, "promiseVersion": version},
        })
        .to_string()
    };
    let health = |env: &TestEnv| {
        env.get_json("things", "floats", Some("default"))
            .map_or(Value::Null, |o| o["status"]["healthStatus"].clone())
    };
    let binding_health = |env: &TestEnv| {
        env.list_json("resourcebindings", &["-n", "default"])
            .into_iter()
            .find(|b| b["spec"]["resourceRef"]["name"] == "floats")
            .map_or(Value::Null, |b| b["status"]["healthStatus"].clone())
    };
    env.apply(&record("probe-v1", "healthy", "v1"));
    eventually("healthy at v1, on the binding too", PATIENCE, || {
        let h = health(&env);
        (h["state"] == "healthy"
            && h["promiseVersion"] == "v1"
            && binding_health(&env) == json!({"state": "healthy", "promiseVersion": "v1"}))
        .then_some(())
    });

    // v2: the floating request runs at v2, in Jobs whose containers all say v2, and its health
    // is unknown at v2 until a record of v2 arrives.
    env.apply(&resource_promise_reporting_versions("v2"));
    binding_applied(&env, "floats", "v2");
    eventually("floats ran at v2", PATIENCE, || {
        (seen("floats") == "v2").then_some(())
    });
    let versions = job_versions(&env, "floats");
    assert!(
        versions.iter().any(|v| v.len() == 1 && v.contains("v2")),
        "{versions:?}"
    );
    eventually("unknown at v2, on the binding too", PATIENCE, || {
        (health(&env) == json!({"state": "unknown", "promiseVersion": "v2"})
            && binding_health(&env) == json!({"state": "unknown", "promiseVersion": "v2"}))
        .then_some(())
    });
    env.apply(&record("probe-v2", "degraded", "v2"));
    eventually("degraded at v2, on the binding too", PATIENCE, || {
        (health(&env)["state"] == "degraded"
            && binding_health(&env) == json!({"state": "degraded", "promiseVersion": "v2"}))
        .then_some(())
    });
    assert_eq!(seen("stays"), "v1", "pinned: it ran with v1 only");

    // Deleting the v1 revision (nothing refuses it here) leaves `stays` and its binding, and
    // the Promise says which requests still name v1.
    let v1 = env
        .list_json("promiserevisions", &[])
        .iter()
        .find(|r| r["spec"]["version"] == "v1")
        .and_then(|r| r["metadata"]["name"].as_str().map(str::to_string))
        .expect("the v1 revision");
    env.kubectl(&["delete", "promiserevision", &v1], "");
    assert!(env.get_json("promiserevision", &v1, None).is_none());
    let event = eventually("an event naming stays", PATIENCE, || {
        let out = env.kubectl(&["get", "events", "-n", "default", "-o", "json"], "");
        let events: Value = serde_json::from_str(&out).ok()?;
        events["items"]
            .as_array()?
            .iter()
            .find(|e| {
                e["reason"] == "RevisionStillInUse" && e["involvedObject"]["kind"] == "Promise"
            })
            .cloned()
    });
    assert_eq!(event["type"], "Warning", "{event:#}");
    assert!(
        event["message"]
            .as_str()
            .is_some_and(|m| m.contains(&format!(
                "PromiseRevision {v1} (version v1) was deleted while 1 request still names that \
             version: default/stays"
            ))),
        "{event:#}"
    );
    assert!(env.get_json("things", "stays", Some("default")).is_some());
    assert_eq!(
        binding_applied(&env, "stays", "v1")["spec"]["version"],
        "v1"
    );
    eventually("stays says its revision is missing", PATIENCE, || {
        let r = env.get_json("things", "stays", Some("default"))?;
        r["status"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("with version v1"))
            .then_some(())
    });
}

// ---------------------------------------------------------------------------------------------
// Destination admission without a webhook
// ---------------------------------------------------------------------------------------------

fn destination_on(name: &str, path: Option<&str>) -> String {
    let mut spec = json!({"stateStoreRef": {"kind": "GitStateStore", "name": "default"}});
    if let Some(path) = path {
        spec["path"] = json!(path);
    }
    json!({"apiVersion": "platform.kratix.io/v1alpha1", "kind": "Destination",
           "metadata": {"name": name}, "spec": spec})
    .to_string()
}

/// The `Ready` condition of a Destination once it has the reason `reason`.
#[track_caller]
fn destination_ready_with(env: &TestEnv, name: &str, reason: &str) -> Value {
    eventually(&format!("{name} to be {reason}"), PATIENCE, || {
        env.get_json("destination", name, None)
            .and_then(|d| condition(&d, "Ready").cloned())
            .filter(|c| c["reason"] == reason)
    })
}

/// Where no webhook refuses them, a Destination without a path and one on a path another
/// Destination of its store holds are stored, and the controller reports them (`Ready=False`,
/// a Warning event) and never writes for them: no canary, no placement. Once the holder goes,
/// the second Destination is admitted and writes.
#[test]
fn destinations_without_a_path_or_on_anothers_are_reported_and_never_written() {
    let Some(env) = TestEnv::start() else { return };
    let daemon = GitDaemon::start().expect("git daemon");
    let repo = daemon.bare_repo("state.git").expect("bare repository");
    let work = tempfile::tempdir().expect("work dir");
    let _controller = Controller::start(&env, "solo", work.path(), &[]);
    env.apply(&format!(
        "apiVersion: platform.kratix.io/v1alpha1\nkind: GitStateStore\nmetadata: {{name: default}}\nspec: {{url: {}, branch: main}}\n",
        daemon.url("state.git")
    ));
    env.apply(&destination_on("first", Some("same")));
    destination_ready_with(&env, "first", "TestDocumentsWritten");
    env.apply(&destination_on("second", Some("same")));
    env.apply(&destination_on("pathless", None));
    let in_use = destination_ready_with(&env, "second", "PathInUse");
    assert_eq!(in_use["status"], "False");
    assert_eq!(
        in_use["message"],
        "destination path 'same' already exists for state store 'default' (Destination \"first\"); nothing is written for this Destination"
    );
    let required = destination_ready_with(&env, "pathless", "PathRequired");
    assert!(
        required["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("path field is required")),
        "{required}"
    );
    for (name, reason) in [("second", "PathInUse"), ("pathless", "PathRequired")] {
        eventually(&format!("{name}'s {reason} event"), PATIENCE, || {
            env.list_json("events", &["-A"]).into_iter().find(|e| {
                e["involvedObject"]["name"] == name
                    && e["reason"] == reason
                    && e["type"] == "Warning"
            })
        });
    }

    // A Promise's dependencies go to every Destination that may write: `first` only.
    env.apply(
        &json!({"apiVersion": "platform.kratix.io/v1alpha1", "kind": "Promise",
                "metadata": {"name": "deps"},
                "spec": {"dependencies": [{"apiVersion": "v1", "kind": "ConfigMap",
                                           "metadata": {"name": "dep", "namespace": "default"}}]}})
        .to_string(),
    );
    // Placements carry no Promise label: found by their spec.
    let of_deps = || -> Vec<Value> {
        env.list_json("workplacements", &["-A"])
            .into_iter()
            .filter(|p| p["spec"]["promiseName"] == "deps")
            .collect()
    };
    eventually("the dependencies written on first", PATIENCE, || {
        of_deps()
            .iter()
            .any(|p| condition(p, "WriteSucceeded").is_some_and(|c| c["status"] == "True"))
            .then_some(())
    });
    let targets: Vec<Value> = of_deps()
        .iter()
        .map(|p| p["spec"]["targetDestinationName"].clone())
        .collect();
    assert_eq!(targets, [json!("first")]);
    let log = git(
        &[
            "--git-dir",
            repo.to_str().expect("UTF-8"),
            "log",
            "--format=%B",
            "main",
        ],
        Path::new("/"),
    );
    assert!(log.contains("Kratix-Destination: first"), "{log}");
    for refused in ["second", "pathless"] {
        assert!(
            !log.contains(&format!("Kratix-Destination: {refused}")),
            "{refused} wrote: {log}"
        );
    }

    // The holder goes: `second` is admitted (its canaries are `first`'s, left in the store by
    // `cleanup: none`) and the dependencies are placed on it and written.
    env.kubectl(&["delete", "destination", "first", "--wait=true"], "");
    destination_ready_with(&env, "second", "TestDocumentsWritten");
    eventually("the dependencies written on second", PATIENCE, || {
        of_deps()
            .iter()
            .any(|p| {
                p["spec"]["targetDestinationName"] == "second"
                    && condition(p, "WriteSucceeded").is_some_and(|c| c["status"] == "True")
            })
            .then_some(())
    });
}
