//! The platform's API with a real `kubectl`: pipelines on the host (through `KUBECONFIG`) and
//! in a real container engine (through the in-cluster service account: an image of
//! `local/busybox:1` plus the static kubectl) read their own request and a Secret they were
//! granted, are refused one they were not with Kubernetes' message, and wait for another
//! request with `kubectl wait`, suspending their workflow with `retryAfter` until it is there;
//! a run's token is refused once its run ended; people list, get, watch and wait with the
//! home's kubeconfig, and kube-rs's own client lists through it. The marketplace's app-stack
//! wait script's `kubectl` call, unchanged, waits for its database request through the API.

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};
use support::engine::Engine;
use support::{eventually, kubectl, Kratix};

const PATIENCE: Duration = Duration::from_secs(180);
const GROUP: &str = "test.kratix.io";
const SECRET_VALUE: &str = "granted-s3cret-value";

/// What every reader pipeline does; `K` is the kubectl to use, `KEEP` where to copy its
/// kubeconfig (host pipelines), both from the container's `env`.
const READER: &str = r#"K=${K:-kubectl}
echo "own: $($K get "$KRATIX_CRD_PLURAL" "$KRATIX_OBJECT_NAME" -o jsonpath='{.spec.size}')"
echo "granted: $($K get secret granted -o jsonpath='{.data.password}' | base64 -d)"
$K get secret other 2>&1 || true
if $K wait --for=condition=ConfigureWorkflowCompleted "gates.test.kratix.io/g1" --timeout=5s >/dev/null 2>&1; then
  echo "gate: ready"
else
  printf 'retryAfter: 2s\nmessage: waiting for the gate\n' > "$KRATIX_METADATA_DIR/workflow-control.yaml"
  echo "gate: not ready"
fi
if [ -n "$KEEP" ]; then cp "$KUBECONFIG" "$KEEP"; fi
"#;

/// A Promise offering `kind` (plural `<kind>s`, lowercase) in the test group, with the given
/// resource configure pipelines.
fn promise(name: &str, kind: &str, pipelines: Value) -> String {
    let plural = format!("{}s", kind.to_ascii_lowercase());
    json!({
        "apiVersion": "platform.kratix.io/v1alpha1",
        "kind": "Promise",
        "metadata": {"name": name},
        "spec": {
            "api": {
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": format!("{plural}.{GROUP}")},
                "spec": {
                    "group": GROUP,
                    "names": {"kind": kind, "plural": plural, "singular": kind.to_ascii_lowercase()},
                    "scope": "Namespaced",
                    "versions": [{"name": "v1alpha1", "served": true, "storage": true,
                        "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                            "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}},
                        // Its own columns, which kubectl and `kratix-rs get` both show.
                        "additionalPrinterColumns": [
                            {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                            {"name": "Reconciled", "type": "string",
                             "jsonPath": ".status.conditions[?(@.type==\"Reconciled\")].status"},
                            {"name": "Owner", "type": "string", "jsonPath": ".spec.owner"},
                        ]}],
                },
            },
            "workflows": {"resource": {"configure": pipelines}},
        },
    })
    .to_string()
}

/// The reader pipeline: its one container, and the rights it asks for (the Secret `granted`
/// by name, gates in its namespace).
fn reader_pipeline(container: Value) -> Value {
    json!([{
        "apiVersion": "platform.kratix.io/v1alpha1",
        "kind": "Pipeline",
        "metadata": {"name": "read"},
        "spec": {
            "containers": [container],
            "rbac": {"permissions": [
                {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"], "resourceNames": ["granted"]},
                {"apiGroups": [GROUP], "resources": ["gates"], "verbs": ["get", "list", "watch"]},
            ]},
        },
    }])
}

/// A Promise of kind Gate whose pipeline does nothing.
fn gate_promise() -> String {
    let pipeline = json!([{
        "apiVersion": "platform.kratix.io/v1alpha1",
        "kind": "Pipeline",
        "metadata": {"name": "open"},
        "spec": {"containers": [{"name": "open", "image": "local/sh", "command": ["sh", "-c", "true"]}]},
    }]);
    promise("gate", "Gate", pipeline)
}

fn request(kind: &str, name: &str, size: i64) -> String {
    json!({
        "apiVersion": format!("{GROUP}/v1alpha1"),
        "kind": kind,
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"size": size},
    })
    .to_string()
}

