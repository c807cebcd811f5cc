//! Credentials never leak. State stores get their credentials from Secrets (HTTPS basic auth, SSH
//! keys, S3 keys) or, for Git, from the URL itself (`http://user:password@host/…`). With real
//! servers on loopback, random marker values as credentials, and every command (`serve`
//! included) logging at trace level, this test looks for each credential, raw and base64, in
//! everything a user or a pipeline can see: logs and output of every command, `get` of every
//! kind in every format, `logs` of every run, statuses and error messages (each store is also
//! given wrong credentials), run folders and the rest of the home folder, Works and
//! WorkPlacements, and what the state stores hold. Pipelines run in the sandbox, dump their
//! environment and input object, and try to read the control plane's database. The platform's
//! API's tokens are credentials too: the administrator's from `<home>/kubeconfig`, and each
//! pipeline run's, which the pipelines hand to the test over loopback (never printing it), are
//! looked for in all of the above, in `describe` and `events`, and in the API's answers.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{json, Value};
use support::{condition, condition_is, eventually, Kratix};
use testkit::s3;

/// Generous: pipelines run in a sandbox on a busy two-core machine.
const WAIT: Duration = Duration::from_secs(180);
const PROMISE: &str = "leaky";
const REQUEST: &str = "r1";
const NAMESPACE: &str = "default";
/// Destinations whose stores work carry this label; the request's pipeline picks them.
const WORKS_LABEL: &str = "works";
/// What the pipeline prints when it cannot read the control plane's database.
const DB_HIDDEN: &str = "control plane database: hidden";
const DB_READABLE: &str = "control plane database: readable";
/// The control plane's database in the home folder.
const DATABASE: &str = "state.db";

// ---------------------------------------------------------------------------------------------
// Secret values and where they must not be.

/// A credential and the forms it could show in: as given, base64 (as a Secret's `data` holds
/// it), and for multi-line values (keys) every long line on its own.
struct Credential {
    what: String,
    forms: Vec<String>,
}

impl Credential {
    fn new(what: &str, value: &str) -> Self {
        let mut forms = vec![value.to_string(), base64(value)];
        if value.trim().contains('\n') {
            forms.extend(
                value
                    .lines()
                    .map(str::trim)
                    .filter(|l| l.len() >= 16 && !l.starts_with("-----"))
                    .map(String::from),
            );
        }
        Self {
            what: what.to_string(),
            forms,
        }
    }
}

fn base64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

/// 24 random characters: a value found anywhere came from where we put it.
fn marker() -> String {
    s3::random_hex(12)
}

/// Everything looked at, by where it was seen.
#[derive(Default)]
struct Seen {
    places: Vec<(String, String)>,
}

impl Seen {
    fn add(&mut self, place: impl Into<String>, text: impl Into<String>) {
        self.places.push((place.into(), text.into()));
    }

    fn add_run(&mut self, place: &str, run: &support::Run) {
        self.add(format!("{place}: stdout"), run.stdout.clone());
        self.add(format!("{place}: stderr"), run.stderr.clone());
    }

    /// Every place where some form of some credential shows, with a little context.
    fn leaks(&self, credentials: &[Credential]) -> Vec<String> {
        let mut found = Vec::new();
        for (place, text) in &self.places {
            for credential in credentials {
                for form in &credential.forms {
                    if let Some(at) = text.find(form.as_str()) {
                        let start = floor_char_boundary(text, at.saturating_sub(80));
                        found.push(format!(
                            "{} in {place}: …{}…",
                            credential.what,
                            &text[start..at]
                        ));
                        break;
                    }
                }
            }
        }
        found
    }

