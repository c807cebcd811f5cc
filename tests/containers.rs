//! The container executor against a real Docker Engine (`scripts/testworld start DIR --engine`): images built
//! into it here, pipelines run from them through the binary. Skipped with a NOTE without an
//! engine (see tests/support/engine.rs); the no-engine case always runs.

mod support;

use std::time::Duration;

use support::engine::Engine;
use support::{git_destination_yaml, Kratix};

/// A probe image: prints its arguments, user and variables, and writes a ConfigMap named after
/// its container to the output.
const PROBE: &str = "kratix-test.local/probe:v1";
const PROBE_NONROOT: &str = "kratix-test.local/probe-nonroot:v1";

const PROBE_SCRIPT: &str = r#"#!/bin/sh
echo "args: $*"
echo "uid: $(id -u)"
echo "foo: ${FOO:-unset} promise: $KRATIX_PROMISE_NAME version: ${KRATIX_PROMISE_VERSION:-unset} type: $KRATIX_WORKFLOW_TYPE"
if touch /rootfs-probe 2>/dev/null; then echo "rootfs: writable"; else echo "rootfs: read-only"; fi
test -f /kratix/input/object.yaml && echo "input: present"
cat > "/kratix/output/$NAME.yaml" <<DOC
apiVersion: v1
kind: ConfigMap
metadata:
  name: $NAME
  namespace: default
data:
  uid: "$(id -u)"
DOC
"#;

fn images(engine: &Engine) {
    engine.build_from(
        PROBE,
        "FROM local/busybox:1\nCOPY probe.sh /probe.sh\nENTRYPOINT [\"/probe.sh\", \"entry\"]\nCMD [\"cmd-default\"]\n",
        &[("probe.sh", PROBE_SCRIPT)],
    );
    engine.build_from(PROBE_NONROOT, &format!("FROM {PROBE}\nUSER 1000\n"), &[]);
}

/// A home with a Git store and a Destination labelled `environment: dev`. `KRATIX_EXECUTOR` is
/// the default (`auto`), which runs a `command` the host has (such as `sh`) on the host.
fn home(engine: &Engine) -> Kratix {
    let k = Kratix::new().with_env("DOCKER_HOST", &engine.docker_host);
    k.apply_yaml(
        &git_destination_yaml("store.git", "dev", "{environment: dev}"),
        &[],
    )
    .assert_ok();
    k
}

/// A Promise whose promise configure pipeline `configure` has these containers (YAML list items,
/// indented for `containers:`).
fn promise(name: &str, containers: &str, pipeline_extra: &str) -> String {
    format!(
        "apiVersion: platform.kratix.io/v1alpha1\nkind: Promise\nmetadata:\n  name: {name}\nspec:\n  \
         destinationSelectors:\n  - matchLabels:\n      environment: dev\n  workflows:\n    promise:\n      \
         configure:\n      - apiVersion: platform.kratix.io/v1alpha1\n        kind: Pipeline\n        \
         metadata:\n          name: configure\n        spec:\n{pipeline_extra}          containers:\n{containers}"
    )
}

fn git(repo: &std::path::Path, args: &[&str]) -> String {
    let out = testkit::hermetic_git_command(std::path::Path::new("/"))
        .arg("--git-dir")
        .arg(repo)
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The section of `logs` output for one container.
fn section<'a>(logs: &'a str, container: &str) -> &'a str {
    let head = format!("== container {container} ==\n");
    let start = logs
        .find(&head)
        .map_or_else(|| panic!("no {head:?} in\n{logs}"), |i| i + head.len());
    let rest = &logs[start..];
    &rest[..rest.find("== ").unwrap_or(rest.len())]
}

