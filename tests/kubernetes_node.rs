//! kratix-rs installed on a real node as the README says — the image `kratix-rs:0.1.0` built from
//! the release binary (scripts/test-image.sh), `kubectl apply -k deploy` unchanged, nothing
//! granted by hand — and driven through `kubectl` only: pipelines run as pods by a kubelet with
//! a Docker Engine, into Git stores served by `git daemon` on the node's address.
//!
//! The node is `KRATIX_TEST_NODE_DIR` (`scripts/testworld start DIR --node`); without it the tests
//! are skipped with a NOTE, and with `KRATIX_REQUIRE_REAL=1` they fail instead. Every scenario
//! has its own namespace, Promise (and request kind), state store and Destination, so they run
//! at once against the one controller; the failover scenario scales the controller, so it holds
//! the node exclusively and the others wait for it (see `support::node`).

mod support;

use std::fs::File;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use support::node::{Node, PATIENCE, PIPELINE_IMAGE, SYSTEM_NAMESPACE};
use support::things::{assert_never_overlapped, RunInfo};
use support::{condition, condition_is, eventually};
use testkit::GitDaemon;

/// The label that ties a scenario's Destination to its Promise.
const SCENARIO_LABEL: &str = "kratix-rs-test/scenario";

/// One scenario's world on the shared node.
struct Scenario {
    node: &'static Node,
    /// The Promise, namespace, state store and Destination are all named this.
    name: String,
    /// The request kind's group.
    group: String,
    repo: PathBuf,
    daemon: GitDaemon,
    _lock: File,
}

/// A pipeline of one container running `script` (a file of `fixtures/workflows/scripts`, in the
/// pipelines' image at `/scripts`) after `before` (shell, may be empty).
fn pipeline(name: &str, before: &str, script: &str) -> Value {
    let command = format!(
        "{before}{}sh /scripts/{script}",
        if before.is_empty() { "" } else { " && " }
    );
    json!({
        "apiVersion": "platform.kratix.io/v1alpha1",
        "kind": "Pipeline",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "main", "image": PIPELINE_IMAGE,
                                 "command": ["sh", "-c", command]}]},
    })
}

/// A pipeline rendering its ConfigMap with `step.sh`.
fn step(name: &str) -> Value {
    pipeline(name, "", "step.sh")
}

impl Scenario {
    /// Sets up scenario `name` (short: it names a Promise and the Jobs' names), or `None` when
    /// there is no node. `exclusive`: the scenario changes the installation.
    fn start(name: &str, exclusive: bool) -> Option<Self> {
        let node = support::node::node()?;
        let lock = node.lock(exclusive);
        let daemon = GitDaemon::start_on(node.node_ip).expect("git daemon on the node's address");
        let repo = daemon.bare_repo("state.git").expect("bare repository");
        let s = Scenario {
            node,
            name: name.to_string(),
            group: format!("{name}.node.kratix.test"),
            repo,
            daemon,
            _lock: lock,
        };
        let store = |repo: &str| {
            json!({
                "apiVersion": "platform.kratix.io/v1alpha1",
                "kind": "GitStateStore",
                "metadata": {"name": name},
                "spec": {"url": s.daemon.url(repo), "branch": "main"},
            })
            .to_string()
        };
        // What an interrupted earlier run left goes first, its files into a store of their own.
        s.daemon
            .bare_repo("leftovers.git")
            .expect("bare repository");
        node.apply(&store("leftovers.git"));
        s.remove();
        node.kubectl(&["create", "namespace", name]);
        node.apply(&store("state.git"));
        node.apply(
            &json!({
                "apiVersion": "platform.kratix.io/v1alpha1",
                "kind": "Destination",
                "metadata": {"name": name, "labels": {SCENARIO_LABEL: name}},
                "spec": {
                    "path": name,
                    "strictMatchLabels": true,
                    "stateStoreRef": {"kind": "GitStateStore", "name": name},
                },
            })
            .to_string(),
        );
        Some(s)
    }

    /// `kubectl get` name of the request kind.
    fn kind(&self) -> String {
        format!("things.{}", self.group)
    }

    /// Applies the Promise with these workflows, and waits until it is Available.
    fn promise(&self, workflows: Value) {
        let promise = self.promise_of(&self.name, ["Thing", "things", "thing"], workflows);
        self.node.apply(&promise);
        self.wait("the Promise available with its CRD", || {
            let p = self.node.get_json("promise", &self.name, None)?;
            let crd = self.node.get_json("crd", &self.kind(), None)?;
            let available = p["status"]["status"] == "Available";
            (available && condition_is(&crd, "Established", "True")).then_some(())
        });
    }

