//! The shared Docker Engine of the test world (`scripts/testworld start DIR --engine`, with DIR in
//! `KRATIX_TEST_ENGINE_DIR`), and the docker CLI against it for building test images and looking
//! at containers. Tests that need it skip with a NOTE when it is not configured, and fail instead
//! when `KRATIX_REQUIRE_REAL=1`.

use std::path::Path;
use std::process::Command;

pub(crate) struct Engine {
    pub docker_host: String,
    pub host_ip: String,
}

impl Engine {
    /// The engine, or `None` (with a NOTE) when none is configured.
    pub(crate) fn get() -> Option<Self> {
        let Some(dir) = std::env::var_os("KRATIX_TEST_ENGINE_DIR") else {
            assert!(
                std::env::var("KRATIX_REQUIRE_REAL").as_deref() != Ok("1"),
                "KRATIX_REQUIRE_REAL=1 but KRATIX_TEST_ENGINE_DIR is not set"
            );
            eprintln!(
                "NOTE: KRATIX_TEST_ENGINE_DIR is not set: skipping the container engine tests"
            );
            return None;
        };
        let env = super::testworld::env(Path::new(&dir));
        let value = |key: &str| env.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
        match (value("DOCKER_HOST"), value("HOST_IP")) {
            (Some(docker_host), Some(host_ip)) => Some(Self {
                docker_host,
                host_ip,
            }),
            _ => panic!(
                "no engine runs in {}: run `scripts/testworld start {} --engine`",
                Path::new(&dir).display(),
                Path::new(&dir).display()
            ),
        }
    }

    pub(crate) fn docker(&self, args: &[&str]) -> (bool, String, String) {
        self.docker_with(&[], args)
    }

    /// The docker CLI with more variables (`DOCKER_CONFIG` for logins of its own).
    pub(crate) fn docker_with(
        &self,
        env: &[(&str, &str)],
        args: &[&str],
    ) -> (bool, String, String) {
        let out = Command::new("docker")
            .args(args)
            .envs(env.iter().copied())
            .env("DOCKER_HOST", &self.docker_host)
            .output()
            .expect("the docker CLI runs");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Builds `context` (a folder with a Dockerfile) as `tag`.
    pub(crate) fn build(&self, tag: &str, context: &Path) {
        let (ok, _, err) = self.docker(&["build", "-q", "-t", tag, &context.display().to_string()]);
        assert!(ok, "docker build {tag}: {err}");
    }

    /// Builds a test image from a Dockerfile text and files beside it.
    pub(crate) fn build_from(&self, tag: &str, dockerfile: &str, files: &[(&str, &str)]) {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("build context");
        std::fs::write(dir.path().join("Dockerfile"), dockerfile).expect("Dockerfile");
        for (name, text) in files {
            let path = dir.path().join(name);
            std::fs::write(&path, text).expect("context file");
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
                .expect("executable");
        }
        self.build(tag, dir.path());
    }

    /// Ids of the containers, running or not, that carry `label=value`.
    pub(crate) fn containers_labelled(&self, label: &str, value: &str) -> Vec<String> {
        let filter = format!("label={label}={value}");
        let (ok, out, err) = self.docker(&["ps", "-aq", "--filter", &filter]);
        assert!(ok, "docker ps: {err}");
        out.split_whitespace().map(str::to_string).collect()
    }

    pub(crate) fn remove_image(&self, tag: &str) {
        let _ = self.docker(&["rmi", "-f", tag]);
    }
}
