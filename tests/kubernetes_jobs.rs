//! Pipelines as Kubernetes Jobs: the Job, ServiceAccount and roles of a run (golden YAML, pure),
//! and runs through the Job executor against a real control plane (scripts/testworld) whose pods a
//! test kubelet runs as local processes.
//!
//! The golden files are in `fixtures/jobs/`; `KRATIX_BLESS=1` rewrites them after a deliberate
//! change. The control-plane tests start one and are run by scripts/test.sh with
//! `--ignored`.

#[path = "support/kubelet.rs"]
mod kubelet;
#[allow(dead_code)]
#[path = "support/testworld.rs"]
mod testworld;

use std::path::PathBuf;
use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::Role;
use kratix::api::pipeline::Pipeline;
use kratix::api::Action;
use kratix::jobs::identity::Identity;
use kratix::jobs::{job, rbac, spec, KubeJobs};
use kratix::pipeline::{
    kratix_env, output, Executor, ImageMap, Isolation, ResourceObject, RunRequest, RunResult,
    Subject, WorkflowEnv,
};
use kube::api::{ListParams, PostParams};
use kube::Api;
use serde_json::json;

use kubelet::{Kubelet, Node};
use testworld::KubeWorld;

const SYSTEM_NAMESPACE: &str = "kratix-platform-system";
const ADAPTER_IMAGE: &str = "ghcr.io/kratix-rs/kratix-rs:test";

fn pipeline(name: &str, spec: serde_json::Value) -> Pipeline {
    serde_json::from_value(json!({
        "apiVersion": "platform.kratix.io/v1alpha1",
        "kind": "Pipeline",
        "metadata": {"name": name},
        "spec": spec,
    }))
    .expect("pipeline parses")
}

fn sh(name: &str, script: &str) -> serde_json::Value {
    json!({"name": name, "image": "busybox", "command": ["sh", "-c", script]})
}

fn workflow(action: Action, pipeline: &str, resource: bool) -> Vec<(String, String)> {
    workflow_at(action, pipeline, resource, "v1.2.0")
}

/// [`workflow`] of the Promise at `version`.
fn workflow_at(
    action: Action,
    pipeline: &str,
    resource: bool,
    version: &str,
) -> Vec<(String, String)> {
    kratix_env(&WorkflowEnv {
        action,
        promise_name: "database".into(),
        promise_version: version.into(),
        pipeline_name: pipeline.into(),
        subject: if resource {
            Subject::Resource(ResourceObject {
                kind: "Database".into(),
                group: "example.com".into(),
                version: "v1".into(),
                plural: "databases".into(),
                name: "mydb".into(),
                namespace: "default".into(),
                cluster_scoped: false,
            })
        } else {
            Subject::Promise
        },
        dry_run: false,
    })
}

fn settings() -> job::Settings {
    job::Settings {
        system_namespace: SYSTEM_NAMESPACE.into(),
        adapter_image: ADAPTER_IMAGE.into(),
        adapter_pull_secret: Some("adapter-pull".into()),
        limits: output::Limits::default(),
        jobs_to_keep: 5,
        pod_shape: job::PodShape::Lean,
    }
}

/// The Job and grants of a run, as one YAML stream.
fn shape(pipeline: &Pipeline, env: &[(String, String)]) -> String {
    shape_with(pipeline, env, settings())
}

/// [`shape`] with these settings.
fn shape_with(pipeline: &Pipeline, env: &[(String, String)], settings: job::Settings) -> String {
    let identity = Identity::from_env("golden", env).expect("identity");
    let request = job::JobRequest {
        identity: &identity,
        pipeline,
        kratix_env: env,
        name: &job::job_name(&identity, "abcde"),
        hash: "0123456789abcdef",
        timeout: Duration::from_secs(600),
        settings: &settings,
    };
    let job = job::job(&request).expect("job builds");
    let pod = spec::PodSettings::of(pipeline).expect("settings");
    let namespace = identity.namespace(SYSTEM_NAMESPACE);
    let g = rbac::grants(&identity, &pod.rbac, &namespace);
    let mut docs = vec![serde_yaml::to_string(&job).expect("yaml")];
    docs.push(serde_yaml::to_string(&g.service_account).expect("yaml"));
    docs.extend(
        g.roles
            .iter()
            .map(|o| serde_yaml::to_string(o).expect("yaml")),
    );
    docs.extend(
        g.role_bindings
            .iter()
            .map(|o| serde_yaml::to_string(o).expect("yaml")),
    );
    docs.extend(
        g.cluster_roles
            .iter()
            .map(|o| serde_yaml::to_string(o).expect("yaml")),
    );
    docs.extend(
        g.cluster_role_bindings
            .iter()
            .map(|o| serde_yaml::to_string(o).expect("yaml")),
    );
    docs.join("---\n")
}