fn secrets() -> String {
    let secret = |name: &str, value: &str| {
        json!({"apiVersion": "v1", "kind": "Secret",
               "metadata": {"name": name, "namespace": "default"},
               "stringData": {"password": value}})
        .to_string()
    };
    format!(
        "{}\n---\n{}",
        secret("granted", SECRET_VALUE),
        secret("other", "other-value")
    )
}

/// A home served with `--api-addr` on loopback, and its kubeconfig once written.
fn served(k: &mut Kratix) -> PathBuf {
    served_on(k, "127.0.0.1:0")
}

fn served_on(k: &mut Kratix, addr: &str) -> PathBuf {
    k.start_serve_args(&["--api-addr", addr], &[]);
    let kubeconfig = k.home().join("kubeconfig");
    eventually(
        "serve wrote the kubeconfig",
        Duration::from_secs(30),
        || kubeconfig.exists().then_some(()),
    );
    kubeconfig
}

/// The last run's logs of the request `things/<name>`.
fn logs(k: &Kratix, name: &str) -> String {
    k.run(&["logs", "things", name]).stdout
}

/// Applies the Secrets, the reader's Promise with `container` and its request `t1`; waits
/// until the reader's logs say the gate is not ready, then opens the gate and waits for the
/// reader to see it; checks what the reader read and was refused.
fn reader_reads_waits_and_is_refused(k: &Kratix, container: Value) {
    k.apply_yaml(&secrets(), &[]).assert_ok();
    k.apply_yaml(&promise("thing", "Thing", reader_pipeline(container)), &[])
        .assert_ok();
    k.apply_yaml(&request("Thing", "t1", 3), &["--no-wait"])
        .assert_ok();
    eventually(
        "the reader suspended, waiting for the gate",
        PATIENCE,
        || logs(k, "t1").contains("gate: not ready").then_some(()),
    );
    let events = k.run(&["events", "things", "t1"]).stdout;
    assert!(events.contains("waiting for the gate"), "{events}");
    let first = logs(k, "t1");
    assert!(first.contains("own: 3\n"), "{first}");
    assert!(
        first.contains(&format!("granted: {SECRET_VALUE}\n")),
        "{first}"
    );
    let refused = format!(
        r#"Error from server (Forbidden): secrets "other" is forbidden: User "{READER_USER}" cannot get resource "secrets" in API group "" in the namespace "default""#
    );
    assert!(first.contains(&refused), "want {refused:?} in\n{first}");

    k.apply_yaml(&gate_promise(), &[]).assert_ok();
    k.apply_yaml(&request("Gate", "g1", 1), &[]).assert_ok();
    eventually("the reader saw the gate", PATIENCE, || {
        logs(k, "t1").contains("gate: ready").then_some(())
    });
}

/// The pipeline's account, as the Job executor names it: the Promise has no version, so
/// Kratix's name, the pipeline id.
const READER_USER: &str = "system:serviceaccount:default:thing-resource-configure-read";

