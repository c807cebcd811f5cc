//! A real node shared by the tests of a run: `scripts/testworld start DIR --node` (a kubelet with a
//! Docker Engine) at `KRATIX_TEST_NODE_DIR`, with kratix-rs installed as a user would, by
//! `kubectl apply -k deploy` of the image `kratix-rs:0.1.0` (built into the node's engine by
//! scripts/test-image.sh) and nothing granted by hand.
//!
//! The install is done once per node: every test binary applies `deploy/` (idempotent) and
//! restarts the controller when its pods run another build of the image. With
//! `KRATIX_TEST_INSTALL=helm` it installs the Helm chart instead (on a node that has not had
//! `deploy/` applied: Helm does not take over objects it did not make). Tests that change the
//! installation itself (scaling it) hold the node's lock exclusively; every other scenario holds
//! it shared, in its own namespace, with its own Promise, state store and Destination, so they
//! run at the same time without seeing each other's Works.

use std::fs::File;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::Value;

/// The image deploy/ names; scripts/test-image.sh builds it.
pub(crate) const IMAGE: &str = "kratix-rs:0.1.0";
/// The pipelines' image: local/busybox:1 and the scripts of `fixtures/workflows/scripts`.
pub(crate) const PIPELINE_IMAGE: &str = "kratix-rs-test/pipelines:1";
/// Where deploy/ installs the controller.
pub(crate) const SYSTEM_NAMESPACE: &str = "kratix-platform-system";
pub(crate) const DEPLOYMENT: &str = "kratix-rs-controller";
/// Generous bound for anything a test waits for; never a timing assertion.
pub(crate) const PATIENCE: Duration = Duration::from_secs(180);

/// How the tests install kratix-rs on the node (`KRATIX_TEST_INSTALL`): the same scenarios run
/// on either install.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Install {
    /// `kubectl apply -k deploy` (the default).
    Kustomize,
    /// The Helm chart `charts/kratix-rs` (`helm`).
    Helm,
}

impl Install {
    pub(crate) fn from_env() -> Self {
        match std::env::var("KRATIX_TEST_INSTALL").as_deref() {
            Ok("helm") => Install::Helm,
            Ok("kustomize" | "") | Err(_) => Install::Kustomize,
            Ok(other) => panic!("KRATIX_TEST_INSTALL={other:?} is not one of kustomize, helm"),
        }
    }
}

pub(crate) struct Node {
    pub dir: PathBuf,
    pub kubeconfig: PathBuf,
    pub docker_host: String,
    /// The host on the node's bridge: servers the pods reach listen here.
    pub node_ip: IpAddr,
}

/// The shared node with kratix-rs installed, or `None` (with a NOTE) when no node is given;
/// with `KRATIX_REQUIRE_REAL=1` a missing node fails the test instead.
pub(crate) fn node() -> Option<&'static Node> {
    static NODE: OnceLock<Option<Node>> = OnceLock::new();
    NODE.get_or_init(|| {
        let Some(dir) = std::env::var_os("KRATIX_TEST_NODE_DIR") else {
            assert!(
                std::env::var("KRATIX_REQUIRE_REAL").as_deref() != Ok("1"),
                "KRATIX_REQUIRE_REAL=1 but KRATIX_TEST_NODE_DIR is not set: start a node with `scripts/testworld start DIR --node`"
            );
            eprintln!("NOTE: KRATIX_TEST_NODE_DIR is not set: skipping the tests on a real node");
            return None;
        };
        let node = Node::at(Path::new(&dir));
        node.install();
        Some(node)
    })
    .as_ref()
}

impl Node {
    /// The node the test world runs at `dir`, as `scripts/testworld env DIR` describes it.
    fn at(dir: &Path) -> Self {
        let env = super::testworld::env(dir);
        let var = |name: &str| {
            env.iter().find(|(k, _)| k == name).map_or_else(
                || {
                    panic!(
                        "scripts/testworld env {} prints no {name}: is it a node?\n{env:?}",
                        dir.display()
                    )
                },
                |(_, v)| v.clone(),
            )
        };
        Node {
            dir: dir.to_path_buf(),
            kubeconfig: PathBuf::from(var("KUBECONFIG")),
            docker_host: var("DOCKER_HOST"),
            node_ip: var("NODE_IP").parse().expect("NODE_IP is an address"),
        }
    }

