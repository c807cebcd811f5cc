//! A real Kubernetes control plane for a test: `kube-testenv start` in a temporary folder,
//! stopped on drop. `$KUBE_TESTENV` names the script, else `../shared/tools/kube-testenv` next
//! to the workspace.

use std::path::PathBuf;

pub struct KubeTestenv {
    pub dir: tempfile::TempDir,
    pub kubeconfig: PathBuf,
}

fn script() -> PathBuf {
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

    pub async fn config(&self) -> kube::Config {
        let kubeconfig =
            kube::config::Kubeconfig::read_from(&self.kubeconfig).expect("kubeconfig reads");
        kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .expect("kubeconfig is usable")
    }

    pub async fn client(&self) -> kube::Client {
        kube::Client::try_from(self.config().await).expect("client")
    }

    /// Runs kubectl against this control plane; returns its status, stdout and stderr.
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
}

impl Drop for KubeTestenv {
    fn drop(&mut self) {
        let _ = std::process::Command::new(script())
            .arg("stop")
            .arg(self.dir.path())
            .status();
    }
}