    /// Promise `name` placed on the scenario's Destination, its API the kind `names` (kind,
    /// plural, singular) of the scenario's group, with these workflows.
    fn promise_of(&self, name: &str, names: [&str; 3], workflows: Value) -> String {
        let [kind, plural, singular] = names;
        json!({
            "apiVersion": "platform.kratix.io/v1alpha1",
            "kind": "Promise",
            "metadata": {"name": name},
            "spec": {
                "destinationSelectors": [{"matchLabels": {SCENARIO_LABEL: self.name}}],
                "api": {
                    "apiVersion": "apiextensions.k8s.io/v1",
                    "kind": "CustomResourceDefinition",
                    "metadata": {"name": format!("{plural}.{}", self.group)},
                    "spec": {
                        "group": self.group,
                        "names": {"kind": kind, "plural": plural, "singular": singular},
                        "scope": "Namespaced",
                        "versions": [{
                            "name": "v1alpha1", "served": true, "storage": true,
                            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                "spec": {"type": "object", "properties": {
                                    "size": {"type": "integer"},
                                }},
                            }}},
                        }],
                    },
                },
                "workflows": workflows,
            },
        })
        .to_string()
    }

    /// The Promise with these resource configure pipelines (and delete pipelines).
    fn configure(&self, configure: &[Value], delete: &[Value]) {
        self.promise(json!({"resource": {"configure": configure, "delete": delete}}));
    }

    /// Applies request `name` at `size`.
    fn request(&self, name: &str, size: i64) {
        self.node.apply(
            &json!({
                "apiVersion": format!("{}/v1alpha1", self.group),
                "kind": "Thing",
                "metadata": {"name": name, "namespace": self.name},
                "spec": {"size": size},
            })
            .to_string(),
        );
    }

    fn get(&self, request: &str) -> Option<Value> {
        self.node.get_json(&self.kind(), request, Some(&self.name))
    }

    /// The request once reconciled for its current generation.
    fn reconciled(&self, request: &str) -> Option<Value> {
        let obj = self.get(request)?;
        let current = obj["status"]["observedGeneration"] == obj["metadata"]["generation"];
        (current && condition_is(&obj, "Reconciled", "True")).then_some(obj)
    }

    /// Polls `f` until `Some`; on timeout, fails showing the scenario's pods and the
    /// controller's log.
    #[track_caller]
    fn wait<T>(&self, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
        let deadline = std::time::Instant::now() + PATIENCE;
        loop {
            if let Some(v) = f() {
                return v;
            }
            if std::time::Instant::now() > deadline {
                let pods = self
                    .node
                    .try_kubectl(&["get", "jobs,pods", "-n", &self.name, "-o", "wide"], "");
                let objects = self.node.list_json(&self.kind(), &["-n", &self.name]);
                panic!(
                    "{}: timed out waiting for {what}\n{pods:?}\n{objects:#?}\ncontroller log:\n{}",
                    self.name,
                    self.node.controller_log()
                );
            }
            std::thread::sleep(std::time::Duration::from_millis(500));
        }
    }

    /// The request once reconciled.
    #[track_caller]
    fn settled(&self, request: &str) -> Value {
        self.wait(&format!("{request} reconciled"), || {
            self.reconciled(request)
        })
    }

    /// Labels selecting what was made for `request`.
    fn selector(&self, request: &str) -> String {
        format!(
            "kratix.io/promise-name={},kratix.io/resource-name={request}",
            self.name
        )
    }

    /// The request's PipelineRuns, by sequence.
    fn runs(&self, request: &str) -> Vec<RunInfo> {
        let mut runs: Vec<RunInfo> = self
            .node
            .list_json("pipelineruns", &["-A", "-l", &self.selector(request)])
            .iter()
            .map(RunInfo::from_json)
            .collect();
        runs.sort_by_key(|r| r.sequence);
        runs
    }

    fn last_sequence(&self, request: &str) -> i64 {
        self.runs(request).last().map_or(0, |r| r.sequence)
    }

    /// The request's `pipeline` ran as a pod on the node: the Job controller created a pod of its
    /// Job, and the controller recorded `outcome` (what it read from that pod) on the request.
    /// The kubelet's own events (`Started`, ...) are not asked for: the kubelet drops events past
    /// a few per second, which several scenarios at once exceed.
    #[track_caller]
    fn pod_ran(&self, request: &str, pipeline: &str, outcome: &str) {
        let prefix = format!("Created pod: kratix-{}-{request}-{pipeline}-", self.name);
        self.wait(
            &format!("{pipeline}'s pod and outcome in the events"),
            || {
                let events = self.node.list_json("events", &["-n", &self.name]);
                let created = events.iter().any(|e| {
                    e["reason"] == "SuccessfulCreate"
                        && e["message"]
                            .as_str()
                            .is_some_and(|m| m.starts_with(&prefix))
                });
                let recorded = events.iter().any(|e| {
                    e["involvedObject"]["name"] == request
                        && e["message"]
                            .as_str()
                            .is_some_and(|m| m.starts_with(outcome))
                });
                (created && recorded).then_some(())
            },
        );
    }

    /// The configure runs after sequence `after`, once they are exactly `expected`, all
    /// succeeded, and the request is reconciled.
    #[track_caller]
    fn rerun(&self, request: &str, after: i64, expected: &[&str]) -> Vec<RunInfo> {
        self.wait(&format!("{request} run again as {expected:?}"), || {
            let runs: Vec<RunInfo> = self
                .runs(request)
                .into_iter()
                .filter(|r| r.sequence > after && r.action == "configure")
                .collect();
            let names: Vec<&str> = runs.iter().map(|r| r.pipeline.as_str()).collect();
            let done = names == expected
                && runs.iter().all(|r| r.phase == "Succeeded")
                && self.reconciled(request).is_some();
            done.then_some(runs)
        })
    }

    /// The request's pipeline pods as the API server reports them, by start.
    fn pods(&self, request: &str) -> Vec<PodRun> {
        let mut pods: Vec<PodRun> = self
            .node
            .list_json("pods", &["-n", &self.name, "-l", &self.selector(request)])
            .iter()
            .map(PodRun::from_json)
            .collect();
        pods.sort_by_key(|p| (p.start, p.name.clone()));
        pods
    }

    /// Files of the store under the request's pipeline `pipeline` folder.
    fn files(&self, request: &str, pipeline: &str) -> Vec<String> {
        let prefix = self.prefix(request, pipeline);
        self.git(&["ls-tree", "-r", "--name-only", "main"])
            .lines()
            .filter(|l| l.starts_with(&prefix))
            .map(str::to_string)
            .collect()
    }

    fn prefix(&self, request: &str, pipeline: &str) -> String {
        format!("{0}/resources/{0}/{0}/{request}/{pipeline}/", self.name)
    }

    /// Subjects of the commits that touched the pipeline's folder.
    fn commits(&self, request: &str, pipeline: &str) -> Vec<String> {
        let prefix = self.prefix(request, pipeline);
        self.git(&["log", "--format=%s", "main", "--", &prefix])
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// The content of the one file the pipeline wrote.
    fn file(&self, request: &str, pipeline: &str) -> Option<String> {
        let path = self.files(request, pipeline).into_iter().next()?;
        Some(self.git(&["show", &format!("main:{path}")]))
    }

    fn git(&self, args: &[&str]) -> String {
        let mut all = vec!["--git-dir", self.repo.to_str().expect("UTF-8 path")];
        all.extend_from_slice(args);
        // An empty repository has no `main` yet: nothing written.
        testkit::hermetic_git_command(Path::new("/"))
            .args(&all)
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    }

    /// Deletes the scenario's Promise (its requests, CRD and files with it), Destination, store
    /// and namespace, waiting for the Promise to go while its store is still served.
    fn remove(&self) {
        let node = self.node;
        if node.get_json("promise", &self.name, None).is_some() {
            let _ = node.try_kubectl(&["delete", "promise", &self.name, "--wait=false"], "");
            let deadline = std::time::Instant::now() + PATIENCE;
            while node.get_json("promise", &self.name, None).is_some()
                && std::time::Instant::now() < deadline
            {
                std::thread::sleep(std::time::Duration::from_millis(500));
            }
        }
        for kind in ["destination", "gitstatestore"] {
            let _ = node.try_kubectl(&["delete", kind, &self.name, "--ignore-not-found"], "");
        }
        let _ = node.try_kubectl(
            &["delete", "namespace", &self.name, "--ignore-not-found"],
            "",
        );
    }
}

