//! A real Kubernetes control plane for tests (`scripts/testworld`: etcd, kube-apiserver and
//! kube-controller-manager on loopback, no kubelet), Kratix's CRDs installed, `kubectl` against
//! it, and `kratix-rs controller` processes on it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The image of the pipeline Jobs' adapter containers: the test kubelet runs the built
/// `kratix-rs` for it.
pub(crate) const ADAPTER_IMAGE: &str = "kratix-rs:test";

/// The test kubelet on its own runtime, for tests that are not async; stopped on drop.
pub(crate) struct TestKubelet {
    pub kubelet: super::kubelet::Kubelet,
    _runtime: tokio::runtime::Runtime,
}

/// A control plane of the test world with Kratix's CRDs, stopped on drop.
pub(crate) struct TestEnv {
    env: super::testworld::KubeWorld,
    pub kubeconfig: PathBuf,
}

impl TestEnv {
    /// Starts one, or `None` when the test world is not installed (see
    /// [`super::testworld::installed`]).
    pub(crate) fn start() -> Option<Self> {
        if !super::testworld::installed(None) {
            return None;
        }
        let env = super::testworld::KubeWorld::start();
        let env = Self {
            kubeconfig: env.kubeconfig.clone(),
            env,
        };
        let crds = Command::new(super::binary())
            .arg("crds")
            .output()
            .expect("kratix-rs crds");
        env.kubectl(
            &["apply", "-f", "-"],
            &String::from_utf8_lossy(&crds.stdout),
        );
        env.kubectl(
            &[
                "wait",
                "--for",
                "condition=Established",
                "crd",
                "--all",
                "--timeout=120s",
            ],
            "",
        );
        Some(env)
    }

    pub(crate) fn dir(&self) -> &Path {
        self.env.dir.path()
    }

    /// Runs kubectl with `stdin`; its stdout, panicking with stderr on failure.
    #[track_caller]
    pub(crate) fn kubectl(&self, args: &[&str], stdin: &str) -> String {
        match self.try_kubectl(args, stdin) {
            Ok(stdout) => stdout,
            Err(stderr) => panic!("kubectl {args:?} failed: {stderr}"),
        }
    }

    /// Runs kubectl with `stdin`: its stdout, or its stderr when it fails.
    pub(crate) fn try_kubectl(&self, args: &[&str], stdin: &str) -> Result<String, String> {
        self.env.try_kubectl(args, stdin)
    }

    /// One object as JSON, `None` when it does not exist.
    pub(crate) fn get_json(
        &self,
        kind: &str,
        name: &str,
        namespace: Option<&str>,
    ) -> Option<Value> {
        super::kubectl_get_json(
            |args, stdin| self.try_kubectl(args, stdin),
            kind,
            name,
            namespace,
        )
    }

    /// Objects of `kind` as JSON (`extra`: `-n`, `-A`, `-l`, …).
    pub(crate) fn list_json(&self, kind: &str, extra: &[&str]) -> Vec<Value> {
        super::kubectl_list_json(|args, stdin| self.try_kubectl(args, stdin), kind, extra)
    }

    pub(crate) fn apply(&self, yaml: &str) {
        self.kubectl(&["apply", "-f", "-"], yaml);
    }

    pub(crate) fn create_namespace(&self, name: &str) {
        self.kubectl(&["create", "namespace", name], "");
    }

    /// Starts playing the kubelet for the pipeline Jobs' pods: the adapter image runs the built
    /// `kratix-rs`; pipeline containers run their own commands.
    pub(crate) fn kubelet(&self) -> TestKubelet {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a runtime for the kubelet");
        let mut images = kratix::pipeline::images::ImageMap::default();
        images.insert(ADAPTER_IMAGE, vec![super::binary().display().to_string()]);
        let root = self.dir().join("pods");
        let kubeconfig = self.kubeconfig.clone();
        let kubelet = runtime.block_on(async {
            let config = kratix::kube::client_config(Some(&kubeconfig))
                .await
                .expect("kubeconfig");
            let client = kube::Client::try_from(config).expect("client");
            super::kubelet::Kubelet::start(super::kubelet::Node {
                client,
                kubeconfig,
                images,
                root,
            })
        });
        TestKubelet {
            kubelet,
            _runtime: runtime,
        }
    }

    /// The control plane backend on this API server.
    pub(crate) async fn control_plane(&self) -> kratix::kube::KubeControlPlane {
        kratix::kube::KubeControlPlane::connect(Some(&self.kubeconfig))
            .await
            .expect("connect to the test API server")
    }
}

/// A free port on loopback, out of the range the kernel hands outgoing connections.
pub(crate) fn free_port() -> u16 {
    testkit::ports::free_port()
}

/// One `kratix-rs controller` process; killed on drop.
pub(crate) struct Controller {
    child: Option<Child>,
    pub name: String,
    pub log: PathBuf,
    pub health_port: u16,
    pub metrics_port: u16,
}

impl Controller {
    /// Starts a controller on `env` with its work folder under `work`; `extra` arguments
    /// (e.g. leader election) follow.
    pub(crate) fn start(env: &TestEnv, name: &str, work: &Path, extra: &[&str]) -> Self {
        let log = env.dir().join(format!("{name}.log"));
        let log_file = std::fs::File::create(&log).expect("controller log");
        let health_port = free_port();
        let metrics_port = free_port();
        let child = Command::new(super::binary())
            .arg("controller")
            .arg("--kubeconfig")
            .arg(&env.kubeconfig)
            .arg("--work-dir")
            .arg(work.join(name))
            .args(["--identity", name])
            .args(["--health-addr", &format!("127.0.0.1:{health_port}")])
            .args(["--metrics-addr", &format!("127.0.0.1:{metrics_port}")])
            .args(["--log-format", "json"])
            .args(extra)
            .env("KRATIX_LOG", "info,kube=warn,hyper=warn,tower=warn")
            .env("KRATIX_PIPELINE_ADAPTER_IMAGE", ADAPTER_IMAGE)
            .env_remove("KUBECONFIG")
            .stdout(Stdio::null())
            .stderr(log_file)
            .spawn()
            .expect("kratix-rs controller starts");
        Self {
            child: Some(child),
            name: name.to_string(),
            log,
            health_port,
            metrics_port,
        }
    }

    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Whether the process is still running.
    pub(crate) fn running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// Its exit code once it has exited.
    pub(crate) fn exit_code(&mut self) -> Option<i32> {
        self.child
            .as_mut()
            .and_then(|c| c.try_wait().ok().flatten())
            .and_then(|s| s.code())
    }

    /// Kills it abruptly (SIGKILL), as a crashed node would.
    pub(crate) fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Stops it with SIGTERM; its exit code.
    pub(crate) fn terminate(&mut self) -> Option<i32> {
        let mut child = self.child.take()?;
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(child.id().to_string())
            .status();
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = child.try_wait() {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
        None
    }
}

/// GET of `path` on a controller's health or metrics `port` (on loopback): status code and
/// body.
pub(crate) fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    use std::io::{Read as _, Write as _};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut text = String::new();
    stream.read_to_string(&mut text).ok()?;
    let code = text.split_whitespace().nth(1)?.parse().ok()?;
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_string())?;
    Some((code, body))
}

impl Drop for Controller {
    fn drop(&mut self) {
        self.kill();
    }
}
