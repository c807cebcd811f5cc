//! What a pipeline sees and may do: its environment, the sandbox, its output and metadata
//! checked, images, refused fields, missing programs.

use super::*;

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
