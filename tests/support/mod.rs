//! Drives the `kratix-rs` binary through its command-line contract, each test in its own home.
#![allow(dead_code)]

pub(crate) mod bucket;
pub(crate) mod contract;
pub(crate) mod engine;
pub(crate) mod faults;
pub(crate) mod helm;
pub(crate) mod kube;
pub(crate) mod kubectl;
pub(crate) mod kubelet;
pub(crate) mod node;
pub(crate) mod promise_server;
pub(crate) mod registry;
pub(crate) mod statuses;
pub(crate) mod testworld;
pub(crate) mod things;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// `kubectl get KIND NAME -o json` through `try_kubectl` (a control plane's or a node's), `None`
/// when the object does not exist.
pub(crate) fn kubectl_get_json(
    try_kubectl: impl FnOnce(&[&str], &str) -> Result<String, String>,
    kind: &str,
    name: &str,
    namespace: Option<&str>,
) -> Option<Value> {
    let mut args = vec!["get", kind, name, "-o", "json", "--ignore-not-found"];
    if let Some(ns) = namespace {
        args.extend(["-n", ns]);
    }
    let out = try_kubectl(&args, "").ok()?;
    (!out.trim().is_empty()).then(|| serde_json::from_str(&out).expect("kubectl prints JSON"))
}

/// `kubectl get KIND -o json EXTRA…` through `try_kubectl`: the list's items, none when the kind
/// is unknown.
pub(crate) fn kubectl_list_json(
    try_kubectl: impl FnOnce(&[&str], &str) -> Result<String, String>,
    kind: &str,
    extra: &[&str],
) -> Vec<Value> {
    let mut args = vec!["get", kind, "-o", "json"];
    args.extend_from_slice(extra);
    let Ok(out) = try_kubectl(&args, "") else {
        return vec![];
    };
    let list: Value = serde_json::from_str(&out).expect("kubectl prints JSON");
    list["items"].as_array().cloned().unwrap_or_default()
}

/// One platform home and the binary to drive it.
pub(crate) struct Kratix {
    pub home: tempfile::TempDir,
    serve: Option<Child>,
    /// Extra environment for every command of this home (e.g. `KRATIX_ISOLATION`).
    env: Vec<(String, String)>,
}

/// What a command printed and how it ended.
#[derive(Debug)]
pub(crate) struct Run {
    pub status: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub(crate) fn ok(&self) -> bool {
        self.status == 0
    }

    #[track_caller]
    pub(crate) fn assert_ok(&self) -> &Self {
        assert!(
            self.ok(),
            "command failed ({}):\nstdout:\n{}\nstderr:\n{}",
            self.status,
            self.stdout,
            self.stderr
        );
        self
    }

    #[track_caller]
    pub(crate) fn assert_failed(&self) -> &Self {
        assert!(
            !self.ok(),
            "command succeeded but should have failed:\nstdout:\n{}\nstderr:\n{}",
            self.stdout,
            self.stderr
        );
        self
    }
}

