//! `git://` on loopback (or on an address given, e.g. a test node's bridge, for pods to reach):
//! the test owns the listener, so there is no window in which another
//! process could take the port, and each accepted connection is served by `git daemon --inetd`
//! with the socket as its stdin and stdout.

use crate::process::ProcessGroup;
use crate::{git_cli, require_program, scratch_dir};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

/// A connection whose client has hung up ends at once; one still open at drop is cut after this.
const CONNECTION_GRACE: Duration = Duration::from_secs(2);

/// Serves every bare repository under its root, fetch and push, without authentication.
pub struct GitDaemon {
    root: tempfile::TempDir,
    host: IpAddr,
    port: u16,
    stop: Arc<AtomicBool>,
    connections: Arc<Mutex<Vec<ProcessGroup>>>,
    accept: Option<JoinHandle<()>>,
}

impl GitDaemon {
    /// Listens on loopback.
    pub fn start() -> std::io::Result<Self> {
        Self::start_on(IpAddr::V4(Ipv4Addr::LOCALHOST))
    }

    /// Listens on `host` (one of this machine's addresses), on a port the system picks.
    pub fn start_on(host: IpAddr) -> std::io::Result<Self> {
        require_program("git")?;
        let root = scratch_dir("git-daemon-")?;
        let listener = TcpListener::bind((host, 0))?;
        let port = listener.local_addr()?.port();
        let stop = Arc::new(AtomicBool::new(false));
        let connections = Arc::new(Mutex::new(Vec::new()));
        let accept = std::thread::Builder::new()
            .name(format!("git-daemon-{port}"))
            .spawn({
                let base_path = root.path().to_path_buf();
                let stop = Arc::clone(&stop);
                let connections = Arc::clone(&connections);
                move || accept_loop(&listener, &base_path, &stop, &connections)
            })?;
        Ok(Self {
            root,
            host,
            port,
            stop,
            connections,
            accept: Some(accept),
        })
    }

    /// `git://<host>:<port>/<repo>`.
    pub fn url(&self, repo: &str) -> String {
        format!("git://{}/{repo}", SocketAddr::new(self.host, self.port))
    }

    /// Creates an empty bare repository `repo` (unborn branch `main`) and returns its path on disk.
    pub fn bare_repo(&self, repo: &str) -> std::io::Result<PathBuf> {
        let path = self.root.path().join(repo);
        git_cli::init_bare(&path)?;
        Ok(path)
    }

    pub fn root(&self) -> &Path {
        self.root.path()
    }

    pub fn port(&self) -> u16 {
        self.port
    }
}

fn accept_loop(
    listener: &TcpListener,
    base_path: &Path,
    stop: &AtomicBool,
    connections: &Mutex<Vec<ProcessGroup>>,
) {
    for stream in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let mut connections = connections.lock().unwrap_or_else(PoisonError::into_inner);
        connections.retain_mut(|connection| !connection.has_exited());
        match stream.and_then(|stream| serve(stream, base_path)) {
            Ok(connection) => connections.push(connection),
            Err(err) => eprintln!("git daemon: cannot serve a connection: {err}"),
        }
    }
}

fn serve(stream: TcpStream, base_path: &Path) -> std::io::Result<ProcessGroup> {
    let stdin = OwnedFd::from(stream.try_clone()?);
    let stdout = OwnedFd::from(stream);
    let mut command = git_cli::hermetic_git_command(base_path);
    command
        .args([
            "daemon",
            "--inetd",
            "--export-all",
            "--enable=receive-pack",
            "--informative-errors",
        ])
        .arg(format!("--base-path={}", base_path.display()))
        .stdin(Stdio::from(stdin))
        .stdout(Stdio::from(stdout))
        .stderr(Stdio::inherit());
    ProcessGroup::spawn(&mut command, CONNECTION_GRACE)
}

impl Drop for GitDaemon {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop, which then sees `stop`.
        let _ = TcpStream::connect((self.host, self.port));
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
        self.connections
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }
}