#[test]
fn containers_run_from_their_images_with_kubernetes_semantics() {
    let Some(engine) = Engine::get() else { return };
    images(&engine);
    let k = home(&engine);
    let env = |name: &str| {
        format!("            env: [{{name: NAME, value: {name}}}, {{name: FOO, value: bar}}]\n")
    };
    let containers = [
        format!("          - name: image-only\n            image: {PROBE}\n{}", env("image-only")),
        format!("          - name: args-only\n            image: {PROBE}\n            args: [a1, a2]\n{}", env("args-only")),
        format!("          - name: command-only\n            image: {PROBE}\n            command: [/probe.sh]\n{}", env("command-only")),
        format!("          - name: command-args\n            image: {PROBE}\n            command: [/probe.sh, c1]\n            args: [c2]\n{}", env("command-args")),
        format!("          - name: non-root\n            image: {PROBE_NONROOT}\n{}", env("non-root")),
        format!(
            "          - name: locked\n            image: {PROBE}\n            securityContext:\n              runAsUser: 2000\n              \
             runAsGroup: 2000\n              readOnlyRootFilesystem: true\n              allowPrivilegeEscalation: false\n              \
             capabilities: {{drop: [ALL]}}\n{}",
            env("locked")
        ),
    ]
    .concat();
    k.apply_yaml(&promise("probe", &containers, ""), &[])
        .assert_ok();

    let logs = k.run(&["logs", "promise", "probe"]);
    logs.assert_ok();
    let logs = logs.stdout;
    let cases = [
        ("image-only", "args: entry cmd-default\nuid: 0\n"),
        ("args-only", "args: entry a1 a2\n"),
        ("command-only", "args: \n"),
        ("command-args", "args: c1 c2\n"),
        ("non-root", "uid: 1000\n"),
        ("locked", "uid: 2000\n"),
    ];
    for (container, want) in cases {
        let got = section(&logs, container);
        assert!(got.contains(want), "{container}: want {want:?} in\n{got}");
        assert!(
            got.contains("foo: bar promise: probe version: not-set type: promise"),
            "{container}: {got}"
        );
        assert!(got.contains("input: present"), "{container}: {got}");
    }
    assert!(
        section(&logs, "locked").contains("rootfs: read-only"),
        "{logs}"
    );
    assert!(
        section(&logs, "image-only").contains("rootfs: writable"),
        "{logs}"
    );

    // Every container's output is in the store, in one commit for the pipeline.
    let repo = k.home().join("store.git");
    let files = git(&repo, &["ls-tree", "-r", "--name-only", "main"]);
    for container in [
        "image-only",
        "args-only",
        "command-only",
        "command-args",
        "non-root",
        "locked",
    ] {
        assert!(
            files.contains(&format!("/{container}.yaml")),
            "{container} missing from\n{files}"
        );
    }
    assert!(files.lines().all(|f| f.starts_with("dev/")), "{files}");
    // Nothing of the run is left in the engine.
    assert!(engine
        .containers_labelled("io.kratix-rs.container", "locked")
        .is_empty());
}

/// Applies a Promise that must fail; returns what `apply` said.
fn failing(k: &Kratix, name: &str, containers: &str, pipeline_extra: &str) -> String {
    let run = k.apply_yaml(
        &promise(name, containers, pipeline_extra),
        &["--timeout", "120"],
    );
    run.assert_failed();
    format!("{}{}", run.stdout, run.stderr)
}

#[test]
fn what_cannot_run_fails_with_a_clear_error() {
    let Some(engine) = Engine::get() else { return };
    images(&engine);
    let k = home(&engine);

    let out = failing(
        &k,
        "selinux",
        &format!("          - name: labelled\n            image: {PROBE}\n            securityContext: {{seLinuxOptions: {{level: s0}}}}\n"),
        "",
    );
    assert!(
        out.contains("pipeline \"configure\", container \"labelled\": securityContext.seLinuxOptions is not supported"),
        "{out}"
    );

    let missing = "kratix-test.local/absent:v1";
    engine.remove_image(missing);
    let out = failing(
        &k,
        "never",
        &format!("          - name: never\n            image: {missing}\n            imagePullPolicy: Never\n"),
        "",
    );
    assert!(
        out.contains(&format!(
            "image \"{missing}\" is not in the container engine and imagePullPolicy is Never"
        )),
        "{out}"
    );

    let k = k.with_env("KRATIX_EXECUTOR", "container");
    let out = failing(
        &k,
        "exits",
        &format!("          - name: exits\n            image: {PROBE}\n            command: [sh, -c, 'exit 3']\n"),
        "",
    );
    assert!(
        out.contains("container \"exits\" exited with code 3"),
        "{out}"
    );
}