impl From<Output> for Run {
    fn from(o: Output) -> Self {
        Self {
            status: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

pub(crate) fn binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_kratix-rs"))
}

pub(crate) fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

impl Kratix {
    pub(crate) fn new() -> Self {
        Self {
            home: tempfile::tempdir().expect("temporary home"),
            serve: None,
            env: Vec::new(),
        }
    }

    /// Sets an environment variable for every later command of this home, `serve` included.
    pub(crate) fn with_env(mut self, key: &str, value: &str) -> Self {
        self.env.push((key.to_string(), value.to_string()));
        self
    }

    pub(crate) fn home(&self) -> &Path {
        self.home.path()
    }

    pub(crate) fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(binary());
        cmd.arg("--home").arg(self.home()).args(args);
        cmd.env_remove("KRATIX_HOME");
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        cmd
    }

    /// Runs a command to completion.
    pub(crate) fn run(&self, args: &[&str]) -> Run {
        self.command(args).output().expect("kratix-rs runs").into()
    }

    /// Runs a command with `input` on standard input.
    pub(crate) fn run_with_stdin(&self, args: &[&str], input: &str) -> Run {
        self.spawn_with_stdin(args, input)
            .wait_with_output()
            .expect("kratix-rs runs")
            .into()
    }

    /// Starts a command with `input` on standard input and its output captured.
    pub(crate) fn spawn_with_stdin(&self, args: &[&str], input: &str) -> Child {
        use std::io::Write;
        let mut child = self
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("kratix-rs starts");
        child
            .stdin
            .take()
            .expect("stdin is piped")
            .write_all(input.as_bytes())
            .expect("stdin takes the input");
        child
    }

    /// `apply -f -` of a YAML text.
    pub(crate) fn apply_yaml(&self, yaml: &str, extra: &[&str]) -> Run {
        let mut args = vec!["apply", "-f", "-"];
        args.extend_from_slice(extra);
        self.run_with_stdin(&args, yaml)
    }

    /// `get KIND NAME -o json` as JSON, `None` when absent.
    pub(crate) fn get_json(
        &self,
        kind: &str,
        name: &str,
        namespace: Option<&str>,
    ) -> Option<Value> {
        let mut args = vec!["get", kind, name, "-o", "json"];
        if let Some(ns) = namespace {
            args.extend(["-n", ns]);
        }
        let run = self.run(&args);
        if !run.ok() {
            return None;
        }
        Some(serde_json::from_str(&run.stdout).expect("get -o json prints JSON"))
    }

    /// `get KIND -o json` items (all namespaces with `-A`).
    pub(crate) fn list_json(&self, kind: &str, extra: &[&str]) -> Vec<Value> {
        let mut args = vec!["get", kind, "-o", "json"];
        args.extend_from_slice(extra);
        let run = self.run(&args);
        run.assert_ok();
        let list: Value = serde_json::from_str(&run.stdout).expect("get -o json prints JSON");
        list["items"].as_array().cloned().unwrap_or_default()
    }

    /// Starts `serve` in the background and returns once it holds the home (it runs the
    /// controllers from then on); stopped when the `Kratix` is dropped. Its standard error goes
    /// to [`Kratix::serve_log`], appended across restarts.
    pub(crate) fn start_serve(&mut self) {
        self.start_serve_with(&[]);
    }

    /// [`Kratix::start_serve`] with extra environment for this `serve` only.
    pub(crate) fn start_serve_with(&mut self, env: &[(&str, &str)]) {
        self.start_serve_args(&[], env);
    }

    /// [`Kratix::start_serve_with`], with flags for `serve`.
    pub(crate) fn start_serve_args(&mut self, args: &[&str], env: &[(&str, &str)]) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.serve_log_path())
            .expect("serve log");
        let mut child = self
            .command(&["serve"])
            .args(args)
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("serve starts");
        // Holding the home lock is what makes it the one running controllers. The lock file
        // itself survives a killed `serve`, so its existence proves nothing: the lock must be held.
        let deadline = Instant::now() + Duration::from_secs(30);
        while !kratix::store::embedded::HomeLock::is_held(self.home()) {
            if let Ok(Some(status)) = child.try_wait() {
                panic!("serve exited at start ({status}):\n{}", self.serve_log());
            }
            assert!(
                Instant::now() < deadline,
                "serve did not take the home lock:\n{}",
                self.serve_log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        self.serve = Some(child);
    }

    fn serve_log_path(&self) -> PathBuf {
        self.home().join("serve.log")
    }

    /// Everything `serve` wrote to standard error so far.
    pub(crate) fn serve_log(&self) -> String {
        std::fs::read_to_string(self.serve_log_path()).unwrap_or_default()
    }

    /// The running `serve`, if any.
    pub(crate) fn serve_child(&mut self) -> Option<&mut Child> {
        self.serve.as_mut()
    }

    /// Stops `serve` with SIGTERM and waits for it.
    pub(crate) fn stop_serve(&mut self) {
        if let Some(mut child) = self.serve.take() {
            let _ = Command::new("kill")
                .arg("-TERM")
                .arg(child.id().to_string())
                .status();
            let deadline = Instant::now() + Duration::from_secs(20);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Kills `serve` abruptly (SIGKILL), as a crash would.
    pub(crate) fn kill_serve(&mut self) {
        if let Some(mut child) = self.serve.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Kratix {
    fn drop(&mut self) {
        self.kill_serve();
    }
}

/// Polls `f` until it returns `Some`, panicking with `what` after `timeout`.
#[track_caller]
pub(crate) fn eventually<T>(what: &str, timeout: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A condition's field of an object in `get -o json` form.
pub(crate) fn condition<'a>(obj: &'a Value, type_: &str) -> Option<&'a Value> {
    obj["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

/// Whether the object's condition `type_` has status `status` (`"True"`, `"False"`, …).
pub(crate) fn condition_is(obj: &Value, type_: &str, status: &str) -> bool {
    condition(obj, type_).is_some_and(|c| c["status"] == status)
}

/// The event of `reason` about an object, as `kratix-rs events KIND NAME -o json` lists it.
pub(crate) fn event_of(k: &Kratix, kind: &str, name: &str, reason: &str) -> Value {
    let events = k.run(&["events", kind, name, "-o", "json"]);
    events.assert_ok();
    let list: Value = serde_json::from_str(&events.stdout).expect("a JSON list");
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|e| e["reason"] == reason)
        .cloned()
        .unwrap_or_else(|| panic!("a {reason} event: {}", events.stdout))
}

/// A local Git state store and a Destination on it, as YAML, for `apply`.
pub(crate) fn git_destination_yaml(store_url: &str, destination: &str, labels: &str) -> String {
    format!(
        r"apiVersion: platform.kratix.io/v1alpha1
kind: GitStateStore
metadata:
  name: default
spec:
  url: {store_url}
  branch: main
---
apiVersion: platform.kratix.io/v1alpha1
kind: Destination
metadata:
  name: {destination}
  labels: {labels}
spec:
  path: {destination}
  stateStoreRef:
    kind: GitStateStore
    name: default
"
    )
}

/// Sandboxed pipelines get a private `/tmp` that hides the host's, and a clone of this
/// repository (with its fixtures and `CARGO_TARGET_TMPDIR`) may well live under `/tmp`. Files
/// that pipelines must see go under `/var/tmp` instead.
const SANDBOX_VISIBLE_ROOT: &str = "/var/tmp";

/// A fresh folder that sandboxed pipelines can see (read-only, like the rest of the host).
pub(crate) fn sandbox_visible_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("kratix-rs-test-")
        .tempdir_in(SANDBOX_VISIBLE_ROOT)
        .expect("a folder under /var/tmp")
}

/// The fixture folder `subdir` (e.g. `workflows/scripts`), copied where sandboxed pipelines can
/// read it. The copy's place depends only on the checkout, so runs reuse it instead of piling
/// up copies; files are replaced atomically, so concurrent test binaries don't see half a file.
pub(crate) fn sandbox_fixtures(subdir: &str) -> PathBuf {
    use sha2::{Digest, Sha256};
    let source = fixtures().join(subdir);
    let checkout = hex::encode(&Sha256::digest(source.display().to_string().as_bytes())[..8]);
    let target = Path::new(SANDBOX_VISIBLE_ROOT)
        .join("kratix-rs-test-fixtures")
        .join(checkout)
        .join(subdir);
    std::fs::create_dir_all(&target).expect("fixture copy folder");
    for entry in std::fs::read_dir(&source).expect("fixture folder") {
        let path = entry.expect("fixture entry").path();
        if !path.is_file() {
            continue;
        }
        let name = path.file_name().expect("file name");
        // Unique per process and call: tests of one binary copy the same fixtures concurrently.
        static COPIES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let copy = COPIES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let partial = target.join(format!(
            ".{}.{}.{copy}",
            name.to_string_lossy(),
            std::process::id()
        ));
        std::fs::copy(&path, &partial).expect("copy fixture");
        std::fs::rename(&partial, target.join(name)).expect("place fixture");
    }
    target
}