    fn text_of(&self, place_prefix: &str) -> String {
        self.places
            .iter()
            .filter(|(p, _)| p.starts_with(place_prefix))
            .map(|(_, t)| t.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    }
}

fn floor_char_boundary(s: &str, mut at: usize) -> usize {
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

// ---------------------------------------------------------------------------------------------
// The platform.

/// One state store of a scenario: its documents (Secret and store), whether its credentials
/// are right, and how to read everything it holds.
struct Store {
    kind: &'static str,
    name: String,
    docs: Vec<Value>,
    works: bool,
    /// Words of which the `Ready=False` message of a store that does not work says one.
    refusal: &'static [&'static str],
    /// The `Ready=False` reason of a store that does not work.
    reason: &'static str,
    /// Everything the store holds, history included, as text.
    content: Box<dyn Fn() -> String>,
}

/// A Secret of `data`, exported by kubectl as it would be (with the applied document, values
/// included, in an annotation).
fn secret_doc(name: &str, data: &[(&str, &str)]) -> Value {
    let data: serde_json::Map<String, Value> = data
        .iter()
        .map(|(k, v)| (k.to_string(), json!(v)))
        .collect();
    let mut secret = json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "type": "Opaque",
        "stringData": data,
    });
    secret["metadata"]["annotations"] = json!({
        "kubectl.kubernetes.io/last-applied-configuration": secret.to_string(),
    });
    secret
}

fn destination_doc(store: &Store) -> Value {
    json!({
        "apiVersion": "platform.kratix.io/v1alpha1",
        "kind": "Destination",
        "metadata": {
            "name": store.name,
            "labels": {WORKS_LABEL: if store.works { "yes" } else { "no" }},
        },
        "spec": {
            "path": store.name,
            "stateStoreRef": {"kind": store.kind, "name": store.name},
        },
    })
}

/// A pipeline that prints its environment, its input object and whatever it can read of the
/// control plane's database (`home`), and writes the environment and object to its output too.
/// `selector` restricts where its Work goes. It hands the kubeconfig it was given (its run's
/// token inside) to the test's [`Catcher`] on `catcher`, without printing it.
fn dump_pipeline(name: &str, home: &Path, selector: bool, catcher: u16) -> Value {
    let db = home.join(DATABASE).display().to_string();
    let selector = if selector {
        format!("printf -- '- matchLabels:\\n    {WORKS_LABEL}: \"yes\"\\n' > \"$meta/destination-selectors.yaml\"\n")
    } else {
        String::new()
    };
    let script = format!(
        r#"set -u
out="${{KRATIX_OUTPUT_DIR:-/kratix/output}}"
in="${{KRATIX_INPUT_DIR:-/kratix/input}}"
meta="${{KRATIX_METADATA_DIR:-/kratix/metadata}}"
echo "== environment =="
env | sort
echo "== input object =="
cat "$in/object.yaml"
if cat '{db}' >/dev/null 2>&1; then
  echo "{DB_READABLE}"
  cat '{db}' '{db}-wal' 2>/dev/null | tr -c '[:print:]\n' ' '
else
  echo "{DB_HIDDEN}"
fi
curl -fsS --data-binary @"$KUBECONFIG" http://127.0.0.1:{catcher}/{name} >/dev/null
{{
  printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dump-{name}\n  namespace: default\ndata:\n  environment: |\n'
  env | sort | sed 's/^/    /'
  printf '  object: |\n'
  sed 's/^/    /' "$in/object.yaml"
}} > "$out/dump.yaml"
{selector}"#
    );
    json!({
        "apiVersion": "platform.kratix.io/v1alpha1",
        "kind": "Pipeline",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "dump", "image": "local/sh", "command": ["sh", "-c", script]}]},
    })
}

fn promise_doc(home: &Path, catcher: u16) -> Value {
    json!({
        "apiVersion": "platform.kratix.io/v1alpha1",
        "kind": "Promise",
        "metadata": {"name": PROMISE},
        "spec": {
            "api": {
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": "leakies.example.kratix.io"},
                "spec": {
                    "group": "example.kratix.io",
                    "names": {"kind": "Leaky", "plural": "leakies", "singular": "leaky"},
                    "scope": "Namespaced",
                    "versions": [{
                        "name": "v1alpha1", "served": true, "storage": true,
                        "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                            "spec": {"type": "object", "properties": {"size": {"type": "string"}}},
                        }}},
                    }],
                },
            },
            "workflows": {
                "promise": {"configure": [dump_pipeline("promise-dump", home, false, catcher)]},
                "resource": {"configure": [dump_pipeline("request-dump", home, true, catcher)]},
            },
        },
    })
}