#[test]
fn host_pipelines_and_people_use_the_api_with_kubectl() {
    let Some(kubectl) = kubectl::binary() else {
        return;
    };
    // Plain processes, so that the pipeline can keep its kubeconfig where the test reads it.
    let mut k = Kratix::new().with_env("KRATIX_ISOLATION", "process");
    let kubeconfig = served(&mut k);
    let kept = k.home().join("kept-kubeconfig");
    let container = json!({
        "name": "read", "image": "local/sh", "command": ["sh", "-c", READER],
        "env": [{"name": "K", "value": kubectl.display().to_string()},
                {"name": "KEEP", "value": kept.display().to_string()}],
    });
    reader_reads_waits_and_is_refused(&k, container);

    // The run that kept its kubeconfig has ended: its token is refused.
    eventually("the reader's workflow completed", PATIENCE, || {
        let obj = k.get_json("things", "t1", Some("default"))?;
        support::condition_is(&obj, "ConfigureWorkflowCompleted", "True").then_some(())
    });
    let (ok, _, err) = kubectl::run(&kubectl, &kept, &["get", "things", "t1"]);
    assert!(
        !ok && err.contains("You must be logged in to the server"),
        "{err}"
    );

    people_read_with_kubectl(&k, &kubectl, &kubeconfig);
    kube_rs_lists(&kubeconfig);

    // The tokens of a process that died are refused by the one that takes the home over.
    let old = k.home().join("old-kubeconfig");
    std::fs::rename(&kubeconfig, &old).expect("kubeconfig moved");
    let text = std::fs::read_to_string(&old).expect("kubeconfig");
    let doc: Value = serde_json::from_str(&text).expect("kubeconfig is JSON");
    let server = doc["clusters"][0]["cluster"]["server"]
        .as_str()
        .expect("server");
    let addr = server.trim_start_matches("https://").to_string();
    k.kill_serve();
    let kubeconfig = served_on(&mut k, &addr);
    let (ok, _, err) = kubectl::run(&kubectl, &old, &["get", "promises"]);
    assert!(
        !ok && err.contains("You must be logged in to the server"),
        "{err}"
    );
    let (ok, out, err) = kubectl::run(&kubectl, &kubeconfig, &["get", "promises"]);
    assert!(ok && out.contains("thing"), "{out}{err}");
}