impl Drop for Scenario {
    fn drop(&mut self) {
        self.remove();
    }
}

/// A pipeline pod's times as the API server reports them.
#[derive(Debug, Clone)]
struct PodRun {
    name: String,
    pipeline: String,
    phase: String,
    start: Option<jiff::Timestamp>,
    /// When its last container finished; `None` while one has not.
    finish: Option<jiff::Timestamp>,
}

impl PodRun {
    fn from_json(pod: &Value) -> Self {
        let time = |v: &Value| {
            v.as_str()
                .map(|t| t.parse::<jiff::Timestamp>().expect("RFC 3339"))
        };
        let statuses: Vec<&Value> = ["initContainerStatuses", "containerStatuses"]
            .iter()
            .flat_map(|k| pod["status"][k].as_array().into_iter().flatten())
            .collect();
        let finished: Vec<Option<jiff::Timestamp>> = statuses
            .iter()
            .map(|c| time(&c["state"]["terminated"]["finishedAt"]))
            .collect();
        let finish = if !finished.is_empty() && finished.iter().all(Option::is_some) {
            finished.into_iter().flatten().max()
        } else {
            None
        };
        PodRun {
            name: pod["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            pipeline: pod["metadata"]["labels"]["kratix.io/pipeline-name"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            phase: pod["status"]["phase"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            start: time(&pod["status"]["startTime"]),
            finish,
        }
    }
}

/// Pods of one request never ran at the same time: each finished before the next started (the
/// API server's times have whole seconds, so a finish and a start may be equal).
#[track_caller]
fn assert_pods_never_overlapped(pods: &[PodRun]) {
    for pod in pods {
        assert!(
            pod.finish.is_some(),
            "{} has not finished: {pods:#?}",
            pod.name
        );
    }
    for pair in pods.windows(2) {
        assert!(
            pair[0].finish <= pair[1].start,
            "{} started before {} finished: {pods:#?}",
            pair[1].name,
            pair[0].name
        );
    }
}

#[test]
#[ignore = "runs kratix-rs on a real node (KRATIX_TEST_NODE_DIR); run with --ignored"]
fn three_pipelines_run_as_pods_in_order_with_one_commit_each() {
    let Some(s) = Scenario::start("nthree", false) else {
        return;
    };
    s.configure(&[step("a"), step("b"), step("c")], &[]);
    s.request("r1", 3);
    let obj = s.settled("r1");
    for type_ in ["ConfigureWorkflowCompleted", "WorksSucceeded"] {
        assert!(condition_is(&obj, type_, "True"), "{type_}: {obj:#}");
    }
    let runs = s.runs("r1");
    let names: Vec<&str> = runs.iter().map(|r| r.pipeline.as_str()).collect();
    assert_eq!(names, ["a", "b", "c"], "{runs:#?}");
    assert!(runs.iter().all(|r| r.phase == "Succeeded"), "{runs:#?}");
    assert_never_overlapped(&runs);

    // Real pods, one per pipeline, in order, each done before the next began.
    let pods = s.pods("r1");
    let order: Vec<&str> = pods.iter().map(|p| p.pipeline.as_str()).collect();
    assert_eq!(order, ["a", "b", "c"], "{pods:#?}");
    assert!(pods.iter().all(|p| p.phase == "Succeeded"), "{pods:#?}");
    assert_pods_never_overlapped(&pods);

    // One commit per pipeline into the store on the node's address.
    for p in ["a", "b", "c"] {
        let commits = s.wait("the pipeline's commit", || {
            let c = s.commits("r1", p);
            (!c.is_empty()).then_some(c)
        });
        assert_eq!(commits.len(), 1, "one commit for pipeline {p}: {commits:?}");
        let file = s.file("r1", p).expect("the pipeline's file");
        assert!(file.contains("size: \"3\""), "{file}");
    }

    // The pipeline container's own output, through the API server from the kubelet.
    let a = &pods[0].name;
    let logs = s.node.kubectl(&["logs", "-n", &s.name, a, "-c", "main"]);
    assert_eq!(logs.trim(), "pipeline a ran for r1 (size 3)", "{logs}");

    // Deleting the Promise deletes its request (the controller holds `delete` on this kind
    // alone, granted with the CRD), its files and CRD, and then that grant.
    let grant = format!("kratix-rs-requests-{}", s.kind());
    let role = s
        .node
        .get_json("clusterrole", &grant, None)
        .expect("the grant's ClusterRole");
    assert_eq!(role["rules"][0]["verbs"], json!(["delete"]), "{role:#}");
    assert!(s
        .node
        .get_json("clusterrolebinding", &grant, None)
        .is_some());
    s.node
        .kubectl(&["delete", "promise", &s.name, "--wait=false"]);
    s.wait("the Promise, its request, CRD and grant gone", || {
        let gone = s.node.get_json("promise", &s.name, None).is_none()
            && s.node.get_json("crd", &s.kind(), None).is_none()
            && s.node.get_json("clusterrole", &grant, None).is_none()
            && s.node
                .get_json("clusterrolebinding", &grant, None)
                .is_none();
        gone.then_some(())
    });
    for p in ["a", "b", "c"] {
        assert!(s.files("r1", p).is_empty(), "{p}'s files left the store");
    }
}

#[test]
#[ignore = "runs kratix-rs on a real node (KRATIX_TEST_NODE_DIR); run with --ignored"]
fn metrics_are_served_through_the_service() {
    let Some(s) = Scenario::start("nmetrics", false) else {
        return;
    };
    s.configure(&[step("a")], &[]);
    s.request("r1", 1);
    s.settled("r1");
    // Through the API server's proxy to the Service's endpoint: on the test world's node a pod
    // reaches the host's address but not another pod, so no pod can be the client.
    let metrics = s.node.kubectl(&[
        "get",
        "--raw",
        &format!("/api/v1/namespaces/{SYSTEM_NAMESPACE}/services/kratix-rs-metrics:metrics/proxy/metrics"),
    ]);
    assert!(metrics.lines().any(|l| l == "kratix_leader 1"), "{metrics}");
    assert!(
        metrics.contains("# TYPE kratix_reconcile_total counter"),
        "{metrics}"
    );
    let runs = metrics
        .lines()
        .find_map(|l| {
            l.strip_prefix(
                "kratix_pipeline_runs_total{workflow_type=\"resource\",action=\"configure\",result=\"succeeded\"} ",
            )
        })
        .and_then(|n| n.parse::<u64>().ok())
        .expect("pipeline runs counted");
    assert!(runs >= 1, "{metrics}");
}

#[test]
#[ignore = "runs kratix-rs on a real node (KRATIX_TEST_NODE_DIR); run with --ignored"]
fn an_update_while_a_pipeline_runs_never_overlaps_and_the_latest_spec_wins() {
    let Some(s) = Scenario::start("nupdate", false) else {
        return;
    };
    // `a` takes a while, so that the updates come while it runs.
    s.configure(
        &[pipeline("a", "sleep 4", "step.sh"), step("b"), step("c")],
        &[],
    );
    s.request("r1", 1);
    s.wait("a run of r1 in progress", || {
        s.runs("r1")
            .iter()
            .any(|r| r.phase == "Running")
            .then_some(())
    });
    s.request("r1", 2);
    s.wait("another run of r1 in progress", || {
        let runs = s.runs("r1");
        (runs.len() >= 2 && runs.iter().any(|r| r.phase == "Running")).then_some(())
    });
    s.request("r1", 3);
    s.wait("r1 reconciled at size 3", || {
        let obj = s.reconciled("r1")?;
        let files: Vec<String> = ["a", "b", "c"]
            .iter()
            .filter_map(|p| s.file("r1", p))
            .collect();
        let all = files.len() == 3 && files.iter().all(|f| f.contains("size: \"3\""));
        (all && obj["spec"]["size"] == 3).then_some(())
    });
    let runs = s.runs("r1");
    assert_never_overlapped(&runs);
    let last: Vec<&str> = runs
        .iter()
        .rev()
        .take(3)
        .map(|r| r.pipeline.as_str())
        .collect();
    assert_eq!(
        last,
        ["c", "b", "a"],
        "the newest spec ran every pipeline: {runs:#?}"
    );
    // The pods, as the kubelet ran them, never overlapped either.
    let pods = s.pods("r1");
    assert!(
        pods.len() >= 4,
        "more than one pass of the workflow: {pods:#?}"
    );
    assert_pods_never_overlapped(&pods);
}

#[test]
#[ignore = "runs kratix-rs on a real node (KRATIX_TEST_NODE_DIR); run with --ignored"]
fn dropped_and_renamed_pipelines_lose_their_files() {
    let Some(s) = Scenario::start("nrename", false) else {
        return;
    };
    s.configure(&[step("a"), step("b"), step("c")], &[]);
    s.request("r1", 1);
    s.settled("r1");
    for p in ["a", "b", "c"] {
        s.wait("the pipeline's files", || {
            (!s.files("r1", p).is_empty()).then_some(())
        });
    }
    // N → N−1 and a rename: b becomes x, c goes.
    let before = s.last_sequence("r1");
    s.configure(&[step("a"), step("x")], &[]);
    s.rerun("r1", before, &["a", "x"]);
    s.wait("b's and c's files gone, x's written", || {
        let done = s.files("r1", "b").is_empty()
            && s.files("r1", "c").is_empty()
            && !s.files("r1", "x").is_empty()
            && !s.files("r1", "a").is_empty();
        done.then_some(())
    });
}

#[test]
#[ignore = "runs kratix-rs on a real node (KRATIX_TEST_NODE_DIR); run with --ignored"]
fn a_failing_pipeline_is_named_in_the_request_status() {
    let Some(s) = Scenario::start("nfail", false) else {
        return;
    };
    let mut broken = pipeline("broken", "", "fail.sh 3");
    // Kratix's pods restart a failed container (`OnFailure`) until the Job's backoff limit (six
    // by default, minutes of back-off): fail at the first.
    broken["spec"]["jobOptions"] = json!({"backoffLimit": 0});
    s.configure(&[step("a"), broken, step("c")], &[]);
    s.request("r1", 1);
    let obj = s.wait("r1's workflow failed", || {
        let obj = s.get("r1")?;
        let c = condition(&obj, "ConfigureWorkflowCompleted")?;
        let failed = c["status"] == "False" && c["reason"] == "ConfigureWorkflowFailed";
        failed.then_some(obj)
    });
    let message = condition(&obj, "ConfigureWorkflowCompleted")
        .and_then(|c| c["message"].as_str())
        .unwrap_or_default()
        .to_string();
    assert!(message.contains("broken"), "{message}");
    assert!(message.contains("code 3"), "{message}");
    assert!(!condition_is(&obj, "Reconciled", "True"), "{obj:#}");
    let failed = obj["status"]["pipelines"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["name"] == "broken")
        .unwrap_or_else(|| panic!("broken in status.pipelines: {obj:#}"));
    assert_eq!(failed["phase"], "Failed", "{obj:#}");
    let runs = s.runs("r1");
    assert!(
        !runs.iter().any(|r| r.pipeline == "c"),
        "c never runs after the failure: {runs:#?}"
    );
    // Its Job failed; its pod ran the container that exited with code 3.
    let selector = format!("{},kratix.io/pipeline-name=broken", s.selector("r1"));
    let jobs = s.node.list_json("jobs", &["-n", &s.name, "-l", &selector]);
    assert!(
        jobs.iter().any(|j| condition_is(j, "Failed", "True")),
        "{jobs:#?}"
    );
    // Its pod ran on the node: the Job controller made it, and the container's exit code that
    // the controller read from the pod is in the pipeline's failure.
    s.pod_ran(
        "r1",
        "broken",
        "configure pipeline broken failed: container main exited with code 3",
    );
}

#[test]
#[ignore = "runs kratix-rs on a real node (KRATIX_TEST_NODE_DIR); run with --ignored"]
fn manual_reconciliation_then_delete_runs_the_delete_workflow_and_sweeps_everything() {
    let Some(s) = Scenario::start("ndelete", false) else {
        return;
    };
    s.configure(
        &[step("a"), step("b")],
        &[pipeline("bye", "sleep 1", "step.sh")],
    );
    s.request("r1", 1);
    s.settled("r1");

    // The manual reconciliation label runs every pipeline again and is cleared.
    let before = s.last_sequence("r1");
    s.node.kubectl(&[
        "label",
        &s.kind(),
        "r1",
        "-n",
        &s.name,
        "kratix.io/manual-reconciliation=true",
    ]);
    let again = s.rerun("r1", before, &["a", "b"]);
    assert_never_overlapped(&again);
    s.wait("the label cleared", || {
        let obj = s.get("r1")?;
        obj["metadata"]["labels"]
            .get("kratix.io/manual-reconciliation")
            .is_none()
            .then_some(())
    });

    // Deleting the request runs its delete workflow as a pod, then leaves nothing labelled for it.
    let selector = s.selector("r1");
    let leftovers = || -> Vec<String> {
        ["jobs", "pods", "configmaps", "works"]
            .iter()
            .flat_map(|kind| {
                s.node
                    .list_json(kind, &["-A", "-l", &selector])
                    .into_iter()
                    .map(move |o| format!("{kind} {}", o["metadata"]["name"]))
            })
            .chain(placements(&s, "r1"))
            .collect()
    };
    let before = leftovers();
    for kind in ["jobs ", "pods ", "works ", "workplacements "] {
        assert!(
            before.iter().any(|o| o.starts_with(kind)),
            "{kind}labelled for r1 exist before the delete: {before:?}"
        );
    }
    s.node
        .kubectl(&["delete", &s.kind(), "r1", "-n", &s.name, "--wait=false"]);
    s.wait("r1 gone", || s.get("r1").is_none().then_some(()));
    // Events outlive the swept pod: the delete pipeline ran as a pod and succeeded.
    s.pod_ran("r1", "bye", "delete pipeline bye succeeded");
    s.wait("nothing labelled for r1", || {
        let left = leftovers();
        left.is_empty().then_some(())
    });
    for p in ["a", "b"] {
        assert!(s.files("r1", p).is_empty(), "{p}'s files left the store");
    }
}

/// WorkPlacements of a request's Works (they carry their Work's name, not the request's labels).
fn placements(s: &Scenario, request: &str) -> Vec<String> {
    let prefix = format!("{}-{request}-", s.name);
    s.node
        .list_json("workplacements", &["-A"])
        .iter()
        .filter_map(|p| p["metadata"]["name"].as_str().map(str::to_string))
        .filter(|n| n.starts_with(&prefix))
        .map(|n| format!("workplacements {n}"))
        .collect()
}

/// The holder of the controller's Lease.
fn lease_holder(node: &Node) -> Option<String> {
    let lease = node.get_json("lease", "kratix-rs-controller", Some(SYSTEM_NAMESPACE))?;
    lease["spec"]["holderIdentity"]
        .as_str()
        .filter(|h| !h.is_empty())
        .map(str::to_string)
}

/// Names of the controller's running pods that are ready.
fn ready_controllers(node: &Node) -> Vec<String> {
    node.controller_pods()
        .iter()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .filter(|p| condition_is(p, "Ready", "True"))
        .filter_map(|p| p["metadata"]["name"].as_str().map(str::to_string))
        .collect()
}

/// Scales the controller and waits until exactly `replicas` pods are ready.
fn scale(node: &Node, replicas: usize) {
    node.kubectl(&[
        "scale",
        "deployment",
        support::node::DEPLOYMENT,
        "-n",
        SYSTEM_NAMESPACE,
        &format!("--replicas={replicas}"),
    ]);
    node.wait_for_rollout();
    eventually(
        &format!("{replicas} controller pods ready"),
        PATIENCE,
        || {
            let all = node.controller_pods();
            (all.len() == replicas && ready_controllers(node).len() == replicas).then_some(())
        },
    );
}

/// Holds the node exclusively: scaling the controller and deleting its leader would disturb the
/// other scenarios' workflows.
#[test]
#[ignore = "runs kratix-rs on a real node (KRATIX_TEST_NODE_DIR); run with --ignored"]
fn two_replicas_the_leaders_pod_deleted_the_next_request_completes() {
    let Some(s) = Scenario::start("nleader", true) else {
        return;
    };
    let node = s.node;
    scale(node, 2);
    let leader = eventually("a leader", PATIENCE, || lease_holder(node));
    let pods = ready_controllers(node);
    assert!(
        pods.contains(&leader),
        "the leader {leader} is one of {pods:?}"
    );
    s.configure(&[step("a")], &[]);
    s.request("r1", 1);
    s.settled("r1");

    node.kubectl(&[
        "delete",
        "pod",
        &leader,
        "-n",
        SYSTEM_NAMESPACE,
        "--wait=false",
    ]);
    let next = s.wait("another replica leading", || {
        lease_holder(node).filter(|h| *h != leader)
    });
    // The leader hands its lease back as it stops, so the standby or the pod replacing the
    // deleted one may win it: either is a live replica other than the deleted leader.
    let live = s.wait("the new leader ready", || {
        let ready = ready_controllers(node);
        ready.contains(&next).then_some(ready)
    });
    assert!(
        !live.contains(&leader),
        "the deleted leader {leader} is gone from the ready pods {live:?} (before: {pods:?})"
    );
    s.request("r2", 2);
    s.settled("r2");
    let commits = s.wait("r2's commit", || {
        let c = s.commits("r2", "a");
        (!c.is_empty()).then_some(c)
    });
    assert_eq!(commits.len(), 1, "{commits:?}");

    scale(node, 1);
}

/// The marketplace's pipeline image name; built on the node from our stand-in.
const MARKETPLACE_IMAGE: &str =
    "ghcr.io/syntasso/kratix-marketplace/redis-configure-pipeline:v0.1.0";

#[test]
#[ignore = "runs kratix-rs on a real node (KRATIX_TEST_NODE_DIR); run with --ignored"]
fn the_marketplace_redis_promise_runs_its_promise_and_resource_workflows_as_pods() {
    // Named as the marketplace's Promise, so that the scenario's teardown removes it.
    let Some(s) = Scenario::start("redis", false) else {
        return;
    };
    let fixture = support::fixtures().join("marketplace/redis");
    s.node
        .docker(&[
            "build",
            "-q",
            "-t",
            MARKETPLACE_IMAGE,
            fixture.join("pipeline").to_str().expect("UTF-8 path"),
        ])
        .expect("the stand-in pipeline image builds on the node");
    // The Promise selects Destinations labelled `environment: dev`.
    s.node.kubectl(&[
        "label",
        "destination",
        "redis",
        "environment=dev",
        "--overwrite",
    ]);
    let apply_file = |file: &str| {
        let path = fixture.join(file);
        s.node
            .kubectl(&["apply", "-f", path.to_str().expect("UTF-8 path")]);
    };
    // The marketplace's files as they are, through kubectl.
    apply_file("promise.yaml");
    s.wait(
        "the Promise available after its promise configure workflow",
        || {
            let p = s.node.get_json("promise", "redis", None)?;
            (p["status"]["status"] == "Available").then_some(())
        },
    );
    apply_file("resource-request.yaml");
    let request = s.wait("the request reconciled", || {
        let obj = s
            .node
            .get_json("redis.marketplace.kratix.io", "example", Some("default"))?;
        let current = obj["status"]["observedGeneration"] == obj["metadata"]["generation"];
        (current && condition_is(&obj, "Reconciled", "True")).then_some(obj)
    });
    assert!(
        condition_is(&request, "WorksSucceeded", "True"),
        "{request:#}"
    );
    // The promise workflow's dependencies and the request's instance, each in its commit.
    let files = s.git(&["ls-tree", "-r", "--name-only", "main"]);
    for (prefix, file) in [
        ("redis/dependencies/redis/promise-configure/", ""),
        (
            "redis/resources/default/redis/example/instance-configure/",
            "redis-instance.yaml",
        ),
    ] {
        let under: Vec<&str> = files.lines().filter(|f| f.starts_with(prefix)).collect();
        assert!(
            under.iter().any(|f| f.ends_with(file)),
            "{prefix}{file} in\n{files}"
        );
        let commits = s.git(&["log", "--format=%H", "main", "--", prefix]);
        assert_eq!(commits.lines().count(), 1, "one commit for {prefix}");
    }
    // Both workflows ran as Jobs labelled for the Promise.
    let jobs = s
        .node
        .list_json("jobs", &["-A", "-l", "kratix.io/promise-name=redis"]);
    for workflow_type in ["promise", "resource"] {
        assert!(
            jobs.iter().any(|j| {
                j["metadata"]["labels"]["kratix.io/workflow-type"] == workflow_type
                    && condition_is(j, "Complete", "True")
            }),
            "a completed {workflow_type} Job: {jobs:#?}"
        );
    }
}

/// How many of the pods in `namespace` have a container running now (the pipeline's own run as
/// init containers, so the pod's phase says `Pending` meanwhile).
fn pods_running(node: &Node, namespace: &str) -> usize {
    node.list_json(
        "pods",
        &["-n", namespace, "-l", "app.kubernetes.io/managed-by=Kratix"],
    )
    .iter()
    .filter(|pod| {
        ["initContainerStatuses", "containerStatuses"]
            .iter()
            .flat_map(|k| pod["status"][k].as_array().into_iter().flatten())
            .any(|c| c["state"]["running"].is_object())
    })
    .count()
}

#[test]
#[ignore = "runs kratix-rs on a real node (KRATIX_TEST_NODE_DIR); run with --ignored"]
fn more_than_eight_pipeline_pods_of_different_requests_run_at_once() {
    let Some(s) = Scenario::start("nwide", false) else {
        return;
    };
    const REQUESTS: usize = 12;
    // Long enough for every pod to start while the first still runs; the most seen at once is
    // what the controller let run, the node's scheduler being the only other bound.
    s.configure(&[pipeline("hold", "sleep 45", "step.sh")], &[]);
    for i in 0..REQUESTS {
        s.request(&format!("r{i}"), 1);
    }
    let mut most = 0;
    s.wait("every request reconciled", || {
        most = most.max(pods_running(s.node, &s.name));
        (0..REQUESTS)
            .all(|i| s.reconciled(&format!("r{i}")).is_some())
            .then_some(())
    });
    assert!(
        most > 8,
        "at most {most} pipeline pods ran at once: the controller still caps them"
    );
    for i in 0..REQUESTS {
        let runs = s.runs(&format!("r{i}"));
        assert_eq!(runs.len(), 1, "r{i}: {runs:#?}");
        assert_eq!(runs[0].phase, "Succeeded", "r{i}: {runs:#?}");
    }
}

/// Applies the CRDs and the Deployment of this version again over the running install, as an
/// upgrade to the same version does (with `replicas` kept): `kubectl apply` of deploy/'s files,
/// or the chart's upgrade step when the node runs the Helm install.
fn reapply_install(node: &Node, replicas: usize) {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    match support::node::Install::from_env() {
        support::node::Install::Kustomize => {
            let crds = root.join("deploy/crds/platform.kratix.io_crds.yaml");
            node.kubectl(&["apply", "-f", crds.to_str().expect("UTF-8 path")]);
            let text = std::fs::read_to_string(root.join("deploy/deployment.yaml"))
                .expect("deploy/deployment.yaml");
            let mut deployment: Value = serde_yaml::from_str(&text).expect("the Deployment");
            deployment["spec"]["replicas"] = json!(replicas);
            node.apply(&deployment.to_string());
        }
        support::node::Install::Helm => node.helm_upgrade(&[&format!("replicas={replicas}")]),
    }
}

/// The install under load: two replicas, requests in the middle of their workflows, then a
/// `kubectl rollout restart` of the controller and the CRDs and Deployment applied again over
/// it, with more requests applied meanwhile. Every request settles, with each pipeline's last
/// run succeeded, and no request ever had two runs or two pods at once. Holds the node
/// exclusively: it restarts the controller.
#[test]
#[ignore = "runs kratix-rs on a real node (KRATIX_TEST_NODE_DIR); run with --ignored"]
fn restarts_and_reapplied_installs_under_load_lose_nothing() {
    let Some(s) = Scenario::start("nroll", true) else {
        return;
    };
    let node = s.node;
    scale(node, 2);
    s.configure(
        &[
            pipeline("a", "sleep 4", "step.sh"),
            pipeline("b", "sleep 4", "step.sh"),
        ],
        &[],
    );
    let requests: Vec<String> = (0..12).map(|i| format!("r{i}")).collect();
    for r in &requests[..8] {
        s.request(r, 1);
    }
    s.wait("runs in the middle of their workflows", || {
        let running = requests[..8]
            .iter()
            .flat_map(|r| s.runs(r))
            .any(|run| run.phase == "Running");
        running.then_some(())
    });
    node.kubectl(&[
        "rollout",
        "restart",
        "deployment",
        support::node::DEPLOYMENT,
        "-n",
        SYSTEM_NAMESPACE,
    ]);
    for r in &requests[8..10] {
        s.request(r, 1);
    }
    node.wait_for_rollout();
    reapply_install(node, 2);
    for r in &requests[10..] {
        s.request(r, 1);
    }
    node.wait_for_rollout();

    for r in &requests {
        s.settled(r);
        let runs = s.runs(r);
        for pipeline in ["a", "b"] {
            let last = runs
                .iter()
                .rfind(|run| run.pipeline == pipeline)
                .unwrap_or_else(|| panic!("{r}: no run of {pipeline}: {runs:#?}"));
            assert_eq!(last.phase, "Succeeded", "{r}: {runs:#?}");
        }
        assert_never_overlapped(&runs);
        assert_pods_never_overlapped(&s.pods(r));
        for pipeline in ["a", "b"] {
            let file = s.wait(&format!("{r}'s {pipeline} file in the store"), || {
                s.file(r, pipeline)
            });
            assert!(file.contains("size: \"1\""), "{r} {pipeline}: {file}");
        }
    }
    scale(node, 1);
}

/// The platform-sync rights of `deploy/components/platform-sync`: installed as a user would,
/// `kubectl apply -k` of a kustomization of `deploy/` with that component (or the chart with
/// `platformSync.enabled=true`), or taken away again (`false`).
fn platform_sync_rights(node: &Node, granted: bool) {
    if support::node::Install::from_env() == support::node::Install::Helm {
        let values: &[&str] = if granted {
            &["platformSync.enabled=true"]
        } else {
            &[]
        };
        node.helm_upgrade(values);
        return;
    }
    if !granted {
        for kind in ["clusterrolebinding", "clusterrole"] {
            node.kubectl(&[
                "delete",
                kind,
                "kratix-rs-platform-sync",
                "--ignore-not-found",
            ]);
        }
        return;
    }
    // Kustomize takes bases by relative path only: a folder inside the repository's target/.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("a folder");
    let up = "../".repeat(
        dir.path()
            .strip_prefix(root)
            .expect("CARGO_TARGET_TMPDIR is inside the repository")
            .components()
            .count(),
    );
    std::fs::write(
        dir.path().join("kustomization.yaml"),
        format!(
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n\
             resources: [{up}deploy]\ncomponents: [{up}deploy/components/platform-sync]\n"
        ),
    )
    .expect("write the kustomization");
    node.kubectl(&["apply", "-k", dir.path().to_str().expect("UTF-8 path")]);
    node.wait_for_rollout();
}

/// The sub-Promise `psync-child` (kind `Child` of the scenario's group), placed on the
/// scenario's Destination: its pipeline renders a ConfigMap with `step.sh`.
fn child_promise(s: &Scenario) -> String {
    s.promise_of(
        "psync-child",
        ["Child", "children", "child"],
        json!({"resource": {"configure": [step("render")]}}),
    )
}

fn remove_child_promise(node: &Node) {
    let _ = node.try_kubectl(
        &[
            "delete",
            "promise",
            "psync-child",
            "--ignore-not-found",
            "--timeout=180s",
        ],
        "",
    );
}

#[test]
#[ignore = "runs kratix-rs on a real node (KRATIX_TEST_NODE_DIR); run with --ignored"]
fn a_platform_destination_is_applied_into_the_cluster_with_the_platform_sync_component() {
    // It grants and takes away the controller's rights: the node is held exclusively.
    let Some(s) = Scenario::start("psync", true) else {
        return;
    };
    remove_child_promise(s.node);
    platform_sync_rights(s.node, false);
    s.node.apply(&child_promise(&s));
    s.wait("the sub-Promise available", || {
        let p = s.node.get_json("promise", "psync-child", None)?;
        (p["status"]["status"] == "Available").then_some(())
    });
    s.node.kubectl(&[
        "annotate",
        "destination",
        &s.name,
        "kratix-rs.io/apply-to-platform=true",
        "--overwrite",
    ]);
    // The parent's pipeline writes a Child of the request's name for the platform Destination
    // (`true` after the here-document: `pipeline` appends `&& sh …` to the last line).
    let write_child = format!(
        "cat > /kratix/output/child.yaml <<YAML\napiVersion: {group}/v1alpha1\nkind: Child\n\
         metadata:\n  name: $KRATIX_OBJECT_NAME\n  namespace: {ns}\n  labels:\n    \
         kratix.io/component-of-promise-name: {ns}\n    \
         kratix.io/component-of-resource-name: $KRATIX_OBJECT_NAME\nspec:\n  size: 1\nYAML\ntrue",
        group = s.group,
        ns = s.name
    );
    s.configure(&[pipeline("make-child", &write_child, "step.sh")], &[]);
    s.request("p1", 1);
    s.settled("p1");
    let child_kind = format!("children.{}", s.group);
    let child = || s.node.get_json(&child_kind, "p1", Some(&s.name));

    // Without the component the controller may not create the sub-request: named, not applied.
    let message = s.wait("the forbidden document named on PlatformSynced", || {
        let dest = s.node.get_json("destination", &s.name, None)?;
        condition(&dest, "PlatformSynced")
            .filter(|c| c["status"] == "False" && c["reason"] == "Forbidden")
            .and_then(|c| c["message"].as_str().map(str::to_string))
    });
    assert!(
        message.contains(&format!("{}/", s.name)) && message.contains("forbidden"),
        "{message}"
    );
    assert!(child().is_none(), "applied without the rights");

    // With it, the sub-request is applied into the cluster and runs its own pipeline as a pod.
    platform_sync_rights(s.node, true);
    let applied = s.wait("the sub-request reconciled", || {
        child().filter(|c| condition_is(c, "Reconciled", "True"))
    });
    assert_eq!(
        applied["metadata"]["labels"]["kratix-rs.io/platform-destination"],
        s.name.as_str()
    );
    assert_eq!(
        applied["metadata"]["labels"]["kratix.io/component-of-resource-name"],
        "p1"
    );
    let jobs = s.node.list_json(
        "jobs",
        &[
            "-n",
            &s.name,
            "-l",
            "kratix.io/promise-name=psync-child,kratix.io/resource-name=p1",
        ],
    );
    assert!(
        jobs.iter().any(|j| condition_is(j, "Complete", "True")),
        "the sub-request's pipeline ran as a Job: {jobs:#?}"
    );
    s.wait("the platform in sync", || {
        let dest = s.node.get_json("destination", &s.name, None)?;
        condition_is(&dest, "PlatformSynced", "True").then_some(())
    });

    // Deleting the parent request deletes its Work, its files go, and the sub-request is pruned.
    s.node
        .kubectl(&["delete", &s.kind(), "p1", "-n", &s.name, "--timeout=180s"]);
    s.wait("the sub-request pruned", || child().is_none().then_some(()));
    let events = s.node.list_json("events", &["-A"]);
    assert!(
        events
            .iter()
            .any(|e| e["reason"] == "PlatformPruned" && e["involvedObject"]["name"] == "psync"),
        "a PlatformPruned event"
    );
    remove_child_promise(s.node);
    platform_sync_rights(s.node, false);
}