fn request_doc() -> Value {
    json!({
        "apiVersion": "example.kratix.io/v1alpha1",
        "kind": "Leaky",
        "metadata": {"name": REQUEST, "namespace": NAMESPACE},
        "spec": {"size": "small"},
    })
}

fn yaml_stream(docs: &[Value]) -> String {
    docs.iter()
        .map(|d| serde_yaml::to_string(d).expect("YAML"))
        .collect::<Vec<_>>()
        .join("---\n")
}

/// `serve`, with its stdout and stderr kept in files.
struct Serve {
    child: Option<Child>,
    stdout: PathBuf,
    stderr: PathBuf,
}

impl Serve {
    fn start(k: &Kratix, logs: &Path) -> Self {
        let stdout = logs.join("serve.stdout");
        let stderr = logs.join("serve.stderr");
        let child = k
            .command(&["serve", "--api-addr", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&stdout).expect("serve stdout file"))
            .stderr(std::fs::File::create(&stderr).expect("serve stderr file"))
            .spawn()
            .expect("serve starts");
        eventually("serve to take the home", WAIT, || {
            k.home().join("controller.lock").exists().then_some(())
        });
        Self {
            child: Some(child),
            stdout,
            stderr,
        }
    }

    /// Stops `serve` with SIGTERM and returns what it printed.
    fn stop(mut self) -> (String, String) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
            let deadline = Instant::now() + Duration::from_secs(30);
            while Instant::now() < deadline && matches!(child.try_wait(), Ok(None)) {
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        let read =
            |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap_or_default()).into_owned();
        (read(&self.stdout), read(&self.stderr))
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A plain HTTP listener on loopback that keeps the body of every request: how pipelines hand
/// the test the kubeconfig their run was given, so that their run's token can be looked for
/// everywhere else.
struct Catcher {
    port: u16,
    bodies: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Catcher {
    fn start() -> Self {
        use std::io::{BufRead, BufReader, Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("catcher binds");
        let port = listener.local_addr().expect("catcher address").port();
        let bodies = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let kept = bodies.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                let mut reader = BufReader::new(&stream);
                let mut length = 0;
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line.trim() != "" {
                    if let Some((name, value)) = line.split_once(':') {
                        if name.eq_ignore_ascii_case("content-length") {
                            length = value.trim().parse().unwrap_or(0);
                        }
                    }
                    line.clear();
                }
                let mut body = vec![0; length];
                if reader.read_exact(&mut body).is_ok() {
                    kept.lock()
                        .expect("bodies")
                        .push(String::from_utf8_lossy(&body).into_owned());
                }
                let _ = (&stream).write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
            }
        });
        Self { port, bodies }
    }

    /// The token of each kubeconfig handed over.
    fn tokens(&self) -> Vec<String> {
        self.bodies
            .lock()
            .expect("bodies")
            .iter()
            .map(|body| {
                let doc: Value = serde_yaml::from_str(body)
                    .unwrap_or_else(|e| panic!("a pipeline's kubeconfig parses: {e}"));
                doc["users"][0]["user"]["token"]
                    .as_str()
                    .expect("a run's kubeconfig has a token")
                    .to_string()
            })
            .collect()
    }
}

fn get_kind(kind: &str) -> &'static str {
    match kind {
        "GitStateStore" => "gitstatestore",
        _ => "bucketstatestore",
    }
}

/// Every file under `dir`, but the control plane's database (which holds the Secrets, as the
/// API server's storage does), as text.
fn files_under(dir: &Path, seen: &mut Seen) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(file_type) = entry.file_type() else {
            continue;
        };
        if file_type.is_dir() {
            files_under(&path, seen);
        } else if file_type.is_file() && !entry.file_name().to_string_lossy().starts_with(DATABASE)
        {
            let bytes = std::fs::read(&path).unwrap_or_default();
            seen.add(
                format!("file {}", path.display()),
                String::from_utf8_lossy(&bytes).into_owned(),
            );
        }
    }
}

