//! Executor tests: real shell scripts, in the bubblewrap sandbox and as plain processes.

use std::path::Path;

use super::*;
use crate::api::pipeline::{Container, EnvVar, PipelineMetadata, PipelineSpec};
use crate::api::Action;
use statestores::error_chain::ErrorChain;

const MODES: [Isolation; 2] = [Isolation::Sandbox, Isolation::Process];

fn script(name: &str, script: &str) -> Container {
    Container {
        name: name.into(),
        image: "acme/shell:v1".into(),
        command: Some(vec!["sh".into(), "-c".into()]),
        args: Some(vec![script.into()]),
        ..Container::default()
    }
}

fn request(work_dir: &Path, isolation: Isolation, containers: Vec<Container>) -> RunRequest {
    RunRequest {
        run_name: "test-run".into(),
        pipeline: Pipeline {
            api_version: crate::api::API_VERSION.into(),
            kind: "Pipeline".into(),
            metadata: PipelineMetadata {
                name: "instance".into(),
                ..PipelineMetadata::default()
            },
            spec: PipelineSpec {
                containers,
                ..PipelineSpec::default()
            },
        },
        object_yaml: "apiVersion: example.com/v1\nkind: Database\nmetadata:\n  name: mydb\n".into(),
        env: kratix_env(&WorkflowEnv {
            action: Action::Configure,
            promise_name: "database".into(),
            promise_version: "v1.2.0".into(),
            pipeline_name: "instance".into(),
            subject: Subject::Resource(ResourceObject {
                kind: "Database".into(),
                group: "example.com".into(),
                version: "v1".into(),
                plural: "databases".into(),
                name: "mydb".into(),
                namespace: "default".into(),
                cluster_scoped: false,
            }),
            dry_run: false,
        }),
        work_dir: work_dir.to_path_buf(),
        timeout: Duration::from_secs(120),
        images: ImageMap::default(),
        isolation,
        hidden: Vec::new(),
        progress: Default::default(),
        executor: crate::pipeline::ExecutorSetting::Process,
        registries: Vec::new(),
    }
}

async fn run_in(
    isolation: Isolation,
    containers: Vec<Container>,
) -> (tempfile::TempDir, RunOutcome) {
    let dir = tempfile::tempdir().expect("tempdir");
    let outcome = run(request(dir.path(), isolation, containers))
        .await
        .unwrap_or_else(|e| panic!("{isolation:?}: {}", ErrorChain(&e)));
    assert_eq!(outcome.isolation_used, isolation);
    (dir, outcome)
}

fn file<'a>(outcome: &'a RunOutcome, path: &str) -> &'a str {
    let output = outcome.output.as_ref().expect("output on success");
    let (_, bytes) = output
        .files
        .iter()
        .find(|(p, _)| p == path)
        .unwrap_or_else(|| panic!("no {path} in {:?}", output.files));
    std::str::from_utf8(bytes).expect("utf-8")
}

fn assert_failed(outcome: &RunOutcome, container: &str, exit_code: Option<i32>, reason_has: &str) {
    match &outcome.result {
        RunResult::Failed {
            container: c,
            exit_code: code,
            reason,
        } => {
            assert_eq!(c, container, "{reason}");
            assert_eq!(*code, exit_code, "{reason}");
            assert!(
                reason.contains(reason_has),
                "reason {reason:?} lacks {reason_has:?}"
            );
            assert!(
                outcome.logs.contains(reason.as_str()),
                "logs: {}",
                outcome.logs
            );
        }
        other => panic!(
            "expected failure of {container}, got {other:?}\n{}",
            outcome.logs
        ),
    }
    assert_eq!(outcome.output, None);
}

#[tokio::test]
async fn containers_run_in_order_and_share_the_output() {
    for mode in MODES {
        let containers = ["first", "second", "third"]
            .iter()
            .map(|name| {
                script(
                    name,
                    &format!("echo {name} >> \"$KRATIX_OUTPUT_DIR/order.txt\"; echo log-of-{name}; echo err-of-{name} >&2"),
                )
            })
            .collect();
        let (dir, outcome) = run_in(mode, containers).await;
        assert_eq!(
            outcome.result,
            RunResult::Succeeded,
            "{mode:?}: {}",
            outcome.logs
        );
        assert_eq!(
            file(&outcome, "order.txt"),
            "first\nsecond\nthird\n",
            "{mode:?}"
        );
        assert_eq!(
            outcome.logs,
            "== container first ==\nlog-of-first\nerr-of-first\n\
             == container second ==\nlog-of-second\nerr-of-second\n\
             == container third ==\nlog-of-third\nerr-of-third\n",
            "{mode:?}"
        );
        let saved = std::fs::read_to_string(dir.path().join(LOGS_FILE)).expect("logs.txt");
        assert_eq!(saved, outcome.logs);
    }
}

