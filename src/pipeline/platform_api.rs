//! What a pipeline gets to reach the platform's API, as a pod gets its service account: a
//! token of its own, valid while its run runs, the CA that signs the API's certificate, its
//! namespace, and where the API listens (loopback for host containers, the engine network's
//! host address for engine containers). The executor is handed a [`PlatformApi`] when it is
//! made; the API server implements it, so this module names no server.

use std::net::SocketAddr;
use std::path::Path;

/// Where pods find their service account's files, and engine containers theirs.
pub(crate) const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// Errors of the API while admitting a run.
pub(crate) type AdmitError = Box<dyn std::error::Error + Send + Sync>;

/// The platform's API as the executor sees it.
pub trait PlatformApi: std::fmt::Debug + Send + Sync + 'static {
    /// Credentials for `run`, with the rights its pipeline has; they stop working when the
    /// returned [`Access`] is dropped (the run ended, or the process stopped it).
    fn admit(&self, run: &super::RunRequest) -> Result<Access, AdmitError>;

    /// The address on `host` (the engine network's address of this machine) where containers
    /// reach the API, listening there from the first call on; `None` when it cannot listen
    /// there (then engine containers get no API).
    fn reachable_at(&self, host: std::net::IpAddr) -> Option<SocketAddr>;
}

/// One run's credentials. The token is never logged: `Debug` leaves it out.
pub struct Access {
    pub token: String,
    /// PEM of the CA that signed the API's serving certificates.
    pub ca_pem: String,
    /// The run's namespace (the request's; Promise workflows' system namespace).
    pub namespace: String,
    /// The API on loopback, for host containers.
    pub loopback: SocketAddr,
    /// Revokes the token when dropped.
    pub revoke: Box<dyn Send + Sync>,
}

impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Access")
            .field("namespace", &self.namespace)
            .field("loopback", &self.loopback)
            .finish_non_exhaustive()
    }
}

/// A kubeconfig naming `server` with the run's token and CA inline, as a host container's
/// `KUBECONFIG` points at.
pub(crate) fn kubeconfig(access: &Access, server: SocketAddr, user: &str) -> String {
    use base64::Engine as _;
    let ca = base64::engine::general_purpose::STANDARD.encode(&access.ca_pem);
    let doc = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "kratix", "cluster": {
            "server": format!("https://{server}"),
            "certificate-authority-data": ca,
        }}],
        "users": [{"name": user, "user": {"token": access.token}}],
        "contexts": [{"name": "kratix", "context": {
            "cluster": "kratix", "user": user, "namespace": access.namespace,
        }}],
        "current-context": "kratix",
    });
    serde_json::to_string_pretty(&doc).unwrap_or_default()
}

/// Writes `text` to `path`, readable by its owner only.
pub(crate) fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(text.as_bytes())
}

/// Writes the service account's files (`token`, `ca.crt`, `namespace`) for a run's engine
/// containers into `dir`. The files are readable by any user (a container may run as any
/// user, as in a pod), inside the home, which only its owner can enter.
pub(super) fn write_service_account(dir: &Path, access: &Access) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))?;
    for (name, text) in [
        ("token", access.token.as_str()),
        ("ca.crt", access.ca_pem.as_str()),
        ("namespace", access.namespace.as_str()),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, text)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644))?;
    }
    Ok(())
}

/// The variables an engine container gets to find the API, as a pod's in-cluster
/// configuration reads them.
pub(crate) fn service_env(at: SocketAddr) -> Vec<(String, String)> {
    vec![
        ("KUBERNETES_SERVICE_HOST".into(), at.ip().to_string()),
        ("KUBERNETES_SERVICE_PORT".into(), at.port().to_string()),
        (
            "KUBERNETES_SERVICE_PORT_HTTPS".into(),
            at.port().to_string(),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn access() -> Access {
        Access {
            token: "tok".into(),
            ca_pem: "-----BEGIN CERTIFICATE-----\n".into(),
            namespace: "team-a".into(),
            loopback: "127.0.0.1:6443".parse().expect("addr"),
            revoke: Box::new(()),
        }
    }

    #[test]
    fn kubeconfig_names_server_token_ca_and_namespace_and_debug_hides_the_token() {
        let a = access();
        let text = kubeconfig(&a, a.loopback, "pipeline");
        let doc: serde_json::Value = serde_json::from_str(&text).expect("json");
        assert_eq!(
            doc["clusters"][0]["cluster"]["server"],
            "https://127.0.0.1:6443"
        );
        assert_eq!(doc["users"][0]["user"]["token"], "tok");
        assert_eq!(doc["contexts"][0]["context"]["namespace"], "team-a");
        assert!(!format!("{a:?}").contains("tok"));
        let env = service_env("172.30.254.1:41000".parse().expect("addr"));
        assert_eq!(
            env[..2],
            [
                (
                    "KUBERNETES_SERVICE_HOST".to_string(),
                    "172.30.254.1".to_string()
                ),
                ("KUBERNETES_SERVICE_PORT".to_string(), "41000".to_string())
            ]
        );
    }
}