#[test]
fn job_and_grants_match_the_golden_yaml() {
    let configure = pipeline(
        "instance",
        json!({
            "containers": [
                sh("render", "echo hi"),
                {"name": "own-resources", "image": "example/own", "resources": {"limits": {"cpu": "1"}},
                 "securityContext": {"runAsUser": 1000}, "env": [{"name": "MODE", "value": "fast"}],
                 "volumeMounts": [{"name": "cache", "mountPath": "/cache"}]},
                {"name": "last", "image": "example/last"},
            ],
            "imagePullSecrets": [{"name": "regcred"}],
            "jobOptions": {"backoffLimit": 2},
            "volumes": [{"name": "cache", "emptyDir": {}}],
            "rbac": {"permissions": [
                {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]},
                {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"], "resourceNamespace": "vault"},
                {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get"], "resourceNamespace": "*"},
            ]},
        }),
    );
    let delete = pipeline("cleanup", json!({"containers": [sh("drop", "true")]}));
    let cases = [
        (
            "resource-configure.yaml",
            shape(&configure, &workflow(Action::Configure, "instance", true)),
        ),
        (
            "promise-delete.yaml",
            shape(&delete, &workflow(Action::Delete, "cleanup", false)),
        ),
        (
            "resource-configure-kratix-shape.yaml",
            shape_with(
                &configure,
                &workflow(Action::Configure, "instance", true),
                job::Settings {
                    pod_shape: job::PodShape::Kratix,
                    ..settings()
                },
            ),
        ),
        (
            "promise-delete-kratix-shape.yaml",
            shape_with(
                &delete,
                &workflow(Action::Delete, "cleanup", false),
                job::Settings {
                    pod_shape: job::PodShape::Kratix,
                    ..settings()
                },
            ),
        ),
    ];
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/jobs");
    for (file, got) in cases {
        let path = dir.join(file);
        if std::env::var_os("KRATIX_BLESS").is_some() {
            std::fs::create_dir_all(&dir).expect("fixtures/jobs");
            std::fs::write(&path, &got).expect("write golden file");
        }
        let want = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (KRATIX_BLESS=1 writes it)", path.display()));
        assert_eq!(got, want, "{file} differs (KRATIX_BLESS=1 rewrites it)");
    }
}

/// A control plane, a kubelet for it and the executor, for one test.
struct Cluster {
    env: KubeWorld,
    client: kube::Client,
    executor: KubeJobs,
    kubelet: Kubelet,
    pods_dir: tempfile::TempDir,
}

impl Cluster {
    async fn start() -> Self {
        let env = KubeWorld::start();
        let client = env.client().await;
        let namespaces: Api<Namespace> = Api::all(client.clone());
        let ns: Namespace =
            serde_json::from_value(json!({"metadata": {"name": SYSTEM_NAMESPACE}})).expect("ns");
        namespaces
            .create(&PostParams::default(), &ns)
            .await
            .expect("create the system namespace");
        let pods_dir = tempfile::tempdir().expect("temp dir");
        let mut images = ImageMap::default();
        images.insert(
            ADAPTER_IMAGE,
            vec![env!("CARGO_BIN_EXE_kratix-rs").to_string()],
        );
        images.insert(
            "example/mapped",
            vec![
                "sh".into(),
                "-c".into(),
                "echo mapped > $KRATIX_OUTPUT_DIR/mapped.txt".into(),
            ],
        );
        let kubelet = Kubelet::start(Node {
            client: client.clone(),
            kubeconfig: env.kubeconfig.clone(),
            images,
            root: pods_dir.path().to_path_buf(),
        });
        let executor = KubeJobs::new(env.config().await, settings()).expect("executor");
        Cluster {
            env,
            client,
            executor,
            kubelet,
            pods_dir,
        }
    }

    async fn jobs(&self, namespace: &str) -> Vec<Job> {
        Api::<Job>::namespaced(self.client.clone(), namespace)
            .list(&ListParams::default())
            .await
            .expect("list jobs")
            .items
    }

    /// Waits until the Jobs of `default` not being deleted, each as `key` says, are `want`
    /// (any order); panics after 30 s with what is left.
    async fn jobs_left_become<T: Ord + std::fmt::Debug>(
        &self,
        key: impl Fn(&Job) -> T,
        mut want: Vec<T>,
    ) {
        want.sort();
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let mut left: Vec<T> = self
                .jobs("default")
                .await
                .iter()
                .filter(|j| j.metadata.deletion_timestamp.is_none())
                .map(&key)
                .collect();
            left.sort();
            if left == want {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "left {left:?}, want {want:?}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// A request to run `pipeline` for a `mydb` Database, in a work folder of its own (kept while
/// the folder returned lives).
fn run_request(
    pipeline: Pipeline,
    env: Vec<(String, String)>,
    timeout: Duration,
) -> (RunRequest, tempfile::TempDir) {
    let work = tempfile::tempdir().expect("work dir");
    let req = RunRequest {
        run_name: format!("run of {}", pipeline.metadata.name),
        pipeline,
        object_yaml: "apiVersion: example.com/v1\nkind: Database\nmetadata:\n  name: mydb\n  namespace: default\nspec:\n  size: 3\n".into(),
        env,
        work_dir: work.path().join("run"),
        timeout,
        images: ImageMap::default(),
        isolation: Isolation::Process,
        hidden: Vec::new(),
        progress: Default::default(),
        ..RunRequest::default()
    };
    (req, work)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "starts a real control plane with scripts/testworld; run with --ignored"]
async fn three_pipelines_run_in_order_as_jobs_and_hand_back_their_output() {
    let cluster = Cluster::start().await;
    let pipelines = [
        pipeline(
            "first",
            json!({"containers": [
                sh("copy-input", "cp $KRATIX_INPUT_DIR/object.yaml $KRATIX_OUTPUT_DIR/seen.yaml"),
                {"name": "mapped", "image": "example/mapped"},
            ]}),
        ),
        pipeline(
            "second",
            json!({"containers": [sh("nested", "mkdir -p $KRATIX_OUTPUT_DIR/a/empty && printf big > $KRATIX_OUTPUT_DIR/a/b.txt && printf 'phase: two\\n' > $KRATIX_METADATA_DIR/status.yaml")]}),
        ),
        pipeline(
            "third",
            json!({"containers": [sh("selectors", "echo x > $KRATIX_OUTPUT_DIR/x.yaml && printf -- '- matchLabels:\\n    env: dev\\n' > $KRATIX_METADATA_DIR/destination-selectors.yaml && echo \"name=$KRATIX_OBJECT_NAME\"")]}),
        ),
    ];
    let mut outcomes = Vec::new();
    let mut works = Vec::new();
    for p in pipelines {
        let name = p.metadata.name.clone();
        let (req, work) = run_request(
            p,
            workflow(Action::Configure, &name, true),
            Duration::from_secs(120),
        );
        let outcome = cluster.executor.run(req).await.expect("run");
        assert_eq!(
            outcome.result,
            RunResult::Succeeded,
            "{name}: {}",
            outcome.logs
        );
        outcomes.push(outcome);
        works.push(work);
    }
    let files = |i: usize| output_files(&outcomes[i]);
    assert_eq!(
        files(0),
        vec![
            ("mapped.txt".to_string(), "mapped\n".to_string()),
            (
                "seen.yaml".to_string(),
                run_request(pipeline("x", json!({})), vec![], Duration::ZERO)
                    .0
                    .object_yaml
            ),
        ]
    );
    assert_eq!(files(1), vec![("a/b.txt".to_string(), "big".to_string())]);
    assert_eq!(
        outcomes[1].output.as_ref().expect("output").dirs,
        vec!["a".to_string(), "a/empty".to_string()]
    );
    assert_eq!(outcomes[1].metadata.status, Some(json!({"phase": "two"})));
    assert_eq!(
        outcomes[2].metadata.destination_selectors[0].match_labels,
        [("env".to_string(), "dev".to_string())].into()
    );
    assert!(
        outcomes[2].logs.contains("== container selectors =="),
        "{}",
        outcomes[2].logs
    );
    for (i, work) in works.iter().enumerate() {
        let saved = std::fs::read_to_string(work.path().join("run/logs.txt")).expect("logs.txt");
        assert_eq!(saved, outcomes[i].logs);
    }

    // One Job per pipeline, in the request's namespace, with Kratix's labels; the hand-back
    // ConfigMaps are gone once read.
    let jobs = cluster.jobs("default").await;
    assert_eq!(jobs.len(), 3);
    let mut names: Vec<String> = jobs
        .iter()
        .map(|j| {
            let labels = j.metadata.labels.clone().expect("labels");
            assert_eq!(labels["kratix.io/promise-name"], "database");
            assert_eq!(labels["kratix.io/resource-name"], "mydb");
            assert_eq!(labels["kratix.io/workflow-type"], "resource");
            assert_eq!(labels["kratix.io/workflow-action"], "configure");
            assert_eq!(labels["app.kubernetes.io/managed-by"], "Kratix");
            labels["kratix.io/pipeline-name"].clone()
        })
        .collect();
    names.sort();
    assert_eq!(names, ["first", "second", "third"]);
    let maps: Vec<String> = Api::<ConfigMap>::namespaced(cluster.client.clone(), "default")
        .list(&ListParams::default().labels("kratix.io/promise-name=database"))
        .await
        .expect("list")
        .items
        .into_iter()
        .filter_map(|cm| cm.metadata.name)
        .collect();
    assert_eq!(maps, Vec::<String>::new());
    // The pipeline's account at the run's version.
    let first =
        Identity::from_env("first", &workflow(Action::Configure, "first", true)).expect("identity");
    let sa_name = rbac::rights_name(&first);
    assert!(
        sa_name.starts_with("database-resource-configure-first-v1.2.0-"),
        "{sa_name}"
    );
    let sa = Api::<ServiceAccount>::namespaced(cluster.client.clone(), "default")
        .get_opt(&sa_name)
        .await
        .expect("get");
    assert!(sa.is_some(), "the pipeline's ServiceAccount exists");
    // The adapters ran with that account's token: it may create and read ConfigMaps in its
    // namespace and write Works, and nothing that could replace or remove a result.
    let account = format!("--as=system:serviceaccount:default:{sa_name}");
    let account = account.as_str();
    for (verb, resource, namespace, want) in [
        ("create", "configmaps", "default", "yes"),
        ("get", "configmaps", "default", "yes"),
        ("update", "configmaps", "default", "no"),
        ("delete", "configmaps", "default", "no"),
        ("create", "configmaps", "kube-system", "no"),
        ("get", "secrets", "default", "no"),
    ] {
        let (_, out, err) = cluster.env.kubectl(
            &["auth", "can-i", verb, resource, "-n", namespace, account],
            "",
        );
        assert_eq!(out.trim(), want, "{verb} {resource} in {namespace}: {err}");
    }
    assert_eq!(
        cluster.kubelet.ran.lock().expect("not poisoned").len(),
        3,
        "one pod per pipeline"
    );
    assert!(cluster.pods_dir.path().exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "starts a real control plane with scripts/testworld; run with --ignored"]
async fn a_failing_container_fails_the_run_with_its_reason() {
    let cluster = Cluster::start().await;
    let cases = [
        (
            "a container exits 3",
            pipeline(
                "exits",
                json!({"containers": [sh("ok", "true"), sh("fail", "echo broken >&2; exit 3"), sh("never", "touch $KRATIX_OUTPUT_DIR/never")],
                       "jobOptions": {"backoffLimit": 0}}),
            ),
            RunResult::Failed {
                container: "fail".into(),
                exit_code: Some(3),
                reason: "container \"fail\" exited with code 3".into(),
            },
        ),
        (
            "the work-writer refuses a symbolic link",
            pipeline(
                "link",
                json!({"containers": [sh("link", "ln -s /etc/passwd $KRATIX_OUTPUT_DIR/passwd")],
                       "jobOptions": {"backoffLimit": 0}}),
            ),
            RunResult::Failed {
                container: "work-writer".into(),
                exit_code: None,
                reason: "output file passwd is a symbolic link, which the output may not contain"
                    .into(),
            },
        ),
    ];
    for (case, p, want) in cases {
        let name = p.metadata.name.clone();
        let (req, _work) = run_request(
            p,
            workflow(Action::Configure, &name, false),
            Duration::from_secs(120),
        );
        let outcome = cluster.executor.run(req).await.expect("run");
        match (&outcome.result, &want) {
            (
                RunResult::Failed {
                    container,
                    exit_code,
                    reason,
                },
                RunResult::Failed {
                    container: c,
                    exit_code: e,
                    reason: r,
                },
            ) => {
                assert_eq!((container, exit_code), (c, e), "{case}: {}", outcome.logs);
                assert!(
                    reason.contains(r.as_str()) || r.contains(reason.as_str()),
                    "{case}: {reason}"
                );
            }
            other => panic!("{case}: {other:?}\n{}", outcome.logs),
        }
        assert_eq!(outcome.output, None, "{case}");
    }
    // Promise workflows run in the system namespace.
    assert_eq!(cluster.jobs(SYSTEM_NAMESPACE).await.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "starts a real control plane with scripts/testworld; run with --ignored"]
async fn a_run_past_its_time_limit_times_out() {
    let cluster = Cluster::start().await;
    let p = pipeline(
        "slow",
        json!({"containers": [sh("quick", "true"), sh("sleep", "sleep 60")], "jobOptions": {"backoffLimit": 0}}),
    );
    let (req, _work) = run_request(
        p,
        workflow(Action::Delete, "slow", true),
        Duration::from_secs(4),
    );
    let started = std::time::Instant::now();
    let outcome = cluster.executor.run(req).await.expect("run");
    assert_eq!(
        outcome.result,
        RunResult::TimedOut {
            container: "sleep".into()
        },
        "{}",
        outcome.logs
    );
    assert!(
        started.elapsed() < Duration::from_secs(50),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "starts a real control plane with scripts/testworld; run with --ignored"]
async fn kill_leftovers_deletes_the_job_of_an_interrupted_run() {
    let cluster = Cluster::start().await;
    let p = pipeline("stuck", json!({"containers": [sh("sleep", "sleep 120")]}));
    let (req, _work) = run_request(
        p,
        workflow(Action::Configure, "stuck", true),
        Duration::from_secs(300),
    );
    let work_dir = req.work_dir.clone();
    let executor = cluster.executor.clone();
    let run = tokio::spawn(async move { executor.run(req).await });
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while cluster.jobs("default").await.is_empty() || !work_dir.join("job.json").exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the Job never appeared"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The controller that started the run is gone; its successor cleans up.
    let killed = cluster.executor.kill_leftovers(&work_dir).await;
    assert_eq!(
        killed,
        Vec::<i32>::new(),
        "no process groups on this machine"
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !cluster.jobs("default").await.is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the Job was not deleted"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let outcome = run.await.expect("join").expect("run");
    match outcome.result {
        RunResult::Failed { reason, .. } => assert!(reason.contains("was deleted"), "{reason}"),
        other => panic!("{other:?}"),
    }
    let _ = &cluster.env;
}

fn deploy_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("deploy")
}

/// `deploy/` is stale when a manifest is not in its kustomization, or when the controller
/// would start pipeline Jobs with an adapter image other than its own.
#[test]
fn deploy_kustomization_lists_every_manifest_and_one_image_serves_both() {
    let dir = deploy_dir();
    let kustomization: serde_json::Value = serde_yaml::from_str(
        &std::fs::read_to_string(dir.join("kustomization.yaml")).expect("kustomization.yaml"),
    )
    .expect("kustomization parses");
    let mut listed: Vec<String> = kustomization["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .map(|r| r.as_str().expect("a path").to_string())
        .collect();
    listed.sort();
    let mut present: Vec<String> = Vec::new();
    for sub in ["", "crds"] {
        for entry in std::fs::read_dir(dir.join(sub)).expect("deploy/ lists") {
            let name = entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned();
            if name.ends_with(".yaml") && name != "kustomization.yaml" {
                present.push(if sub.is_empty() {
                    name
                } else {
                    format!("{sub}/{name}")
                });
            }
        }
    }
    present.sort();
    assert_eq!(listed, present, "deploy/kustomization.yaml resources");

    let deployment: serde_json::Value = serde_yaml::from_str(
        &std::fs::read_to_string(dir.join("deployment.yaml")).expect("deployment.yaml"),
    )
    .expect("deployment parses");
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    let adapter = container["env"]
        .as_array()
        .expect("env")
        .iter()
        .find(|e| e["name"] == job::ADAPTER_IMAGE_ENV)
        .expect("the adapter image is set");
    assert_eq!(adapter["value"], container["image"]);
    let args: Vec<&str> = container["args"]
        .as_array()
        .expect("args")
        .iter()
        .map(|a| a.as_str().expect("a string"))
        .collect();
    assert_eq!(args[..2], ["controller", "--leader-elect"]);
    assert_eq!(container["securityContext"]["readOnlyRootFilesystem"], true);
    assert_eq!(
        deployment["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"],
        true
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "starts a real control plane with scripts/testworld; run with --ignored"]
async fn deploy_renders_and_applies_to_a_real_api_server() {
    let env = KubeWorld::start();
    let dir = deploy_dir();
    let dir = dir.to_str().expect("utf-8 path");
    let (ok, rendered, err) = env.kubectl(&["kustomize", dir], "");
    assert!(ok, "kubectl kustomize deploy: {err}");
    let kinds = rendered.lines().filter(|l| l.starts_with("kind: ")).count();
    assert_eq!(kinds, 19, "{rendered}");
    // The namespace must exist for a server-side dry run of what goes in it.
    let (ok, _, err) = env.kubectl(
        &["apply", "-f", "-"],
        &std::fs::read_to_string(deploy_dir().join("namespace.yaml")).expect("namespace.yaml"),
    );
    assert!(ok, "namespace: {err}");
    let (ok, out, err) = env.kubectl(&["apply", "--dry-run=server", "-f", "-"], &rendered);
    assert!(ok, "kubectl apply --dry-run=server: {err}\n{out}");
    let (ok, out, err) = env.kubectl(&["apply", "-k", dir], "");
    assert!(ok, "kubectl apply -k deploy: {err}\n{out}");
    let (ok, out, err) = env.kubectl(
        &[
            "get",
            "deployment,serviceaccount,service",
            "-n",
            "kratix-platform-system",
            "-o",
            "name",
        ],
        "",
    );
    assert!(ok, "{err}");
    for want in [
        "deployment.apps/kratix-rs-controller",
        "serviceaccount/kratix-rs-controller",
        "service/kratix-rs-metrics",
    ] {
        assert!(out.contains(want), "{want} missing from\n{out}");
    }
}

/// The controllers stay the same only if both executors end a run the same way: the same result
/// (container, exit code, reason), output and metadata for the same pipeline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "starts a real control plane with scripts/testworld; run with --ignored"]
async fn the_job_executor_ends_runs_as_the_local_one_does() {
    let cluster = Cluster::start().await;
    let cases = [
        (
            "output, status and selectors",
            "mkdir -p $KRATIX_OUTPUT_DIR/d && echo a > $KRATIX_OUTPUT_DIR/d/a.yaml && printf 'ready: yes\\n' > $KRATIX_METADATA_DIR/status.yaml && printf -- '- matchLabels:\\n    env: prod\\n  directory: d\\n' > $KRATIX_METADATA_DIR/destination-selectors.yaml && printf 'retryAfter: 5m\\n' > $KRATIX_METADATA_DIR/workflow-control.yaml",
        ),
        (
            "output larger than one ConfigMap holds",
            "awk 'BEGIN { s = 1; for (i = 0; i < 300000; i++) { s = (s * 1103515245 + 12345) % 2147483648; printf \"%08x\", s } }' > $KRATIX_OUTPUT_DIR/big.txt && seq 1 100000 > $KRATIX_OUTPUT_DIR/lines.txt",
        ),
        ("exit code", "exit 7"),
        ("symbolic link in the output", "ln -s /etc/hosts $KRATIX_OUTPUT_DIR/hosts"),
        ("status that is not a mapping", "echo '[1, 2]' > $KRATIX_METADATA_DIR/status.yaml"),
        (
            "selectors without labels",
            "printf -- '- directory: x\\n' > $KRATIX_METADATA_DIR/destination-selectors.yaml",
        ),
    ];
    for (i, (case, script)) in cases.into_iter().enumerate() {
        let name = format!("agree-{i}");
        let p = pipeline(
            &name,
            json!({"containers": [sh("step", script)], "jobOptions": {"backoffLimit": 0}}),
        );
        let env = workflow(Action::Configure, &name, true);
        let (local_req, _local_work) = run_request(p.clone(), env.clone(), Duration::from_secs(60));
        let local = kratix::pipeline::Local::default()
            .run(local_req)
            .await
            .expect("local run");
        let (kube_req, _kube_work) = run_request(p, env, Duration::from_secs(120));
        let kube = cluster.executor.run(kube_req).await.expect("job run");
        assert_eq!(kube.result, local.result, "{case}\n{}", kube.logs);
        // Compared by size first: a failure should not print megabytes.
        let sizes = |o: &Option<kratix::pipeline::Output>| -> Option<Vec<(String, usize)>> {
            o.as_ref()
                .map(|o| o.files.iter().map(|(n, b)| (n.clone(), b.len())).collect())
        };
        assert_eq!(sizes(&kube.output), sizes(&local.output), "{case}");
        assert!(
            kube.output == local.output,
            "{case}: same sizes, different bytes"
        );
        assert_eq!(kube.metadata, local.metadata, "{case}");
    }
}

/// The adapters outside a pod: a refused check exits 1 with the check's message before any API
/// call; anything needing the Job says what is missing.
#[test]
fn pipeline_adapter_refuses_before_reaching_the_api() {
    let dir = tempfile::tempdir().expect("temp dir");
    let output = dir.path().join("output");
    let metadata = dir.path().join("metadata");
    std::fs::create_dir_all(&output).expect("output");
    std::fs::create_dir_all(&metadata).expect("metadata");
    std::os::unix::fs::symlink("/etc/hosts", output.join("hosts")).expect("symlink");
    std::fs::write(metadata.join("status.yaml"), "[1]\n").expect("status");
    let cases = [
        ("work-writer", "output file hosts is a symbolic link"),
        ("status-writer", "status.yaml"),
        ("reader", "KRATIX_JOB_NAME is not set"),
        // The lean pod's one adapter names the Kratix container whose check refused.
        (
            "hand-back",
            "work-writer: output file hosts is a symbolic link",
        ),
    ];
    for (step, want) in cases {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_kratix-rs"))
            .args(["pipeline-adapter", step])
            .env_clear()
            .env("KRATIX_OUTPUT_DIR", &output)
            .env("KRATIX_METADATA_DIR", &metadata)
            .env("KRATIX_INPUT_DIR", dir.path())
            .env("KRATIX_WORKFLOW_ACTION", "configure")
            .output()
            .expect("kratix-rs runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{step}: {stderr}");
        assert!(stderr.contains(want), "{step}: {stderr}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "starts a real control plane with scripts/testworld; run with --ignored"]
async fn only_the_newest_jobs_of_a_pipeline_stay() {
    let cluster = Cluster::start().await;
    let executor = KubeJobs::new(
        cluster.env.config().await,
        job::Settings {
            jobs_to_keep: 2,
            ..settings()
        },
    )
    .expect("executor");
    let mut created = Vec::new();
    for _ in 0..3 {
        let p = pipeline("again", json!({"containers": [sh("ok", "true")]}));
        let (req, _work) = run_request(
            p,
            workflow(Action::Configure, "again", true),
            Duration::from_secs(60),
        );
        let outcome = executor.run(req).await.expect("run");
        assert_eq!(outcome.result, RunResult::Succeeded, "{}", outcome.logs);
        let mut names: Vec<String> = cluster
            .jobs("default")
            .await
            .into_iter()
            .filter_map(|j| j.metadata.name)
            .filter(|n| !created.contains(n))
            .collect();
        created.append(&mut names);
        // Deletion is foreground: the Job goes once its pods have.
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    cluster
        .jobs_left_become(
            |j| j.metadata.name.clone().unwrap_or_default(),
            created[1..].to_vec(),
        )
        .await;
}

/// `Executor::prune` of a request's configure workflow: the finished Jobs of a pipeline no
/// longer in it go, the current pipeline's stay, and so do the request's delete workflow's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "starts a real control plane with scripts/testworld; run with --ignored"]
async fn pruning_a_workflow_removes_the_jobs_of_pipelines_no_longer_in_it() {
    let cluster = Cluster::start().await;
    let executor = KubeJobs::new(cluster.env.config().await, settings()).expect("executor");
    for (action, name) in [
        (Action::Configure, "renamed"),
        (Action::Configure, "kept"),
        (Action::Delete, "renamed"),
    ] {
        let p = pipeline(name, json!({"containers": [sh("ok", "true")]}));
        let (req, _work) = run_request(p, workflow(action, name, true), Duration::from_secs(60));
        let outcome = executor.run(req).await.expect("run");
        assert_eq!(outcome.result, RunResult::Succeeded, "{}", outcome.logs);
    }
    let owner = kratix::pipeline::Owner::Request {
        promise: "database".into(),
        namespace: "default".into(),
        name: "mydb".into(),
    };
    executor
        .prune(&owner, Action::Configure, &["kept".to_string()])
        .await
        .expect("pruned");
    let label = |job: &Job, key: &str| {
        job.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(key))
            .cloned()
            .unwrap_or_default()
    };
    cluster
        .jobs_left_become(
            |j| {
                (
                    label(j, "kratix.io/workflow-action"),
                    label(j, "kratix.io/pipeline-name"),
                )
            },
            [("configure", "kept"), ("delete", "renamed")]
                .map(|(a, p)| (a.to_string(), p.to_string()))
                .to_vec(),
        )
        .await;
}

/// `env` of a run for request `name` instead of `mydb`.
fn for_request(env: Vec<(String, String)>, name: &str) -> Vec<(String, String)> {
    env.into_iter()
        .map(|(k, v)| match k.as_str() {
            "KRATIX_OBJECT_NAME" => (k, name.to_string()),
            _ => (k, v),
        })
        .collect()
}

/// The files a run handed back, as text.
fn output_files(outcome: &kratix::pipeline::RunOutcome) -> Vec<(String, String)> {
    outcome
        .output
        .as_ref()
        .expect("output")
        .files
        .iter()
        .map(|(n, b)| (n.clone(), String::from_utf8_lossy(b).into_owned()))
        .collect()
}

/// The versions of the Roles of pipeline `instance` of `database` in `default`.
async fn role_versions(client: &kube::Client) -> Vec<String> {
    let mut versions: Vec<String> = Api::<Role>::namespaced(client.clone(), "default")
        .list(&ListParams::default().labels("kratix.io/pipeline-name=instance"))
        .await
        .expect("list roles")
        .items
        .into_iter()
        .filter_map(|r| r.metadata.labels?.get("kratix.io/promise-version").cloned())
        .collect();
    versions.sort();
    versions.dedup();
    versions
}

/// Runs of two versions of one pipeline at once (for two requests, one pinned to the old
/// version), with different permissions, each with its version's rights: the end of version 1's run (which declares none) leaves version 2's run
/// its rights, and version 1's rights go once version 2's run ends and no run of version 1 is
/// left. Kratix shares one set of rights between versions (syntasso/kratix#948).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "starts a real control plane (scripts/testworld); run with --ignored"]
async fn two_versions_of_a_pipeline_keep_their_own_rights_until_their_runs_end() {
    let cluster = Cluster::start().await;
    let gate = tempfile::tempdir().expect("gate");
    let go = gate.path().join("go");
    let check = "kubectl auth can-i list secrets -n default > $KRATIX_OUTPUT_DIR/can-list-secrets.txt || true";
    let v2 = pipeline(
        "instance",
        json!({"containers": [sh("check", &format!(
            "while [ ! -e {go} ]; do sleep 0.2; done; {check}; \
             kubectl get secrets -n default -o name > /dev/null && echo listed > $KRATIX_OUTPUT_DIR/listed.txt",
            go = go.display()
        ))],
        "rbac": {"permissions": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]}]}}),
    );
    let v1 = pipeline("instance", json!({"containers": [sh("check", check)]}));
    let files = output_files;

    let (req2, _work2) = run_request(
        v2,
        workflow_at(Action::Configure, "instance", true, "v2"),
        Duration::from_secs(120),
    );
    let executor = cluster.executor.clone();
    let second = tokio::spawn(async move { executor.run(req2).await });
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while cluster.jobs("default").await.is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "v2's Job never appeared"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // A request pinned to v1 runs while another, on v2, is in its run.
    let (req1, _work1) = run_request(
        v1.clone(),
        for_request(
            workflow_at(Action::Configure, "instance", true, "v1"),
            "pinned",
        ),
        Duration::from_secs(120),
    );
    let first = cluster.executor.run(req1).await.expect("v1 run");
    assert_eq!(first.result, RunResult::Succeeded, "{}", first.logs);
    assert_eq!(
        files(&first),
        [("can-list-secrets.txt".to_string(), "no\n".to_string())],
        "v1 runs with v1's rights only"
    );
    assert_eq!(
        role_versions(&cluster.client).await,
        ["v1", "v2"],
        "v1's end leaves v2's running Job its rights"
    );

    std::fs::write(&go, "").expect("open the gate");
    let second = second.await.expect("join").expect("v2 run");
    assert_eq!(second.result, RunResult::Succeeded, "{}", second.logs);
    assert_eq!(
        files(&second),
        [
            ("can-list-secrets.txt".to_string(), "yes\n".to_string()),
            ("listed.txt".to_string(), "listed\n".to_string()),
        ],
        "v2 kept its rights until it ended"
    );
    assert_eq!(
        role_versions(&cluster.client).await,
        ["v2"],
        "v1's rights went once no run of v1 was left"
    );
    let accounts: Vec<String> =
        Api::<ServiceAccount>::namespaced(cluster.client.clone(), "default")
            .list(&ListParams::default().labels("kratix.io/pipeline-name=instance"))
            .await
            .expect("list accounts")
            .items
            .into_iter()
            .filter_map(|a| a.metadata.name)
            .collect();
    let v2_account = rbac::rights_name(
        &Identity::from_env(
            "v2",
            &workflow_at(Action::Configure, "instance", true, "v2"),
        )
        .expect("identity"),
    );
    assert_eq!(accounts, [v2_account]);

    // A pinned request's run of v1 again: its rights come back, and v2's (no run left) go.
    let (again, _work3) = run_request(
        v1,
        for_request(
            workflow_at(Action::Configure, "instance", true, "v1"),
            "pinned",
        ),
        Duration::from_secs(120),
    );
    let again = cluster.executor.run(again).await.expect("v1 run again");
    assert_eq!(again.result, RunResult::Succeeded, "{}", again.logs);
    assert_eq!(role_versions(&cluster.client).await, ["v1"]);
}

/// A controller that stops gives its run back and drops it, but the run's Job runs on (and on
/// Kubernetes its note went with the controller's pod). The run's next attempt deletes that Job
/// and waits for it to go before creating its own: the object's pipelines never run twice at
/// once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "starts a real control plane (scripts/testworld); run with --ignored"]
async fn a_job_left_by_an_interrupted_run_goes_before_the_run_again() {
    let cluster = Cluster::start().await;
    let (req, _work) = run_request(
        pipeline(
            "instance",
            json!({"containers": [sh("sleep", "sleep 120")]}),
        ),
        workflow(Action::Configure, "instance", true),
        Duration::from_secs(300),
    );
    let executor = cluster.executor.clone();
    let first = tokio::spawn(async move { executor.run(req).await });
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let left = loop {
        if let Some(job) = cluster.jobs("default").await.into_iter().next() {
            break job.metadata.name.expect("a name");
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the Job never appeared"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    // The stopping controller drops its run; the Job stays.
    first.abort();
    let _ = first.await;
    assert_eq!(
        cluster
            .jobs("default")
            .await
            .iter()
            .filter_map(|j| j.metadata.name.clone())
            .collect::<Vec<_>>(),
        std::slice::from_ref(&left)
    );

    let (again, _work2) = run_request(
        pipeline("instance", json!({"containers": [sh("quick", "true")]})),
        workflow(Action::Configure, "instance", true),
        Duration::from_secs(120),
    );
    let outcome = cluster.executor.run(again).await.expect("run again");
    assert_eq!(outcome.result, RunResult::Succeeded, "{}", outcome.logs);
    let names: Vec<String> = cluster
        .jobs("default")
        .await
        .iter()
        .filter_map(|j| j.metadata.name.clone())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
    assert_ne!(
        names[0], left,
        "the left Job went before the new one was made"
    );
}