/// A waiting `apply` that runs the controllers itself serves the API to its pipelines too; here
/// in the bubblewrap sandbox (where it runs), which sees its kubeconfig at `/kratix/api`.
#[test]
fn a_waiting_command_serves_the_api_to_its_pipelines() {
    let Some(kubectl) = kubectl::binary() else {
        return;
    };
    let k = Kratix::new();
    let script = format!(
        "echo \"kubeconfig: $KUBECONFIG\"; echo \"own: $({} get \"$KRATIX_CRD_PLURAL\" \"$KRATIX_OBJECT_NAME\" -o jsonpath='{{.spec.size}}')\"",
        kubectl.display()
    );
    let pipeline = json!([{
        "apiVersion": "platform.kratix.io/v1alpha1",
        "kind": "Pipeline",
        "metadata": {"name": "own"},
        "spec": {"containers": [{"name": "own", "image": "local/sh", "command": ["sh", "-c", script]}]},
    }]);
    k.apply_yaml(&promise("thing", "Thing", pipeline), &[])
        .assert_ok();
    k.apply_yaml(&request("Thing", "t1", 7), &[]).assert_ok();
    let logs = logs(&k, "t1");
    assert!(logs.contains("own: 7\n"), "{logs}");
    let sandboxed = std::process::Command::new("bwrap")
        .args(["--ro-bind", "/", "/", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if sandboxed {
        assert!(
            logs.contains("kubeconfig: /kratix/api/kubeconfig"),
            "{logs}"
        );
    }
}

/// What people do with the home's kubeconfig.
fn people_read_with_kubectl(k: &Kratix, kubectl: &Path, kubeconfig: &Path) {
    let run = |args: &[&str]| kubectl::run(kubectl, kubeconfig, args);
    let (ok, out, err) = run(&["get", "promises"]);
    assert!(
        ok && out.contains("thing") && out.contains("gate"),
        "{out}{err}"
    );
    let (ok, out, err) = run(&["get", "things", "-A"]);
    assert!(
        ok && out.contains("default") && out.contains("t1"),
        "{out}{err}"
    );
    // The columns the Promise's API declares, as a CRD's would be on a cluster.
    let header: Vec<&str> = out
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        ["NAMESPACE", "NAME", "SIZE", "RECONCILED", "OWNER"],
        "{out}"
    );
    // kubectl prints the table the API serves: the columns and cells `kratix-rs get` prints.
    for args in [
        &["get", "promises"][..],
        &["get", "things", "-A"],
        &["get", "promise", "thing"],
        &["get", "secrets", "-n", "default"],
    ] {
        let lines = |text: &str| -> Vec<String> {
            text.lines()
                .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
                .collect()
        };
        eventually(
            &format!("kubectl {args:?} printed as kratix-rs does"),
            Duration::from_secs(30),
            || {
                let (ok, out, err) = run(args);
                assert!(ok, "{out}{err}");
                let ours = k.run(args);
                ours.assert_ok();
                let header = |t: &str| t.lines().next().unwrap_or_default().trim_end().to_string();
                assert_eq!(header(&out), header(&ours.stdout), "kubectl {args:?}");
                (lines(&out) == lines(&ours.stdout)).then_some(())
            },
        );
    }
    let (ok, out, err) = run(&["get", "thing", "t1", "-o", "jsonpath={.spec.size}"]);
    assert!(ok && out == "3", "{out}{err}");
    let (ok, out, err) = run(&["get", "things.test.kratix.io", "t1", "-o", "json"]);
    let obj: Value = serde_json::from_str(&out).unwrap_or_else(|_| panic!("{out}{err}"));
    assert!(ok && obj["kind"] == "Thing", "{out}");
    let (ok, out, err) = run(&[
        "get",
        "things",
        "-A",
        "--field-selector",
        "metadata.name=t1",
        "-o",
        "name",
    ]);
    assert!(ok && out.trim() == "thing.test.kratix.io/t1", "{out}{err}");
    let (ok, out, err) = run(&["get", "things", "-A", "-l", "no-such=label"]);
    assert!(ok && !out.contains("t1"), "{out}{err}");
    // Secret values are not shown to people: `data` reads `<redacted>` once decoded.
    let (ok, out, err) = run(&["get", "secret", "granted", "-o", "yaml"]);
    assert!(ok && !out.contains(SECRET_VALUE), "{out}{err}");
    assert!(out.contains("PHJlZGFjdGVkPg=="), "{out}");
    let (ok, out, err) = run(&["describe", "promise", "thing"]);
    assert!(ok && out.contains("Name:         thing"), "{out}{err}");
    let (ok, _, err) = run(&["get", "things", "nope"]);
    assert!(
        !ok && err.contains(r#"things.test.kratix.io "nope" not found"#),
        "{err}"
    );
    let (ok, _, err) = run(&["delete", "things", "t1"]);
    assert!(!ok && err.contains("read-only"), "{err}");

    // A watch sees a new request, and `wait` its condition.
    let mut watch = std::process::Command::new(kubectl)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["get", "things", "-w", "--request-timeout=120s"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("kubectl get -w starts");
    let stdout = watch.stdout.take().expect("stdout");
    let (lines_tx, lines) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            let _ = lines_tx.send(line);
        }
    });
    eventually("the watch listed t1", Duration::from_secs(30), || {
        lines.try_iter().any(|l| l.contains("t1")).then_some(())
    });
    k.apply_yaml(&request("Thing", "t2", 4), &["--no-wait"])
        .assert_ok();
    eventually("the watch saw t2", Duration::from_secs(60), || {
        lines.try_iter().any(|l| l.contains("t2")).then_some(())
    });
    let _ = watch.kill();
    let _ = watch.wait();
    let (ok, out, err) = run(&[
        "wait",
        "--for=condition=ConfigureWorkflowCompleted",
        "things/t2",
        "--timeout=150s",
    ]);
    assert!(ok && out.contains("condition met"), "{out}{err}");

    // Any other token is refused.
    let text = std::fs::read_to_string(kubeconfig).expect("kubeconfig");
    let doc: Value = serde_json::from_str(&text).expect("kubeconfig is JSON");
    let token = doc["users"][0]["user"]["token"].as_str().expect("token");
    let forged = k.home().join("forged-kubeconfig");
    std::fs::write(&forged, text.replace(token, "not-a-token")).expect("forged");
    let (ok, _, err) = kubectl::run(kubectl, &forged, &["get", "promises"]);
    assert!(
        !ok && err.contains("You must be logged in to the server"),
        "{err}"
    );
}

