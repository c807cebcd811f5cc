//! The platform's API: enough of the Kubernetes API, served over HTTPS from the home's control
//! plane, for an unchanged `kubectl` (or kube-rs, or client-go) inside a pipeline, and for
//! people with the home's kubeconfig. It serves discovery, `get`, `list` and `watch` of every
//! kind the home knows, and refuses writes (see docs/platform-api.md).
//!
//! It runs in the process that runs the controllers, beside them: `serve`, or a waiting command
//! while it runs them. The executor gets it as a [`PlatformApi`] and admits each run with a token
//! of its own; the decisions (routes, discovery, selectors, rights, refusals) are pure functions
//! in the submodules, table-tested there.

mod answer;
mod discovery;
mod fields;
mod objects;
pub(crate) mod rights;
mod route;
mod serve;
mod table;
mod tls;
mod tokens;

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::task::JoinHandle;

use crate::pipeline::platform_api::{self, Access, AdmitError, PlatformApi};
use crate::pipeline::RunRequest;
use crate::platform::Platform;

use rights::Principal;
use tokens::Tokens;

/// The folder of the home holding the API's CA.
const API_DIR: &str = "api";
/// The administrator's kubeconfig, in the home.
pub(crate) const KUBECONFIG: &str = "kubeconfig";

/// `pub`, as `cli::run::Error` carries it; the rest of the module is the crate's own.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Tls(#[from] tls::Error),
    #[error("the platform API cannot listen on {addr}")]
    Listen {
        addr: String,
        #[source]
        source: std::io::Error,
    },
    #[error("--api-addr {addr}: give the address clients connect to, not an unspecified one")]
    Unspecified { addr: String },
    #[error("cannot write {path}")]
    Kubeconfig {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// What every connection of the API shares.
pub(crate) struct Shared {
    platform: Platform,
    tokens: Arc<Tokens>,
    /// The loopback listener, named in discovery.
    loopback: SocketAddr,
}

/// The running API; its listeners stop when it is dropped.
pub(crate) struct ApiServer {
    shared: Arc<Shared>,
    ca: tls::Ca,
    /// Listeners by address, each with its task.
    listeners: Mutex<HashMap<IpAddr, SocketAddr>>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
    /// The administrator's token of `--api-addr`, revoked with the server.
    admin: Mutex<Option<tokens::Revoke>>,
}

impl std::fmt::Debug for ApiServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiServer")
            .field("loopback", &self.shared.loopback)
            .finish_non_exhaustive()
    }
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        for task in self
            .tasks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain(..)
        {
            task.abort();
        }
    }
}

/// Binds `addr` at once (a listener that cannot be had fails the start, not a later request).
fn bind(addr: SocketAddr) -> Result<tokio::net::TcpListener, Error> {
    let listen = |source| Error::Listen {
        addr: addr.to_string(),
        source,
    };
    let listener = std::net::TcpListener::bind(addr).map_err(listen)?;
    listener.set_nonblocking(true).map_err(listen)?;
    tokio::net::TcpListener::from_std(listener).map_err(listen)
}

impl ApiServer {
    /// Starts the API of `platform` on loopback (a port of the system's choosing).
    pub(crate) fn start(platform: &Platform) -> Result<Arc<Self>, Error> {
        let ca = tls::Ca::load_or_create(&platform.home.join(API_DIR))?;
        let listener = bind(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0))?;
        let loopback = listener.local_addr().map_err(|source| Error::Listen {
            addr: "127.0.0.1:0".into(),
            source,
        })?;
        let shared = Arc::new(Shared {
            platform: platform.clone(),
            tokens: Arc::default(),
            loopback,
        });
        let server = Arc::new(Self {
            shared,
            ca,
            listeners: Mutex::new(HashMap::from([(loopback.ip(), loopback)])),
            tasks: Mutex::new(Vec::new()),
            admin: Mutex::new(None),
        });
        server.serve_on(listener, loopback)?;
        tracing::debug!(%loopback, "platform API listening");
        Ok(server)
    }

    fn serve_on(&self, listener: tokio::net::TcpListener, at: SocketAddr) -> Result<(), Error> {
        let tls = self.ca.serving(at.ip())?;
        let task = tokio::spawn(serve::listen(listener, tls, self.shared.clone()));
        self.tasks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(task);
        Ok(())
    }

    /// Serves people on `addr` too, and writes `<home>/kubeconfig` (owner-only) naming it with
    /// an administrator's token of this process. Returns the address it listens on.
    pub(crate) fn expose(&self, addr: SocketAddr) -> Result<SocketAddr, Error> {
        if addr.ip().is_unspecified() {
            return Err(Error::Unspecified {
                addr: addr.to_string(),
            });
        }
        let listener = bind(addr)?;
        let at = listener.local_addr().map_err(|source| Error::Listen {
            addr: addr.to_string(),
            source,
        })?;
        self.serve_on(listener, at)?;
        let (token, revoke) = self.shared.tokens.issue(Principal::Admin);
        *self.admin.lock().unwrap_or_else(PoisonError::into_inner) = Some(revoke);
        let access = Access {
            token,
            ca_pem: self.ca.cert_pem().to_string(),
            namespace: "default".into(),
            loopback: at,
            revoke: Box::new(()),
        };
        let path = self.shared.platform.home.join(KUBECONFIG);
        let text = platform_api::kubeconfig(&access, at, "kratix-admin");
        platform_api::write_private(&path, &text)
            .map_err(|source| Error::Kubeconfig { path, source })?;
        Ok(at)
    }
}

impl PlatformApi for ApiServer {
    fn admit(&self, run: &RunRequest) -> Result<Access, AdmitError> {
        let rights = rights::of_run(run)?;
        let namespace = rights.namespace.clone();
        let (token, revoke) = self.shared.tokens.issue(Principal::Run(rights));
        Ok(Access {
            token,
            ca_pem: self.ca.cert_pem().to_string(),
            namespace,
            loopback: self.shared.loopback,
            revoke: Box::new(revoke),
        })
    }

    fn reachable_at(&self, host: IpAddr) -> Option<SocketAddr> {
        let mut listeners = self
            .listeners
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(at) = listeners.get(&host) {
            return Some(*at);
        }
        let listening = || {
            let listener = bind(SocketAddr::new(host, 0))?;
            let at = listener.local_addr().map_err(|source| Error::Listen {
                addr: host.to_string(),
                source,
            })?;
            self.serve_on(listener, at)?;
            Ok::<_, Error>(at)
        };
        match listening() {
            Ok(at) => {
                tracing::debug!(%at, "platform API listening for the container engine's network");
                listeners.insert(host, at);
                Some(at)
            }
            Err(err) => {
                tracing::warn!(error = %statestores::error_chain::ErrorChain(&err), "engine containers get no platform API");
                None
            }
        }
    }
}
