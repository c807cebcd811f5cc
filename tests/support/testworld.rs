//! The project's test world (`scripts/testworld`): a real Kubernetes control plane for a test,
//! started in a temporary folder and stopped on drop, and the script's `env` for an engine or a
//! node the test run started (`KRATIX_TEST_ENGINE_DIR`, `KRATIX_TEST_NODE_DIR`).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

pub(crate) struct KubeWorld {
    pub dir: tempfile::TempDir,
    pub kubeconfig: PathBuf,
}

pub(crate) fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/testworld")
}

/// `scripts/testworld ARGS…`: whether it succeeded, its stdout, and its stderr.
fn run(args: &[&OsStr]) -> (bool, String, String) {
    let out = Command::new(script())
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script().display()));
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Whether the world's programs are installed (`scripts/testworld check`, with `mode` `--node`,
/// `--engine` or nothing for a control plane alone). When they are not, the test is skipped with
/// a NOTE that says how to install them, or fails saying so under `KRATIX_REQUIRE_REAL=1`.
pub(crate) fn installed(mode: Option<&str>) -> bool {
    let mut args = vec![OsStr::new("check")];
    args.extend(mode.map(OsStr::new));
    let (ok, _, why) = run(&args);
    if ok {
        return true;
    }
    assert!(
        std::env::var("KRATIX_REQUIRE_REAL").as_deref() != Ok("1"),
        "KRATIX_REQUIRE_REAL=1 and the test world is not installed: {why}"
    );
    eprintln!("NOTE: skipping the tests against a real Kubernetes: {why}");
    false
}

/// `scripts/testworld env DIR`: the world's variables (KUBECONFIG, DOCKER_HOST, HOST_IP,
/// NODE_IP), as pairs.
pub(crate) fn env(dir: &Path) -> Vec<(String, String)> {
    let (ok, out, err) = run(&[OsStr::new("env"), dir.as_os_str()]);
    assert!(ok, "scripts/testworld env {}: {err}", dir.display());
    out.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

impl KubeWorld {
    /// Starts a control plane alone (etcd, kube-apiserver, kube-controller-manager on loopback);
    /// panics saying how to install it when it is not installed.
    pub(crate) fn start() -> Self {
        let (installed, _, why) = run(&[OsStr::new("check")]);
        assert!(installed, "the test world is not installed: {why}");
        let dir = tempfile::tempdir().expect("temp dir");
        let (ok, _, err) = run(&[OsStr::new("start"), dir.path().as_os_str()]);
        assert!(ok, "scripts/testworld start failed: {err}");
        let kubeconfig = dir.path().join("kubeconfig");
        KubeWorld { dir, kubeconfig }
    }

    /// The client configuration, with the TLS crypto provider installed as the binary does.
    pub(crate) async fn config(&self) -> kube::Config {
        kratix::kube::client_config(Some(&self.kubeconfig))
            .await
            .expect("kubeconfig is usable")
    }

    pub(crate) async fn client(&self) -> kube::Client {
        kube::Client::try_from(self.config().await).expect("client")
    }

    /// Runs kubectl against this control plane; returns its status, stdout and stderr (a
    /// refusal such as `auth can-i`'s "no" is on stdout).
    pub(crate) fn kubectl(&self, args: &[&str], stdin: &str) -> (bool, String, String) {
        use std::io::Write as _;
        let mut child = std::process::Command::new("kubectl")
            .args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("kubectl is installed");
        child
            .stdin
            .take()
            .expect("stdin is piped")
            .write_all(stdin.as_bytes())
            .expect("write to kubectl");
        let out = child.wait_with_output().expect("kubectl runs");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Runs kubectl with `stdin`: its stdout, or its stderr when it fails.
    pub(crate) fn try_kubectl(&self, args: &[&str], stdin: &str) -> Result<String, String> {
        match self.kubectl(args, stdin) {
            (true, stdout, _) => Ok(stdout),
            (false, _, stderr) => Err(stderr),
        }
    }
}

impl Drop for KubeWorld {
    fn drop(&mut self) {
        // Never a panic here: a test that panicked is unwinding through this drop.
        let _ = Command::new(script())
            .arg("stop")
            .arg(self.dir.path())
            .status();
    }
}