    /// Runs kubectl with `stdin`: its stdout, or its stderr when it fails.
    pub(crate) fn try_kubectl(&self, args: &[&str], stdin: &str) -> Result<String, String> {
        run(
            Command::new("kubectl")
                .args(request_timeout(args))
                .args(args)
                .env("KUBECONFIG", &self.kubeconfig),
            stdin,
        )
    }

    /// Runs kubectl; its stdout, panicking with its stderr when it fails.
    #[track_caller]
    pub(crate) fn kubectl(&self, args: &[&str]) -> String {
        self.try_kubectl(args, "")
            .unwrap_or_else(|e| panic!("kubectl {args:?}: {e}"))
    }

    #[track_caller]
    pub(crate) fn apply(&self, yaml: &str) {
        if let Err(e) = self.try_kubectl(&["apply", "-f", "-"], yaml) {
            panic!("kubectl apply: {e}\n{yaml}");
        }
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

    /// Objects of `kind` as JSON (`extra`: `-n`, `-A`, `-l`, …); none when the kind is unknown.
    pub(crate) fn list_json(&self, kind: &str, extra: &[&str]) -> Vec<Value> {
        super::kubectl_list_json(|args, stdin| self.try_kubectl(args, stdin), kind, extra)
    }

    /// Runs docker against the node's engine.
    pub(crate) fn docker(&self, args: &[&str]) -> Result<String, String> {
        run(
            Command::new("docker")
                .args(args)
                .env("DOCKER_HOST", &self.docker_host),
            "",
        )
    }

    /// The node's lock: held shared by scenarios, exclusively by what changes the installation.
    pub(crate) fn lock(&self, exclusive: bool) -> File {
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.dir.join("kratix-rs-tests.lock"))
            .expect("the node's lock file");
        if exclusive {
            file.lock().expect("lock the node");
        } else {
            file.lock_shared().expect("lock the node (shared)");
        }
        file
    }

    /// The controller's log (every pod of the Deployment), for failure messages.
    pub(crate) fn controller_log(&self) -> String {
        self.try_kubectl(
            &[
                "logs",
                "-n",
                SYSTEM_NAMESPACE,
                "-l",
                "app.kubernetes.io/name=kratix-rs",
                "--tail=60",
                "--prefix",
            ],
            "",
        )
        .unwrap_or_else(|e| e)
    }

    /// Installs kratix-rs from deploy/ or the chart (with the node's lock held exclusively), and builds the
    /// pipelines' image.
    fn install(&self) {
        let _lock = self.lock(true);
        let image = self.docker(&["image", "inspect", "--format", "{{.Id}}", IMAGE]);
        let image = image.unwrap_or_else(|e| {
            panic!("{IMAGE} is not in the node's engine ({e}): build it with DOCKER_HOST={} scripts/test-image.sh", self.docker_host)
        });
        self.build_pipeline_image();
        match Install::from_env() {
            Install::Kustomize => {
                let deploy = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("deploy");
                self.kubectl(&["apply", "-k", deploy.to_str().expect("UTF-8 path")]);
            }
            Install::Helm => self.helm_install(),
        }
        // A scaled-up installation left by an interrupted run is put back as deploy/ says.
        self.kubectl(&[
            "scale",
            "deployment",
            DEPLOYMENT,
            "-n",
            SYSTEM_NAMESPACE,
            "--replicas=1",
        ]);
        self.wait_for_rollout();
        if self
            .controller_images()
            .iter()
            .any(|id| !id.ends_with(image.trim()))
        {
            // The same tag, another build: the pods must run this one.
            self.kubectl(&[
                "rollout",
                "restart",
                "deployment",
                DEPLOYMENT,
                "-n",
                SYSTEM_NAMESPACE,
            ]);
            self.wait_for_rollout();
        }
    }

    /// Installs (or upgrades) the chart as its README says: the CRDs first (Helm installs
    /// `crds/` only on a first install and never upgrades them), then the release.
    fn helm_install(&self) {
        let chart = super::helm::chart_dir();
        let crds = chart.join("crds");
        self.kubectl(&[
            "apply",
            "--server-side",
            "--force-conflicts",
            "-f",
            crds.to_str().expect("UTF-8 path"),
        ]);
        self.helm_upgrade(&[]);
    }

