//! How one run's containers reach the platform's API: the run's credentials written into
//! `<work_dir>/api` (the service account's `token`, `ca.crt`, `namespace`, and a kubeconfig
//! for host containers), the variables and mount of engine containers, and the end of it all
//! when the run ends (the token is revoked and the folder removed, whichever way the run ends).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use bollard::Docker;

use super::platform_api::{self, Access, PlatformApi};
use super::{Error, Isolation, RunRequest};

/// The run's folder of API credentials.
const API_DIR: &str = "api";
const KUBECONFIG_FILE: &str = "kubeconfig";

/// One run's way to the API, alive until dropped.
pub(super) struct Reach {
    access: Access,
    dir: PathBuf,
    /// Where engine containers reach the API, when they can.
    engine_at: Option<SocketAddr>,
}

/// Admits the run and writes its credentials. `engine` is the run's container engine, if any
/// of its containers runs there: the API then also listens on that engine network's address
/// of this machine.
pub(super) async fn admit(
    api: &dyn PlatformApi,
    req: &RunRequest,
    engine: Option<&Docker>,
) -> Result<Reach, Error> {
    let backend = |source: Box<dyn std::error::Error + Send + Sync>| Error::Backend {
        run: req.run_name.clone(),
        source,
    };
    let access = api.admit(req).map_err(backend)?;
    let engine_at = match engine {
        Some(docker) => {
            if let Some(host) = super::container::engine::host_address(docker).await {
                api.reachable_at(host)
            } else {
                tracing::warn!(run = %req.run_name, "the container engine's network names no host address: its containers get no platform API");
                None
            }
        }
        None => None,
    };
    let dir = req.work_dir.join(API_DIR);
    let written = platform_api::write_service_account(&dir, &access).and_then(|()| {
        let config = platform_api::kubeconfig(&access, access.loopback, "pipeline");
        platform_api::write_private(&dir.join(KUBECONFIG_FILE), &config)
    });
    written.map_err(|source| Error::WriteFile {
        path: dir.clone(),
        source,
    })?;
    Ok(Reach {
        access,
        dir,
        engine_at,
    })
}

impl Reach {
    /// The folder engine containers mount at the service account's place, when they reach
    /// the API.
    pub(super) fn engine_mount(&self) -> Option<&Path> {
        self.engine_at.map(|_| self.dir.as_path())
    }

    /// `KUBECONFIG` of a host container, as it sees the run's API folder.
    pub(super) fn host_env(&self, isolation: Isolation) -> (String, String) {
        let path = match isolation {
            Isolation::Sandbox => format!("{}/{KUBECONFIG_FILE}", super::isolation::SANDBOX_API),
            _ => self.dir.join(KUBECONFIG_FILE).display().to_string(),
        };
        ("KUBECONFIG".to_string(), path)
    }

    /// The host folder of the run's credentials (bound into the sandbox).
    pub(super) fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for Reach {
    fn drop(&mut self) {
        // The token dies with `access`; its files go too, so nothing of it outlives the run.
        let _ = std::fs::remove_dir_all(&self.dir);
        let _ = &self.access;
    }
}

/// The variables of an engine container: the API's service variables (when it reaches the
/// API), then the run's `KRATIX_*`.
pub(super) fn engine_env(
    reach: Option<&Reach>,
    kratix: &[(String, String)],
) -> Vec<(String, String)> {
    let mut env = reach
        .and_then(|r| r.engine_at)
        .map(platform_api::service_env)
        .unwrap_or_default();
    env.extend(kratix.iter().cloned());
    env
}
