//! A `git daemon` that goes down and comes back on the same port, for tests of outages.

use crate::hermetic_git_command;
use crate::process::ProcessGroup;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// A `git daemon` serving every repository under `root` (fetch and push) on one loopback port,
/// which it keeps across [`stop`](Self::stop) and [`start`](Self::start): clients see the same
/// URL refuse connections, then work again. Stopped on drop.
pub struct RestartableGitDaemon {
    root: PathBuf,
    port: u16,
    /// The daemon and the children serving its connections, killed together.
    process: Option<ProcessGroup>,
}

impl RestartableGitDaemon {
    /// Starts serving `root` on a port nobody listens on.
    pub fn start_on_free_port(root: &Path) -> Self {
        let port = crate::ports::free_port();
        let mut daemon = Self::on_port(root, port);
        daemon.start();
        daemon
    }

    /// A daemon for `root` on `port`, not started yet.
    pub fn on_port(root: &Path, port: u16) -> Self {
        Self {
            root: root.to_path_buf(),
            port,
            process: None,
        }
    }

    pub fn url(&self, repo: &str) -> String {
        format!("git://127.0.0.1:{}/{repo}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Starts the daemon (again) and waits until it accepts connections.
    pub fn start(&mut self) {
        if self.process.is_some() {
            return;
        }
        let mut command = hermetic_git_command(&self.root);
        command
            .args([
                "daemon",
                "--reuseaddr",
                "--listen=127.0.0.1",
                &format!("--port={}", self.port),
                &format!("--base-path={}", self.root.display()),
                "--export-all",
                "--enable=receive-pack",
                "--informative-errors",
            ])
            .arg(&self.root)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // `git daemon` serves each connection from a child: its own process group lets `stop`
        // end them all at once, as a server going down would.
        let process = ProcessGroup::spawn(&mut command, Duration::ZERO).expect("git daemon starts");
        self.process = Some(process);
        let deadline = Instant::now() + Duration::from_secs(60);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "git daemon never listened");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Kills the daemon and every connection it serves; the port then refuses connections.
    pub fn stop(&mut self) {
        // Dropping the group kills it and reaps its leader. A child killed with it may hold the
        // listening socket for a moment longer, so the port is watched until it refuses.
        if self.process.take().is_none() {
            return;
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
            assert!(
                Instant::now() < deadline,
                "git daemon still listens after it was killed"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for RestartableGitDaemon {
    fn drop(&mut self) {
        self.stop();
    }
}