/// kube-rs's own client lists requests through the API.
fn kube_rs_lists(kubeconfig: &Path) {
    use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
    // Another crate of the test build may enable a second crypto provider: name one.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let names = runtime.block_on(async {
        let text = std::fs::read_to_string(kubeconfig).expect("kubeconfig");
        let parsed = kube::config::Kubeconfig::from_yaml(&text).expect("kubeconfig parses");
        let config = kube::Config::from_custom_kubeconfig(parsed, &Default::default())
            .await
            .expect("config");
        let client = kube::Client::try_from(config).expect("client");
        let gvk = GroupVersionKind::gvk(GROUP, "v1alpha1", "Thing");
        let resource = ApiResource::from_gvk_with_plural(&gvk, "things");
        let api: kube::Api<DynamicObject> = kube::Api::all_with(client, &resource);
        api.list(&Default::default())
            .await
            .expect("list through the API")
            .items
            .into_iter()
            .filter_map(|o| o.metadata.name)
            .collect::<Vec<_>>()
    });
    assert_eq!(names, ["t1", "t2"]);
}

/// The reader image: `local/busybox:1`, the static kubectl, the reader script as entrypoint.
fn reader_image(engine: &Engine, kubectl: &Path) -> &'static str {
    const TAG: &str = "kratix-test.local/platform-api-reader:v1";
    let dir = tempfile::tempdir().expect("context");
    std::fs::copy(kubectl, dir.path().join("kubectl")).expect("kubectl copied");
    std::fs::write(dir.path().join("reader.sh"), format!("#!/bin/sh\n{READER}")).expect("script");
    std::fs::write(
        dir.path().join("Dockerfile"),
        "FROM local/busybox:1\nCOPY kubectl /usr/local/bin/kubectl\nCOPY reader.sh /reader.sh\n\
         RUN chmod 0755 /usr/local/bin/kubectl /reader.sh\nENTRYPOINT [\"/reader.sh\"]\n",
    )
    .expect("Dockerfile");
    engine.build(TAG, dir.path());
    TAG
}

#[test]
fn container_pipelines_use_the_api_through_their_service_account() {
    let Some(kubectl) = kubectl::binary() else {
        return;
    };
    let Some(engine) = Engine::get() else { return };
    let image = reader_image(&engine, &kubectl);
    let mut k = Kratix::new().with_env("DOCKER_HOST", &engine.docker_host);
    served(&mut k);
    let container = json!({"name": "read", "image": image, "imagePullPolicy": "Never"});
    reader_reads_waits_and_is_refused(&k, container);
}

/// The marketplace's app-stack waits for its database request with this script's `kubectl`
/// call, unchanged (same command, flags and YAML output), from
/// https://github.com/syntasso/kratix-marketplace/blob/8a35c1854835ca7df862960ecfe83b733d7e81f7/app-stack/workflows/resource/configure/wait-for-dependencies/wait-for-dependencies/scripts/wait-for-dependencies
/// Around it, what the script does with the answer: the `WorksSucceeded` condition's status
/// (read with awk here, as the host's `yq` may not be mikefarah's), the status it writes, and
/// `retryAfter` while the database is not there (its 30s shortened).
const APP_STACK_WAIT: &str = r#"set -eu
PATH="$KUBECTL_DIR:$PATH"
app_namespace=default
database_name="$DATABASE"
tmp_dir="$(mktemp -d)"
database_ready=false
wait_messages=""
if kubectl get postgresql "${database_name}" -n "${app_namespace}" -o yaml > "${tmp_dir}/postgresql.yaml" 2>/dev/null; then
  database_ready_condition="$(
    awk '/^ *- /{s=""} /^ *-? *status:/{s=$NF} /^ *-? *type: WorksSucceeded$/{print s}' "${tmp_dir}/postgresql.yaml" \
    | tr -d '"' | tail -n 1
  )"
  if [ "${database_ready_condition}" = "True" ]; then
    database_ready=true
  else
    wait_messages="postgresql ${database_name} is not ready or connection details have not been surfaced yet"
  fi
