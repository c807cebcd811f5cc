//! Finding and connecting to a container engine that speaks the Docker Engine API: Docker,
//! Podman's Docker-compatible socket, and the desktop VMs (Colima, Rancher Desktop, OrbStack).

use std::path::{Path, PathBuf};
use std::time::Duration;

use bollard::Docker;

/// How long finding an engine may take: a socket that does not answer is no engine.
const PING_TIMEOUT: Duration = Duration::from_secs(5);

/// Requests are bounded by the run's own deadline, not by the client.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(24 * 3600);

#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    #[error("no container engine socket found (looked at {looked})")]
    NoSocket { looked: String },
    #[error("cannot reach the container engine at {address}")]
    Unreachable {
        address: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// Where to look, in order: `DOCKER_HOST` alone when set, else the usual sockets.
pub(crate) fn candidates(
    docker_host: Option<&str>,
    runtime_dir: Option<&Path>,
    home: Option<&Path>,
) -> Vec<String> {
    if let Some(host) = docker_host.filter(|h| !h.is_empty()) {
        return vec![host.to_string()];
    }
    let mut sockets: Vec<PathBuf> = vec!["/var/run/docker.sock".into()];
    if let Some(dir) = runtime_dir {
        sockets.push(dir.join("podman/podman.sock"));
        sockets.push(dir.join("docker.sock"));
    }
    sockets.push("/run/podman/podman.sock".into());
    if let Some(home) = home {
        sockets.push(home.join(".colima/default/docker.sock"));
        sockets.push(home.join(".rd/docker.sock"));
        sockets.push(home.join(".orbstack/run/docker.sock"));
        sockets.push(home.join(".docker/run/docker.sock"));
    }
    sockets
        .into_iter()
        .map(|p| format!("unix://{}", p.display()))
        .collect()
}

/// The candidates of this process's environment.
fn candidates_here() -> Vec<String> {
    let host = std::env::var("DOCKER_HOST").ok();
    let runtime = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from);
    let home = std::env::var_os("HOME").map(PathBuf::from);
    candidates(host.as_deref(), runtime.as_deref(), home.as_deref())
}

/// The first candidate that exists (a socket file, or any non-unix address).
fn first_present(candidates: &[String]) -> Option<&String> {
    candidates.iter().find(|c| match c.strip_prefix("unix://") {
        Some(path) => Path::new(path).exists(),
        None => true,
    })
}

/// Connects to the engine and agrees on an API version.
pub(crate) async fn connect() -> Result<(Docker, String), Error> {
    let all = candidates_here();
    let Some(address) = first_present(&all).cloned() else {
        return Err(Error::NoSocket {
            looked: all.join(", "),
        });
    };
    let unreachable = |source: Box<dyn std::error::Error + Send + Sync>| Error::Unreachable {
        address: address.clone(),
        source,
    };
    let docker = Docker::connect_with_host(&address)
        .map_err(|e| unreachable(e.into()))?
        .with_timeout(REQUEST_TIMEOUT);
    let ready = async {
        docker.ping().await?;
        docker.negotiate_version().await
    };
    let docker = tokio::time::timeout(PING_TIMEOUT, ready)
        .await
        .map_err(|_| unreachable(format!("no answer within {PING_TIMEOUT:?}").into()))?
        .map_err(|e| unreachable(e.into()))?;
    Ok((docker, address))
}

/// The networks whose gateway is this machine as containers see it: Docker's default bridge,
/// then Podman's.
const HOST_NETWORKS: [&str; 2] = ["bridge", "podman"];

/// This machine's address on the engine's default network (its IPAM gateway), where a server
/// the containers must reach listens; `None` when the engine names none.
pub(crate) async fn host_address(docker: &Docker) -> Option<std::net::IpAddr> {
    for name in HOST_NETWORKS {
        let Ok(network) = docker
            .inspect_network(
                name,
                None::<bollard::query_parameters::InspectNetworkOptions>,
            )
            .await
        else {
            continue;
        };
        let gateway = network
            .ipam
            .and_then(|ipam| ipam.config)
            .unwrap_or_default()
            .into_iter()
            .find_map(|config| config.gateway.and_then(|g| g.parse().ok()));
        if gateway.is_some() {
            return gateway;
        }
    }
    None
}

/// Whether an engine may be there at all, without asking it (for the leftover sweep, which must
/// not wait on a machine without one).
pub(crate) fn maybe_present() -> bool {
    first_present(&candidates_here()).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_host_wins_else_the_usual_sockets() {
        assert_eq!(
            candidates(
                Some("tcp://10.0.0.1:2375"),
                Some(Path::new("/run/user/1")),
                None
            ),
            vec!["tcp://10.0.0.1:2375"]
        );
        let got = candidates(
            None,
            Some(Path::new("/run/user/1")),
            Some(Path::new("/home/u")),
        );
        assert_eq!(got[0], "unix:///var/run/docker.sock");
        assert_eq!(got[1], "unix:///run/user/1/podman/podman.sock");
        assert!(got.contains(&"unix:///run/podman/podman.sock".to_string()));
        assert!(got.contains(&"unix:///home/u/.colima/default/docker.sock".to_string()));
        assert_eq!(
            candidates(Some(""), None, None)[0],
            "unix:///var/run/docker.sock"
        );
    }

    #[test]
    fn first_present_skips_missing_sockets() {
        let dir = tempfile::tempdir().expect("tempdir");
        let sock = dir.path().join("s.sock");
        std::fs::write(&sock, "").expect("file");
        let list = vec![
            "unix:///nonexistent/x.sock".to_string(),
            format!("unix://{}", sock.display()),
        ];
        assert_eq!(first_present(&list), Some(&list[1]));
        assert_eq!(first_present(&list[..1]), None);
        assert_eq!(
            first_present(&["tcp://h:1".to_string()]),
            Some(&"tcp://h:1".to_string())
        );
    }
}