#[test]
fn pull_policy_always_pulls_and_never_shows_the_secret() {
    let Some(engine) = Engine::get() else { return };
    images(&engine);
    let k = home(&engine);
    // IfNotPresent with the image present: no pull (the registry does not exist).
    let local = format!("{}:5999/kratix-test/probe:v1", engine.host_ip);
    let (ok, _, err) = engine.docker(&["tag", PROBE, &local]);
    assert!(ok, "{err}");
    k.apply_yaml(
        &promise(
            "present",
            &format!("          - name: present\n            image: {local}\n            env: [{{name: NAME, value: present}}]\n"),
            "",
        ),
        &[],
    )
    .assert_ok();
    let logs = k.run(&["logs", "promise", "present"]).stdout;
    assert!(!logs.contains("pulling image"), "{logs}");

    // Always: a pull is tried, even though the image is there, and fails naming the image.
    let latest = format!("{}:5999/kratix-test/probe:latest", engine.host_ip);
    let (ok, _, err) = engine.docker(&["tag", PROBE, &latest]);
    assert!(ok, "{err}");
    let password = "s3cr3t-hunter2";
    let auth = base64_of(&format!("puller:{password}"));
    let secret = format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: regcred\n  namespace: kratix-platform-system\n\
         type: kubernetes.io/dockerconfigjson\nstringData:\n  .dockerconfigjson: '{{\"auths\":{{\"{}:5999\":{{\"username\":\"puller\",\"password\":\"{password}\",\"auth\":\"{auth}\"}}}}}}'\n",
        engine.host_ip
    );
    k.apply_yaml(&secret, &[]).assert_ok();
    let out = failing(
        &k,
        "latest",
        &format!("          - name: latest\n            image: {latest}\n"),
        "          imagePullSecrets: [{name: regcred}]\n",
    );
    assert!(
        out.contains(&format!("cannot pull image \"{latest}\"")),
        "{out}"
    );
    let logs = k.run(&["logs", "promise", "latest"]).stdout;
    let status = k.run(&["get", "promise", "latest", "-o", "yaml"]).stdout;
    for text in [
        &out,
        &logs,
        &status,
        &k.run(&["get", "pipelineruns", "-A", "-o", "yaml"]).stdout,
    ] {
        assert!(
            !text.contains(password) && !text.contains(&auth),
            "secret shown:\n{text}"
        );
    }
}