else
  wait_messages="postgresql ${database_name} does not exist yet"
fi
if [ -n "${wait_messages}" ]; then status_message="Waiting for dependencies"; else status_message="Dependencies ready"; fi
echo "${status_message}: ${wait_messages}"
cat > "$KRATIX_METADATA_DIR/status.yaml" <<EOS
message: ${status_message}
dependencies:
  database:
    requestName: "${database_name}"
    ready: ${database_ready}
EOS
if [ -n "${wait_messages}" ]; then
  cat > "$KRATIX_METADATA_DIR/workflow-control.yaml" <<EOS
retryAfter: 5s
maxAttempts: 10
suspend: false
message: "${wait_messages}"
EOS
fi
"#;

#[test]
fn the_marketplace_app_stack_waits_for_its_database_through_the_api() {
    let Some(kubectl) = kubectl::binary() else {
        return;
    };
    let mut k = Kratix::new().with_env("KRATIX_ISOLATION", "process");
    served(&mut k);
    let open = json!([{
        "apiVersion": "platform.kratix.io/v1alpha1",
        "kind": "Pipeline",
        "metadata": {"name": "open"},
        "spec": {"containers": [{"name": "open", "image": "local/sh", "command": ["sh", "-c", "true"]}]},
    }]);
    k.apply_yaml(&promise("postgresql", "Postgresql", open), &[])
        .assert_ok();
    let kubectl_dir = kubectl.parent().expect("kubectl's folder").display();
    // The rights app-stack's wait pipeline asks for.
    let wait = json!([{
        "apiVersion": "platform.kratix.io/v1alpha1",
        "kind": "Pipeline",
        "metadata": {"name": "wait-for-dependencies"},
        "spec": {
            "containers": [{
                "name": "wait-for-dependencies", "image": "local/sh",
                "command": ["sh", "-c", APP_STACK_WAIT],
                "env": [{"name": "KUBECTL_DIR", "value": kubectl_dir.to_string()},
                        {"name": "DATABASE", "value": "db1"}],
            }],
            "rbac": {"permissions": [
                {"apiGroups": [GROUP], "resources": ["postgresqls"], "verbs": ["get", "list"]},
            ]},
        },
    }]);
    k.apply_yaml(&promise("app", "App", wait), &[]).assert_ok();
    k.apply_yaml(&request("App", "a1", 1), &["--no-wait"])
        .assert_ok();
    let logs = |name: &str| k.run(&["logs", "apps", name]).stdout;
    eventually("the app waited for its database", PATIENCE, || {
        logs("a1")
            .contains("Waiting for dependencies: postgresql db1 does not exist yet")
            .then_some(())
    });

    k.apply_yaml(&request("Postgresql", "db1", 1), &[])
        .assert_ok();
    let app = eventually("the app's workflow completed", PATIENCE, || {
        let obj = k.get_json("apps", "a1", Some("default"))?;
        support::condition_is(&obj, "ConfigureWorkflowCompleted", "True").then_some(obj)
    });
    assert_eq!(app["status"]["message"], "Dependencies ready", "{app}");
    assert_eq!(
        app["status"]["dependencies"]["database"]["ready"], true,
        "{app}"
    );
    let last = logs("a1");
    assert!(last.contains("Dependencies ready: \n"), "{last}");
}