#[tokio::test]
async fn a_failing_container_stops_the_run_with_its_exit_code() {
    for mode in MODES {
        let (dir, outcome) = run_in(
            mode,
            vec![
                script("ok", "echo one > \"$KRATIX_OUTPUT_DIR/one\""),
                script("broken", "echo about to fail; exit 3"),
                script("never", "echo three > \"$KRATIX_OUTPUT_DIR/three\""),
            ],
        )
        .await;
        assert_failed(&outcome, "broken", Some(3), "\"broken\" exited with code 3");
        assert!(outcome.logs.contains("about to fail"), "{mode:?}");
        assert!(!outcome.logs.contains("== container never =="), "{mode:?}");
        assert!(dir.path().join("output/one").exists(), "{mode:?}");
        assert!(
            !dir.path().join("output/three").exists(),
            "{mode:?}: later container ran"
        );
    }
}

#[tokio::test]
async fn a_run_past_its_timeout_is_killed() {
    for mode in MODES {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut req = request(
            dir.path(),
            mode,
            vec![
                script("quick", "true"),
                script(
                    "slow",
                    "sleep 600 & echo $! > \"$KRATIX_OUTPUT_DIR/pid\"; echo started; wait",
                ),
                script("never", "echo x > \"$KRATIX_OUTPUT_DIR/never\""),
            ],
        );
        req.timeout = Duration::from_secs(2);
        let outcome = run(req).await.expect("run");
        assert_eq!(
            outcome.result,
            RunResult::TimedOut {
                container: "slow".into()
            },
            "{mode:?}: {}",
            outcome.logs
        );
        assert!(
            outcome.logs.contains("started"),
            "{mode:?}: {}",
            outcome.logs
        );
        assert!(!dir.path().join("output/never").exists());
        if mode == Isolation::Process {
            // The background sleep was in the container's process group and must be gone.
            let pid = std::fs::read_to_string(dir.path().join("output/pid")).expect("pid");
            assert!(
                !process_is_running(pid.trim()),
                "background child {pid} survived"
            );
        }
    }
}