/// A pull from a real registry with basic auth: the Pipeline's pull secret is what lets it
/// in, and `apply` says that the image is being pulled for as long as the pull lasts (the
/// registry is held closed until the test has read that line).
#[test]
fn a_pull_from_a_registry_shows_in_applys_progress_with_the_pull_secrets_credentials() {
    use std::io::BufRead;
    let Some(engine) = Engine::get() else { return };
    images(&engine);
    let password = "pull-pw-7c1e";
    let registry = support::registry::Registry::start("puller", password);
    // Pushed with a login of this test's own, then gone from the engine: only a pull brings it.
    let logins = tempfile::tempdir().expect("docker config folder");
    let env = [("DOCKER_CONFIG", logins.path().to_str().expect("UTF-8 path"))];
    let pushed = format!("127.0.0.1:{}/kratix-test/pulled:v1", registry.port);
    let registry_host = format!("127.0.0.1:{}", registry.port);
    for args in [
        vec!["login", &registry_host, "-u", "puller", "-p", password],
        vec!["tag", PROBE, &pushed],
        vec!["push", &pushed],
        vec!["rmi", &pushed],
    ] {
        let (ok, _, err) = engine.docker_with(&env, &args);
        assert!(ok, "docker {args:?}: {err}");
    }
    let gate = support::registry::Gate::closed_in_front_of(registry.port);
    let gated = format!("127.0.0.1:{}", gate.port);
    let image = format!("{gated}/kratix-test/pulled:v1");
    let auth = base64_of(&format!("puller:{password}"));
    let k = home(&engine);
    k.apply_yaml(
        &format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: regcred\n  namespace: kratix-platform-system\n\
             type: kubernetes.io/dockerconfigjson\nstringData:\n  .dockerconfigjson: '{{\"auths\":{{\"{gated}\":{{\"auth\":\"{auth}\"}}}}}}'\n"
        ),
        &[],
    )
    .assert_ok();

    let yaml = promise(
        "pulled",
        &format!("          - name: pulled\n            image: {image}\n            env: [{{name: NAME, value: pulled}}]\n"),
        "          imagePullSecrets: [{name: regcred}]\n",
    );
    let mut apply = k.spawn_with_stdin(&["apply", "-f", "-", "--timeout", "120"], &yaml);
    let stderr = apply.stderr.take().expect("stderr is piped");
    let (lines, seen) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let pulling = format!("running: pulling image {image}");
    let mut said = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while let Ok(line) =
        seen.recv_timeout(deadline.saturating_duration_since(std::time::Instant::now()))
    {
        if line.contains(&pulling) {
            gate.open();
        }
        said.push(line);
    }
    let _ = apply.kill();
    let status = apply.wait().expect("apply ends");
    let said = said.join("\n");
    assert!(said.contains(&pulling), "no pull shown:\n{said}");
    assert!(status.success(), "apply failed:\n{said}");
    let logs = k.run(&["logs", "promise", "pulled"]).stdout;
    assert!(logs.contains(&format!("pulled image {image}")), "{logs}");
    let repo = k.home().join("store.git");
    let files = git(&repo, &["ls-tree", "-r", "--name-only", "main"]);
    assert!(
        files
            .lines()
            .any(|f| f.starts_with("dev/dependencies/pulled/configure/")),
        "{files}"
    );
    for text in [
        &said,
        &logs,
        &k.run(&["get", "promise", "pulled", "-o", "yaml"]).stdout,
        &k.run(&["get", "pipelineruns", "-A", "-o", "yaml"]).stdout,
    ] {
        assert!(
            !text.contains(password) && !text.contains(&auth),
            "secret shown:\n{text}"
        );
    }
    let (_, _, _) = engine.docker(&["rmi", &image]);
}

fn base64_of(text: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(text)
}

#[test]
fn a_timeout_kills_the_container() {
    let Some(engine) = Engine::get() else { return };
    images(&engine);
    let k = home(&engine)
        .with_env("KRATIX_PIPELINE_TIMEOUT", "3")
        .with_env("KRATIX_EXECUTOR", "container");
    let out = failing(
        &k,
        "slow",
        &format!("          - name: slow-sleeper\n            image: {PROBE}\n            command: [sh, -c, 'echo started; sleep 60']\n"),
        "",
    );
    assert!(
        out.to_lowercase().contains("timed out") || out.contains("timeout"),
        "{out}"
    );
    assert!(
        engine
            .containers_labelled("io.kratix-rs.container", "slow-sleeper")
            .is_empty(),
        "the container is gone"
    );
    let logs = k.run(&["logs", "promise", "slow"]).stdout;
    assert!(section(&logs, "slow-sleeper").contains("started"), "{logs}");
}