    /// `helm upgrade --install` of the chart with these `--set` values, waiting for it.
    pub(crate) fn helm_upgrade(&self, values: &[&str]) {
        let chart = super::helm::chart_dir();
        let helm = super::helm::helm().expect("KRATIX_TEST_INSTALL=helm needs a helm");
        let mut args = vec![
            "upgrade",
            "--install",
            "kratix-rs",
            chart.to_str().expect("UTF-8 path"),
            "--namespace",
            SYSTEM_NAMESPACE,
            "--create-namespace",
            "--wait",
            "--timeout",
            "180s",
        ];
        for v in values {
            args.extend(["--set", v]);
        }
        let out = Command::new(helm)
            .args(&args)
            .env("KUBECONFIG", &self.kubeconfig)
            .output()
            .expect("helm runs");
        assert!(
            out.status.success(),
            "helm upgrade --install: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Waits until the Deployment's pods are all updated and ready (their `/readyz` answers).
    pub(crate) fn wait_for_rollout(&self) {
        if let Err(e) = self.try_kubectl(
            &[
                "rollout",
                "status",
                "deployment",
                DEPLOYMENT,
                "-n",
                SYSTEM_NAMESPACE,
                "--timeout=180s",
            ],
            "",
        ) {
            let pods = self.try_kubectl(&["get", "pods", "-n", SYSTEM_NAMESPACE, "-o", "wide"], "");
            panic!(
                "the controller did not become ready: {e}\n{pods:?}\n{}",
                self.controller_log()
            );
        }
    }

    /// The image IDs the controller's running pods run.
    fn controller_images(&self) -> Vec<String> {
        self.controller_pods()
            .iter()
            .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
            .flat_map(|p| {
                p["status"]["containerStatuses"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .filter_map(|c| c["imageID"].as_str().map(str::to_string))
            .collect()
    }

    /// The controller's pods.
    pub(crate) fn controller_pods(&self) -> Vec<Value> {
        self.list_json(
            "pods",
            &[
                "-n",
                SYSTEM_NAMESPACE,
                "-l",
                "app.kubernetes.io/name=kratix-rs,app.kubernetes.io/component=controller",
            ],
        )
    }

    /// Builds [`PIPELINE_IMAGE`] into the node's engine (cached by the engine when unchanged).
    fn build_pipeline_image(&self) {
        let context = tempfile::tempdir().expect("build context");
        let scripts = super::fixtures().join("workflows/scripts");
        std::fs::create_dir(context.path().join("scripts")).expect("scripts folder");
        for entry in std::fs::read_dir(&scripts).expect("fixture scripts") {
            let path = entry.expect("entry").path();
            if path.is_file() {
                let to = context
                    .path()
                    .join("scripts")
                    .join(path.file_name().expect("name"));
                std::fs::copy(&path, to).expect("copy a script");
            }
        }
        std::fs::write(
            context.path().join("Dockerfile"),
            "FROM local/busybox:1\nCOPY scripts/ /scripts/\n",
        )
        .expect("Dockerfile");
        let context = context.path().to_str().expect("UTF-8 path").to_string();
        if let Err(e) = self.docker(&["build", "--quiet", "--tag", PIPELINE_IMAGE, &context]) {
            panic!("building {PIPELINE_IMAGE}: {e}");
        }
    }
}

/// A bound on each request kubectl makes, so that a request the API server cannot answer (a
/// proxied one to a pod, logs from the kubelet) fails the test instead of hanging the run.
/// Commands that watch until their own `--timeout` keep their requests open.
fn request_timeout(args: &[&str]) -> Option<&'static str> {
    match args.first() {
        Some(&"rollout" | &"wait") => None,
        _ => Some("--request-timeout=60s"),
    }
}

fn run(command: &mut Command, stdin: &str) -> Result<String, String> {
    use std::io::Write as _;
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {command:?}: {e}"))?;
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(stdin.as_bytes())
        .map_err(|e| e.to_string())?;
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}
