//! A real Kubernetes control plane for a test: `kube-testenv start` in a temporary folder,
//! stopped on drop. `$KUBE_TESTENV` names the script, else `../shared/tools/kube-testenv` next
//! to the workspace.

use std::path::PathBuf;

pub struct KubeTestenv {
    pub dir: tempfile::TempDir,
    pub kubeconfig: PathBuf,
}

pub fn script() -> PathBuf {
    std::env::var_os("KUBE_TESTENV").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/tools/kube-testenv"),
        PathBuf::from,
    )
}

impl KubeTestenv {
    pub fn start() -> Self {
        let script = script();
        let dir = tempfile::tempdir().expect("temp dir");
        let out = std::process::Command::new(&script)
            .arg("start")
            .arg(dir.path())
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
        assert!(
            out.status.success(),
            "kube-testenv start failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let kubeconfig = dir.path().join("kubeconfig");
        KubeTestenv { dir, kubeconfig }
    }

    /// The client configuration, with the TLS crypto provider installed as the binary does.
    pub async fn config(&self) -> kube::Config {
        kratix::kube::client_config(Some(&self.kubeconfig))
            .await
            .expect("kubeconfig is usable")
    }

    pub async fn client(&self) -> kube::Client {
        kube::Client::try_from(self.config().await).expect("client")
    }

    /// Runs kubectl against this control plane; returns its status, stdout and stderr (a
    /// refusal such as `auth can-i`'s "no" is on stdout).
    pub fn kubectl(&self, args: &[&str], stdin: &str) -> (bool, String, String) {
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
    pub fn try_kubectl(&self, args: &[&str], stdin: &str) -> Result<String, String> {
        match self.kubectl(args, stdin) {
            (true, stdout, _) => Ok(stdout),
            (false, _, stderr) => Err(stderr),
        }
    }
}

impl Drop for KubeTestenv {
    fn drop(&mut self) {
        let _ = std::process::Command::new(script())
            .arg("stop")
            .arg(self.dir.path())
            .status();
    }
}