#[test]
fn a_killed_serve_leaves_no_container_behind() {
    let Some(engine) = Engine::get() else { return };
    images(&engine);
    let mut k = home(&engine).with_env("KRATIX_EXECUTOR", "container");
    let name = "crash-sleeper";
    let containers = format!(
        "          - name: {name}\n            image: {PROBE}\n            command: [sh, -c, 'sleep 12']\n"
    );
    k.start_serve();
    k.apply_yaml(&promise("crash", &containers, ""), &["--no-wait"])
        .assert_ok();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let first = loop {
        if let Some(id) = engine
            .containers_labelled("io.kratix-rs.container", name)
            .pop()
        {
            break id;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no container ran:\n{}\n{}\n{:?}",
            k.serve_log(),
            k.run(&["get", "promise", "crash", "-o", "yaml"]).stdout,
            k.list_json("pipelineruns", &["-A"])
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    k.kill_serve();
    assert_eq!(
        engine.containers_labelled("io.kratix-rs.container", name),
        vec![first.clone()],
        "left running by the killed serve"
    );
    k.start_serve();
    support::eventually("the leftover is removed", Duration::from_secs(60), || {
        (!engine
            .containers_labelled("io.kratix-rs.container", name)
            .contains(&first))
        .then_some(())
    });
    let succeeded = |k: &Kratix| {
        k.list_json("pipelineruns", &["-A"])
            .iter()
            .filter(|r| r["status"]["phase"] == "Succeeded")
            .count()
    };
    support::eventually("the run completes", Duration::from_secs(120), || {
        (succeeded(&k) > 0).then_some(())
    });
    k.stop_serve();
    assert_eq!(succeeded(&k), 1, "the run completed once");
    assert!(engine
        .containers_labelled("io.kratix-rs.container", name)
        .is_empty());
}

#[test]
fn without_an_engine_the_error_names_the_image() {
    let k = Kratix::new().with_env("DOCKER_HOST", "unix:///nonexistent/kratix-test/docker.sock");
    let run = k.apply_yaml(
        &promise(
            "noengine",
            "          - name: only-image\n            image: ghcr.io/acme/render:v1\n",
            "",
        ),
        &["--timeout", "60"],
    );
    run.assert_failed();
    let out = format!("{}{}", run.stdout, run.stderr);
    assert!(
        out.contains("image \"ghcr.io/acme/render:v1\" runs in a container engine"),
        "{out}"
    );
    assert!(out.contains("start Docker or Podman"), "{out}");
}

/// The marketplace's pipeline image name, built here from our stand-in.
const MARKETPLACE_IMAGE: &str =
    "ghcr.io/syntasso/kratix-marketplace/redis-configure-pipeline:v0.1.0";

/// Applies `promise.yaml` then `resource-request.yaml` of `dir` and checks the Git store: one
/// commit per pipeline, files at Kratix's paths.
fn redis_settles(engine: &Engine, dir: &std::path::Path) {
    let k = home(engine);
    let promise = k.run(&[
        "apply",
        "-f",
        &dir.join("promise.yaml").display().to_string(),
    ]);
    promise.assert_ok();
    let request = k.run(&[
        "apply",
        "-f",
        &dir.join("resource-request.yaml").display().to_string(),
    ]);
    request.assert_ok();
    let repo = k.home().join("store.git");
    let files = git(&repo, &["ls-tree", "-r", "--name-only", "main"]);
    let dependencies: Vec<&str> = files
        .lines()
        .filter(|f| f.starts_with("dev/dependencies/redis/promise-configure/"))
        .collect();
    let resources: Vec<&str> = files
        .lines()
        .filter(|f| f.starts_with("dev/resources/default/redis/example/instance-configure/"))
        .collect();
    assert!(!dependencies.is_empty(), "no dependencies in\n{files}");
    assert!(
        resources
            .iter()
            .any(|f| f.ends_with("/redis-instance.yaml")),
        "no instance in\n{files}"
    );
    let instance = git(&repo, &["show", &format!("main:{}", resources[0])]);
    assert!(instance.contains("name: example"), "{instance}");
    for prefix in [
        "dev/dependencies/redis/promise-configure/",
        "dev/resources/default/redis/example/instance-configure/",
    ] {
        let commits = git(&repo, &["log", "--format=%H", "main", "--", prefix]);
        assert_eq!(
            commits.lines().count(),
            1,
            "one commit for {prefix}:\n{commits}"
        );
    }
}

#[test]
fn the_marketplace_redis_promise_settles_with_its_pipelines_in_containers() {
    let Some(engine) = Engine::get() else { return };
    let fixture = support::fixtures().join("marketplace/redis");
    engine.build(MARKETPLACE_IMAGE, &fixture.join("pipeline"));
    redis_settles(&engine, &fixture);
    // A checkout of the marketplace (its newest files), when one is at hand.
    if let Some(dir) = std::env::var_os("KRATIX_MARKETPLACE_DIR").map(std::path::PathBuf::from) {
        redis_settles(&engine, &dir.join("redis"));
    }
}