/// Alive and not a zombie; polls because SIGKILL delivery is asynchronous.
fn process_is_running(pid: &str) -> bool {
    for _ in 0..100 {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => return false,
            Ok(stat) => {
                let state = stat.rsplit(')').next().unwrap_or("").trim_start();
                if state.starts_with('Z') || state.starts_with('X') {
                    return false;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    true
}

#[tokio::test]
async fn containers_get_the_contract_environment_and_nothing_else() {
    for mode in MODES {
        let mut c = script(
            "env",
            "env | sort > \"$KRATIX_OUTPUT_DIR/env.txt\"; cp \"$KRATIX_INPUT_DIR/object.yaml\" \"$KRATIX_OUTPUT_DIR/object.yaml\"; touch \"$KRATIX_METADATA_DIR/marker\"",
        );
        c.env = vec![EnvVar {
            name: "GREETING".into(),
            value: Some("hello world".into()),
            value_from: None,
        }];
        let (dir, outcome) = run_in(mode, vec![c]).await;
        assert_eq!(
            outcome.result,
            RunResult::Succeeded,
            "{mode:?}: {}",
            outcome.logs
        );
        let env = file(&outcome, "env.txt");
        for line in [
            "GREETING=hello world",
            "KRATIX_WORKFLOW_ACTION=configure",
            "KRATIX_WORKFLOW_TYPE=resource",
            "KRATIX_PROMISE_NAME=database",
            "KRATIX_PIPELINE_NAME=instance",
            "KRATIX_OBJECT_KIND=Database",
            "KRATIX_OBJECT_NAME=mydb",
            "KRATIX_OBJECT_NAMESPACE=default",
            "KRATIX_CRD_PLURAL=databases",
        ] {
            assert!(
                env.lines().any(|l| l == line),
                "{mode:?}: no {line:?} in\n{env}"
            );
        }
        let want_output_dir = match mode {
            Isolation::Sandbox => "/kratix/output".to_string(),
            _ => dir.path().join("output").display().to_string(),
        };
        assert!(
            env.lines()
                .any(|l| l == format!("KRATIX_OUTPUT_DIR={want_output_dir}")),
            "{mode:?}:\n{env}"
        );
        // The test process has CARGO_* variables; none may leak into a container.
        assert!(
            !env.contains("CARGO_"),
            "{mode:?}: host environment leaked:\n{env}"
        );
        assert_eq!(
            file(&outcome, "object.yaml"),
            request(dir.path(), mode, vec![]).object_yaml
        );
        assert!(dir.path().join("metadata/marker").exists(), "{mode:?}");
    }
}

#[tokio::test]
async fn the_sandbox_writes_only_to_output_and_metadata_and_has_a_private_tmp() {
    let host_marker = tempfile::Builder::new()
        .prefix("kratix-host-marker")
        .tempfile_in("/tmp")
        .expect("marker in host /tmp");
    let marker_name = host_marker
        .path()
        .file_name()
        .and_then(|n| n.to_str())
        .expect("utf-8 name")
        .to_string();
    let dir = tempfile::tempdir().expect("tempdir");
    let probe = |label: &str, target: &str| {
        format!("if echo x > {target} 2>/dev/null; then echo {label}:written; else echo {label}:denied; fi >> \"$KRATIX_OUTPUT_DIR/report\"; ")
    };
    let mut body = String::new();
    body += &probe("etc", "/etc/kratix-sandbox-test");
    body += &probe("root", "/root/kratix-sandbox-test");
    body += &probe("workdir", &format!("{}/escaped", dir.path().display()));
    body += &probe("input", "/kratix/input/x");
    body += &probe("rootdir", "/kratix-sandbox-test");
    body += &probe("tmp", "/tmp/own-file");
    body += &probe("metadata", "/kratix/metadata/note");
    body += &format!(
        "if [ -e /tmp/{marker_name} ]; then echo hostmarker:visible; else echo hostmarker:hidden; fi >> \"$KRATIX_OUTPUT_DIR/report\""
    );
    let outcome = run(request(
        dir.path(),
        Isolation::Sandbox,
        vec![script("probe", &body)],
    ))
    .await
    .expect("run");
    assert_eq!(outcome.result, RunResult::Succeeded, "{}", outcome.logs);
    assert_eq!(
        file(&outcome, "report"),
        "etc:denied\nroot:denied\nworkdir:denied\ninput:denied\nrootdir:denied\n\
         tmp:written\nmetadata:written\nhostmarker:hidden\n"
    );
    assert!(!Path::new("/etc/kratix-sandbox-test").exists());
    assert!(!Path::new("/root/kratix-sandbox-test").exists());
    assert!(!dir.path().join("escaped").exists());
    assert!(
        !Path::new("/tmp/own-file").exists(),
        "sandbox /tmp is the host's"
    );
}

#[tokio::test]
async fn unsafe_output_is_refused_naming_the_file() {
    let cases = [
        (
            "ln -s /etc/passwd \"$KRATIX_OUTPUT_DIR/passwd\"",
            "output file passwd is a symbolic link",
        ),
        (
            "mkdir \"$KRATIX_OUTPUT_DIR/d\" && ln -s .. \"$KRATIX_OUTPUT_DIR/d/up\"",
            "output file d/up is a symbolic link",
        ),
        (
            "mkfifo \"$KRATIX_OUTPUT_DIR/pipe\"",
            "output file pipe is a fifo",
        ),
        (
            "touch \"$KRATIX_OUTPUT_DIR/$(printf 'caf\\351')\"",
            "output file caf\u{fffd} has a name that is not UTF-8",
        ),
    ];
    for mode in MODES {
        for (body, want) in cases {
            let (_dir, outcome) = run_in(
                mode,
                vec![script(
                    "render",
                    &format!("echo ok > \"$KRATIX_OUTPUT_DIR/ok.yaml\"; {body}"),
                )],
            )
            .await;
            assert_failed(&outcome, WORK_WRITER, None, want);
        }
    }
}

#[tokio::test]
async fn metadata_is_parsed_and_a_kratix_status_key_is_refused() {
    for mode in MODES {
        let (_dir, outcome) = run_in(
            mode,
            vec![script(
                "meta",
                "cd \"$KRATIX_METADATA_DIR\" && printf 'message: ready\\n' > status.yaml && \
                 printf -- '- matchLabels: {env: dev}\\n  directory: db\\n' > destination-selectors.yaml && \
                 printf 'retryAfter: 5m\\n' > workflow-control.yaml && mkdir \"$KRATIX_OUTPUT_DIR/db\"",
            )],
        )
        .await;
        assert_eq!(
            outcome.result,
            RunResult::Succeeded,
            "{mode:?}: {}",
            outcome.logs
        );
        assert_eq!(
            outcome.metadata.status,
            Some(serde_json::json!({"message": "ready"}))
        );
        assert_eq!(
            outcome.metadata.destination_selectors,
            vec![DestinationSelectorEntry {
                match_labels: [("env".to_string(), "dev".to_string())].into(),
                directory: Some("db".into()),
            }]
        );
        assert_eq!(
            outcome.metadata.workflow_control.retry_after,
            Some(Duration::from_secs(300))
        );

        let (_dir, outcome) = run_in(
            mode,
            vec![script(
                "meta",
                "printf 'kratix:\\n  x: 1\\n' > \"$KRATIX_METADATA_DIR/status.yaml\"",
            )],
        )
        .await;
        assert_failed(
            &outcome,
            STATUS_WRITER,
            None,
            "metadata/status.yaml must not set the reserved top-level key \"kratix\"",
        );

        let (_dir, outcome) = run_in(
            mode,
            vec![script(
                "meta",
                "printf 'nope: [\\n' > \"$KRATIX_METADATA_DIR/destination-selectors.yaml\"",
            )],
        )
        .await;
        assert_failed(
            &outcome,
            WORK_WRITER,
            None,
            "metadata/destination-selectors.yaml is not valid",
        );
    }
}

#[tokio::test]
async fn containers_without_command_use_the_image_map_or_fail_naming_the_image() {
    for mode in MODES {
        let dir = tempfile::tempdir().expect("tempdir");
        let mapped = Container {
            name: "mapped".into(),
            image: "acme/render:v1".into(),
            args: Some(vec!["from-args".into()]),
            ..Container::default()
        };
        let mut req = request(dir.path(), mode, vec![mapped.clone()]);
        req.images.insert(
            "acme/render:v1",
            vec![
                "sh".into(),
                "-c".into(),
                "echo \"$0\" > \"$KRATIX_OUTPUT_DIR/mapped\"".into(),
            ],
        );
        let outcome = run(req).await.expect("run");
        assert_eq!(
            outcome.result,
            RunResult::Succeeded,
            "{mode:?}: {}",
            outcome.logs
        );
        assert_eq!(file(&outcome, "mapped"), "from-args\n");

        let (dir, outcome) = run_in(
            mode,
            vec![
                script("first", "echo ran > \"$KRATIX_OUTPUT_DIR/first\""),
                Container {
                    name: "unmapped".into(),
                    image: "acme/unknown:v9".into(),
                    ..Container::default()
                },
            ],
        )
        .await;
        assert_failed(
            &outcome,
            "unmapped",
            None,
            "image \"acme/unknown:v9\" has no local command",
        );
        assert!(
            !dir.path().join("output/first").exists(),
            "{mode:?}: ran before refusing"
        );
    }
}

#[tokio::test]
async fn value_from_is_refused_naming_the_container() {
    let mut c = script("secretive", "true");
    c.env = vec![EnvVar {
        name: "TOKEN".into(),
        value: None,
        value_from: Some(serde_json::json!({"secretKeyRef": {"name": "s", "key": "k"}})),
    }];
    let (_dir, outcome) = run_in(Isolation::Process, vec![c]).await;
    assert_failed(
        &outcome,
        "secretive",
        None,
        "container \"secretive\": env \"TOKEN\" uses valueFrom",
    );
}

#[tokio::test]
async fn a_missing_program_fails_the_container() {
    for mode in MODES {
        let c = Container {
            name: "ghost".into(),
            command: Some(vec!["/nonexistent/kratix-program".into()]),
            ..Container::default()
        };
        let (_dir, outcome) = run_in(mode, vec![c]).await;
        match &outcome.result {
            RunResult::Failed { container, .. } => assert_eq!(container, "ghost"),
            other => panic!("{mode:?}: {other:?}"),
        }
        assert!(
            outcome.logs.contains("/nonexistent/kratix-program"),
            "{mode:?}: {}",
            outcome.logs
        );
    }
}

#[tokio::test]
async fn missing_bubblewrap_is_reported_with_the_fallback() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dirs = RunDirs::create(dir.path()).expect("dirs");
    let detail = probe_bubblewrap(Path::new("/nonexistent/bwrap"), &dirs)
        .await
        .expect_err("no such program");
    assert!(detail.contains("/nonexistent/bwrap"), "{detail}");
    let message = Error::BubblewrapUnavailable { detail }.to_string();
    assert!(
        message.contains("bubblewrap (bwrap) is missing"),
        "{message}"
    );
    assert!(message.contains("KRATIX_ISOLATION=process"), "{message}");

    probe_bubblewrap(Path::new(isolation::BWRAP), &dirs)
        .await
        .expect("bwrap is installed on this machine and must work");
}

#[tokio::test]
async fn dropping_a_run_kills_its_containers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let req = request(
        dir.path(),
        Isolation::Process,
        vec![script(
            "slow",
            "sleep 600 & echo $! > \"$TMPDIR/pid\" && mv \"$TMPDIR/pid\" \"$KRATIX_OUTPUT_DIR/pid\"; wait",
        )],
    );
    let pid_path = dir.path().join("output/pid");
    let mut running = Box::pin(run(req));
    let pid_written = async {
        while !pid_path.exists() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::select! {
        finished = &mut running => panic!("the run finished: {finished:?}"),
        waited = tokio::time::timeout(Duration::from_secs(60), pid_written) => {
            waited.expect("the container starts within a minute");
        }
    }
    drop(running);
    let pid = std::fs::read_to_string(&pid_path).expect("pid");
    assert!(
        !process_is_running(pid.trim()),
        "background child {pid} survived"
    );
}