/// Applies the stores, a Destination on each, the Promise and a request; waits until good
/// stores hold the pipelines' files and bad ones are not ready; then gathers everything and
/// asserts no form of any credential shows anywhere.
fn no_credential_shows(stores: Vec<Store>, credentials: Vec<Credential>) {
    let mut k = Kratix::new()
        .with_env("KRATIX_LOG", "trace")
        .with_env("RUST_LOG", "trace")
        .with_env("KRATIX_ISOLATION", "sandbox");
    // A home the sandbox can see (the host's /tmp is hidden from it anyway): pipelines must
    // still not read the control plane there.
    k.home = support::sandbox_visible_dir();
    let logs = tempfile::tempdir().expect("a folder for serve's logs");
    let serve = Serve::start(&k, logs.path());
    let catcher = Catcher::start();
    let mut seen = Seen::default();

    let mut docs: Vec<Value> = stores.iter().flat_map(|s| s.docs.clone()).collect();
    docs.extend(stores.iter().map(destination_doc));
    docs.push(promise_doc(k.home(), catcher.port));
    docs.push(request_doc());
    let applied = k.apply_yaml(&yaml_stream(&docs), &["--no-wait"]);
    seen.add_run("apply", &applied);
    applied.assert_ok();

    // Each store is ready exactly when its credentials are right; wrong ones are named.
    for store in &stores {
        let want = if store.works { "True" } else { "False" };
        let obj = eventually(&format!("{} to be Ready={want}", store.name), WAIT, || {
            k.get_json(get_kind(store.kind), &store.name, None)
                .filter(|o| condition_is(o, "Ready", want))
        });
        if !store.works {
            let ready = condition(&obj, "Ready").expect("Ready");
            let message = ready["message"].as_str().unwrap_or_default().to_lowercase();
            assert!(
                store.refusal.iter().any(|w| message.contains(w)),
                "{}: the message says the credentials were refused: {ready}",
                store.name
            );
            assert_eq!(ready["reason"], store.reason, "{ready}");
            eprintln!("{} is not ready: {ready}", store.name);
        }
    }
    // Both pipelines ran, and their files landed in every working store they were meant for.
    eventually("both pipeline runs to succeed", WAIT, || {
        let runs = k.list_json("pipelineruns", &["-A"]);
        (runs.len() == 2 && runs.iter().all(|r| r["status"]["phase"] == "Succeeded")).then_some(())
    });
    let good: Vec<&Store> = stores.iter().filter(|s| s.works).collect();
    eventually("the pipelines' files to land", WAIT, || {
        let contents: Vec<String> = good.iter().map(|s| (s.content)()).collect();
        (contents.iter().all(|c| c.contains("dump-promise-dump"))
            && contents.iter().any(|c| c.contains("dump-request-dump")))
        .then_some(())
    });
    // Stores that refuse the credentials fail their placements, with errors in the statuses.
    for store in stores.iter().filter(|s| !s.works) {
        eventually(
            &format!("a failed placement on {}", store.name),
            WAIT,
            || {
                k.list_json("workplacements", &["-A"])
                    .into_iter()
                    .find(|wp| {
                        wp["spec"]["targetDestinationName"] == store.name.as_str()
                            && condition_is(wp, "WriteSucceeded", "False")
                    })
            },
        );
    }

    // Everything the CLI shows, in every format.
    let kinds = [
        "secrets",
        "gitstatestores",
        "bucketstatestores",
        "destinations",
        "promises",
        "leakies",
        "works",
        "workplacements",
        "pipelineruns",
    ];
    for kind in kinds {
        for format in ["yaml", "json", "table", "wide"] {
            let run = k.run(&["get", kind, "-A", "-o", format]);
            seen.add_run(&format!("get {kind} -A -o {format}"), &run);
            run.assert_ok();
        }
    }
    let named: Vec<(&str, String)> = stores
        .iter()
        .flat_map(|s| {
            s.docs.iter().map(|d| {
                let kind = if d["kind"] == "Secret" {
                    "secret"
                } else {
                    get_kind(s.kind)
                };
                (
                    kind,
                    d["metadata"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                )
            })
        })
        .collect();
    for (kind, name) in &named {
        for format in ["yaml", "json", "table", "wide"] {
            let run = k.run(&["get", kind, name, "-n", NAMESPACE, "-o", format]);
            seen.add_run(&format!("get {kind} {name} -o {format}"), &run);
            run.assert_ok();
            if *kind == "secret" && format == "yaml" {
                assert!(run.stdout.contains("<redacted>"), "{}", run.stdout);
            }
        }
    }
    for (what, args) in [
        (
            "logs of the request",
            vec!["logs", "leaky", REQUEST, "-n", NAMESPACE],
        ),
        ("logs of the promise", vec!["logs", "promise", PROMISE]),
        ("events", vec!["events", "-A", "-o", "yaml"]),
        (
            "describe the request",
            vec!["describe", "leaky", REQUEST, "-n", NAMESPACE],
        ),
        ("describe the promise", vec!["describe", "promise", PROMISE]),
    ] {
        let run = k.run(&args);
        seen.add_run(what, &run);
        run.assert_ok();
    }
    // Commands that fail on a store that refuses its credentials.
    for store in stores.iter().filter(|s| !s.works) {
        let kind = get_kind(store.kind);
        let run = k.run(&[
            "wait",
            kind,
            &store.name,
            "--for",
            "condition=Ready=True",
            "--timeout",
            "2",
        ]);
        seen.add_run(&format!("wait for {kind} {}", store.name), &run);
        run.assert_failed();
        let run = k.apply_yaml(&yaml_stream(&store.docs), &["--timeout", "3"]);
        seen.add_run(&format!("apply of {}", store.name), &run);
        run.assert_failed();
        assert!(
            run.stderr.contains(&store.name),
            "apply says which store did not settle: {}",
            run.stderr
        );
        eprintln!("apply of {}: {}", store.name, run.stderr.trim());
    }

    // Each run's token is a credential too: the pipelines handed over the kubeconfig they were
    // given (both runs had one), and the token shows nowhere else.
    let mut credentials = credentials;
    let tokens = catcher.tokens();
    assert_eq!(tokens.len(), 2, "each pipeline run got a kubeconfig");
    for token in &tokens {
        credentials.push(Credential::new("a pipeline run's token", token));
    }

    // What people read through the platform's API with the home's kubeconfig; its token is a
    // credential too, shown nowhere but in that file.
    let kubeconfig = k.home().join("kubeconfig");
    if let Some(kubectl) = support::kubectl::binary() {
        let text = std::fs::read_to_string(&kubeconfig).expect("serve wrote the kubeconfig");
        let doc: Value = serde_json::from_str(&text).expect("the kubeconfig is JSON");
        let token = doc["users"][0]["user"]["token"].as_str().expect("a token");
        credentials.push(Credential::new("the API's administrator token", token));
        for kind in kinds {
            for format in ["yaml", "json", "wide"] {
                let (_, out, err) = support::kubectl::run(
                    &kubectl,
                    &kubeconfig,
                    &["get", kind, "-A", "-o", format],
                );
                seen.add(
                    format!("kubectl get {kind} -A -o {format}"),
                    format!("{out}{err}"),
                );
            }
        }
        let objects = [("leaky", REQUEST), ("promise", PROMISE)];
        for (kind, name) in named.iter().map(|(k, n)| (*k, n.as_str())).chain(objects) {
            for args in [
                vec!["get", kind, name, "-o", "yaml"],
                vec!["describe", kind, name],
            ] {
                let mut args = args;
                args.extend(["-n", NAMESPACE]);
                let (ok, out, err) = support::kubectl::run(&kubectl, &kubeconfig, &args);
                assert!(ok, "kubectl {args:?}: {err}");
                seen.add(format!("kubectl {args:?}"), format!("{out}{err}"));
            }
        }
        // Refusals: a write, and a token that is not one.
        let (_, out, err) = support::kubectl::run(
            &kubectl,
            &kubeconfig,
            &["delete", "secret", &named[0].1, "-n", NAMESPACE],
        );
        assert!(err.contains("read-only"), "{err}");
        seen.add("kubectl delete", format!("{out}{err}"));
        std::fs::remove_file(&kubeconfig).expect("kubeconfig removed");
    }

    let (stdout, stderr) = serve.stop();
    assert!(
        stderr.contains("TRACE") || stderr.contains("DEBUG"),
        "serve logs at every level: {stderr}"
    );
    seen.add("serve: stdout", stdout);
    seen.add("serve: stderr", stderr);
    files_under(k.home(), &mut seen);
    for suffix in ["", "-wal", "-shm"] {
        use std::os::unix::fs::PermissionsExt;
        let path = k.home().join(format!("{DATABASE}{suffix}"));
        if let Ok(meta) = std::fs::metadata(&path) {
            let mode = meta.permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{} is for its owner only", path.display());
        }
    }
    for store in &stores {
        seen.add(format!("state store {}", store.name), (store.content)());
    }

    // The pipelines did dump what they had, in the sandbox, and could not read the database.
    let run_logs = seen.text_of("logs of the");
    let said = |line: &str| run_logs.lines().filter(|l| *l == line).count();
    let shown = || run_logs.chars().take(3000).collect::<String>();
    for expected in ["== environment ==", "== input object ==", DB_HIDDEN] {
        assert_eq!(
            said(expected),
            2,
            "{expected:?} in each run's log:\n{}",
            shown()
        );
    }
    assert!(run_logs.contains("KRATIX_OBJECT_NAME=r1"), "{}", shown());
    assert_eq!(said(DB_READABLE), 0, "{}", shown());
    eprintln!(
        "looked for {} forms of {} credentials in {} places ({} bytes)",
        credentials.iter().map(|c| c.forms.len()).sum::<usize>(),
        credentials.len(),
        seen.places.len(),
        seen.places.iter().map(|(_, t)| t.len()).sum::<usize>()
    );
    let leaks = seen.leaks(&credentials);
    assert!(
        leaks.is_empty(),
        "{} credential(s) shown:\n{}",
        leaks.len(),
        leaks.join("\n")
    );
    // The scan itself finds what it looks for.
    let mut probe = Seen::default();
    probe.add(
        "probe",
        credentials
            .iter()
            .map(|c| c.forms[1].clone())
            .collect::<String>(),
    );
    assert_eq!(probe.leaks(&credentials).len(), credentials.len());
}

// ---------------------------------------------------------------------------------------------
// Reading the stores.

fn git_content(bare: PathBuf) -> Box<dyn Fn() -> String> {
    Box::new(move || {
        let out = testkit::hermetic_git_command(Path::new("/"))
            .arg("--git-dir")
            .arg(&bare)
            .args(["log", "-p", "--all", "--format=%H%n%an <%ae>%n%B"])
            .output()
            .expect("git runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    })
}

fn bucket_content(bucket: String) -> Box<dyn Fn() -> String> {
    Box::new(move || {
        support::bucket::BucketInspector::new(s3::S3Server::shared(), &bucket).content()
    })
}

// ---------------------------------------------------------------------------------------------
// Tests.

fn git_store_doc(name: &str, url: &str, auth: Option<(&str, &str)>) -> Value {
    let mut spec = json!({"url": url, "branch": "main"});
    if let Some((method, secret)) = auth {
        spec["authMethod"] = json!(method);
        spec["secretRef"] = json!({"name": secret, "namespace": NAMESPACE});
    }
    json!({
        "apiVersion": "platform.kratix.io/v1alpha1",
        "kind": "GitStateStore",
        "metadata": {"name": name},
        "spec": spec,
    })
}

/// HTTPS basic auth, SSH keys and a URL with a password in it, each right and wrong.
#[test]
fn git_credentials_show_nowhere() {
    let user = "kratix-user";
    let (password, wrong_password, inline_password, other_value) =
        (marker(), marker(), marker(), marker());
    let http = testkit::GitHttp::start(user, &password).expect("git over http on loopback");
    let inline = testkit::GitHttp::start(user, &inline_password).expect("git over http");
    let sshd = testkit::Sshd::start().expect("sshd on loopback");
    let wrong_key = testkit::SshKeyPair::generate().expect("an SSH key");
    let http_bare = http.bare_repo("state.git").expect("bare repository");
    let inline_bare = inline.bare_repo("inline.git").expect("bare repository");
    let ssh_bare = sshd.bare_repo("state.git").expect("bare repository");
    sshd.bare_repo("wrong.git").expect("bare repository");
    http.bare_repo("wrong.git").expect("bare repository");
    inline.bare_repo("wrong.git").expect("bare repository");
    let refused: &[&str] = &["refused", "authentication", "401", "403", "denied"];
    let (inline_wrong, slash_before, slash_after) = (marker(), marker(), marker());
    let with_password =
        |url: String, password: &str| url.replace("http://", &format!("http://{user}:{password}@"));
    let stores = vec![
        Store {
            kind: "GitStateStore",
            name: "git-http".into(),
            docs: vec![
                secret_doc(
                    "git-http-creds",
                    &[
                        ("username", user),
                        ("password", &password),
                        ("other", &other_value),
                    ],
                ),
                git_store_doc(
                    "git-http",
                    &http.url("state.git"),
                    Some(("basicAuth", "git-http-creds")),
                ),
            ],
            works: true,
            refusal: refused,
            reason: "ErrorValidatingPermissions",
            content: git_content(http_bare),
        },
        Store {
            kind: "GitStateStore",
            name: "git-http-wrong".into(),
            docs: vec![
                secret_doc(
                    "git-http-wrong-creds",
                    &[("username", user), ("password", &wrong_password)],
                ),
                git_store_doc(
                    "git-http-wrong",
                    &http.url("wrong.git"),
                    Some(("basicAuth", "git-http-wrong-creds")),
                ),
            ],
            works: false,
            refusal: refused,
            reason: "ErrorValidatingPermissions",
            content: Box::new(String::new),
        },
        Store {
            kind: "GitStateStore",
            name: "git-inline".into(),
            docs: vec![git_store_doc(
                "git-inline",
                &with_password(inline.url("inline.git"), &inline_password),
                None,
            )],
            works: true,
            refusal: refused,
            reason: "ErrorValidatingPermissions",
            content: git_content(inline_bare),
        },
        Store {
            kind: "GitStateStore",
            name: "git-inline-wrong".into(),
            docs: vec![git_store_doc(
                "git-inline-wrong",
                &with_password(inline.url("wrong.git"), &inline_wrong),
                None,
            )],
            works: false,
            refusal: &["the server refused the password in the url"],
            reason: "ErrorValidatingPermissions",
            content: Box::new(String::new),
        },
        // A password with an unescaped `/` makes the URL unusable: the error still hides it.
        Store {
            kind: "GitStateStore",
            name: "git-inline-slash".into(),
            docs: vec![git_store_doc(
                "git-inline-slash",
                &with_password(
                    inline.url("wrong.git"),
                    &format!("{slash_before}/{slash_after}"),
                ),
                None,
            )],
            works: false,
            refusal: &["must be percent-encoded"],
            reason: "ErrorInitialisingWriter",
            content: Box::new(String::new),
        },
        Store {
            kind: "GitStateStore",
            name: "git-ssh".into(),
            docs: vec![
                secret_doc(
                    "git-ssh-creds",
                    &[
                        ("sshPrivateKey", sshd.client_private_key()),
                        ("knownHosts", &sshd.known_hosts()),
                    ],
                ),
                git_store_doc(
                    "git-ssh",
                    &sshd.url("state.git"),
                    Some(("ssh", "git-ssh-creds")),
                ),
            ],
            works: true,
            refusal: refused,
            reason: "ErrorValidatingPermissions",
            content: git_content(ssh_bare),
        },
        Store {
            kind: "GitStateStore",
            name: "git-ssh-wrong".into(),
            docs: vec![
                secret_doc(
                    "git-ssh-wrong-creds",
                    &[
                        ("sshPrivateKey", &wrong_key.private_key),
                        ("knownHosts", &sshd.known_hosts()),
                    ],
                ),
                git_store_doc(
                    "git-ssh-wrong",
                    &sshd.url("wrong.git"),
                    Some(("ssh", "git-ssh-wrong-creds")),
                ),
            ],
            works: false,
            refusal: refused,
            reason: "ErrorValidatingPermissions",
            content: Box::new(String::new),
        },
    ];
    let credentials = vec![
        Credential::new("the HTTP password", &password),
        Credential::new(
            "the HTTP Authorization header",
            &format!("{user}:{password}"),
        ),
        Credential::new("another value of the HTTP Secret", &other_value),
        Credential::new("the wrong HTTP password", &wrong_password),
        Credential::new("the password in the URL", &inline_password),
        Credential::new("the wrong password in the URL", &inline_wrong),
        Credential::new("a password with a / in the URL (before)", &slash_before),
        Credential::new("a password with a / in the URL (after)", &slash_after),
        Credential::new("the SSH private key", sshd.client_private_key()),
        Credential::new("the wrong SSH private key", &wrong_key.private_key),
    ];
    no_credential_shows(stores, credentials);
}

fn bucket_store_doc(name: &str, bucket: &str, secret: &str) -> Value {
    json!({
        "apiVersion": "platform.kratix.io/v1alpha1",
        "kind": "BucketStateStore",
        "metadata": {"name": name},
        "spec": {
            "endpoint": s3::S3Server::shared().s3_endpoint,
            "bucketName": bucket,
            "path": "platform",
            "insecure": true,
            "authMethod": "accessKey",
            "secretRef": {"name": secret, "namespace": NAMESPACE},
        },
    })
}

/// S3 access keys, right and wrong.
#[test]
fn bucket_credentials_show_nowhere() {
    let server = s3::S3Server::shared();
    let bucket = server.new_bucket();
    let wrong_bucket = server.new_bucket();
    let wrong_secret = marker();
    let stores = vec![
        Store {
            kind: "BucketStateStore",
            name: "bucket".into(),
            docs: vec![
                secret_doc(
                    "bucket-creds",
                    &[
                        ("accessKeyID", &server.key.id),
                        ("secretAccessKey", &server.key.secret),
                    ],
                ),
                bucket_store_doc("bucket", &bucket, "bucket-creds"),
            ],
            works: true,
            refusal: &[],
            reason: "ErrorValidatingPermissions",
            content: bucket_content(bucket.clone()),
        },
        Store {
            kind: "BucketStateStore",
            name: "bucket-wrong".into(),
            docs: vec![
                secret_doc(
                    "bucket-wrong-creds",
                    &[
                        ("accessKeyID", &server.key.id),
                        ("secretAccessKey", &wrong_secret),
                    ],
                ),
                bucket_store_doc("bucket-wrong", &wrong_bucket, "bucket-wrong-creds"),
            ],
            works: false,
            refusal: &["access denied", "forbidden", "signature"],
            reason: "ErrorValidatingPermissions",
            content: Box::new(String::new),
        },
    ];
    let credentials = vec![
        Credential::new("the S3 secret access key", &server.key.secret),
        Credential::new("the S3 access key ID", &server.key.id),
        Credential::new("the wrong S3 secret access key", &wrong_secret),
    ];
    no_credential_shows(stores, credentials);
}

/// A number as a Secret's value, which YAML reads as a number.
const PIN: &str = "98765432109876";

/// A Secret that cannot be stored is refused with an error that names the field, never the
/// value.
#[test]
fn refused_secrets_do_not_echo_their_values() {
    let k = Kratix::new();
    let value = marker();
    let cases = [
        (
            "data that is not base64",
            format!("data:\n  password: \"!{value}!\"\n"),
            "data.password",
        ),
        (
            "a value that is not a string",
            format!("stringData:\n  password: [\"{value}\"]\n"),
            "stringData.password",
        ),
        (
            "a number",
            format!("stringData:\n  pin: {PIN}\n"),
            "stringData.pin",
        ),
        (
            "unparsable YAML",
            format!("stringData:\n  password: \"{value}\n"),
            "invalid YAML",
        ),
    ];
    for (what, body, names) in cases {
        let yaml = format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n  namespace: default\n{body}"
        );
        let run = k.apply_yaml(&yaml, &["--no-wait"]);
        run.assert_failed();
        let shown = format!("{}{}", run.stdout, run.stderr);
        assert!(
            shown.contains(names),
            "{what}: the error names {names:?}: {shown}"
        );
        for secret in [value.as_str(), PIN] {
            assert!(
                !shown.contains(secret),
                "{what}: the error shows the value: {shown}"
            );
        }
    }
    assert!(
        k.list_json("secrets", &["-A"]).is_empty(),
        "nothing was stored"
    );
}
