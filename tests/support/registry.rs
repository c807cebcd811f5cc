//! A real image registry for the container executor's pulls: Debian's `docker-registry` (the
//! CNCF distribution registry) on loopback with basic auth, where the engine pulls over plain
//! HTTP as it does for any loopback registry. In front of it a [`Gate`] holds every connection
//! until the test opens it, so that a test can see a pull under way for as long as it needs.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::kube::free_port;

pub(crate) struct Registry {
    pub port: u16,
    child: Child,
    _dir: tempfile::TempDir,
}

impl Registry {
    /// Serves an empty registry that only `user`/`password` may use.
    pub(crate) fn start(user: &str, password: &str) -> Self {
        let dir = tempfile::tempdir().expect("registry folder");
        let out = Command::new("htpasswd")
            .args(["-Bbn", user, password])
            .output()
            .expect("htpasswd (apache2-utils) runs");
        assert!(out.status.success(), "htpasswd failed");
        std::fs::write(dir.path().join("htpasswd"), &out.stdout).expect("htpasswd file");
        let port = free_port();
        let config = format!(
            "version: 0.1\nlog: {{level: error}}\nstorage: {{filesystem: {{rootdirectory: {root}/data}}}}\n\
             http: {{addr: '127.0.0.1:{port}'}}\nauth: {{htpasswd: {{realm: kratix-test, path: {root}/htpasswd}}}}\n",
            root = dir.path().display()
        );
        let config_path = dir.path().join("config.yml");
        std::fs::write(&config_path, config).expect("registry config");
        let child = Command::new("docker-registry")
            .arg("serve")
            .arg(&config_path)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("docker-registry (Debian's docker-registry) starts");
        wait_for_port(port);
        Self {
            port,
            child,
            _dir: dir,
        }
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn wait_for_port(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "nothing listens on port {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Forwards loopback connections on its own port to `target`, but only once opened: until
/// then every connection is accepted and held, as a slow registry would hold it.
pub(crate) struct Gate {
    pub port: u16,
    open: Arc<AtomicBool>,
}

impl Gate {
    pub(crate) fn closed_in_front_of(target: u16) -> Self {
        let listener = TcpListener::bind(("127.0.0.1", 0)).expect("a loopback port");
        let port = listener.local_addr().expect("bound").port();
        let open = Arc::new(AtomicBool::new(false));
        let gate_open = open.clone();
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let open = gate_open.clone();
                std::thread::spawn(move || {
                    while !open.load(Ordering::SeqCst) {
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    if let Ok(server) = TcpStream::connect(("127.0.0.1", target)) {
                        splice(client, server);
                    }
                });
            }
        });
        Self { port, open }
    }

    pub(crate) fn open(&self) {
        self.open.store(true, Ordering::SeqCst);
    }
}

/// Copies both ways until either side hangs up.
fn splice(client: TcpStream, server: TcpStream) {
    let (Ok(client2), Ok(server2)) = (client.try_clone(), server.try_clone()) else {
        return;
    };
    let up = std::thread::spawn(move || copy(client, server));
    copy(server2, client2);
    let _ = up.join();
}

fn copy(mut from: TcpStream, mut to: TcpStream) {
    let mut buf = [0u8; 64 * 1024];
    while let Ok(n) = from.read(&mut buf) {
        if n == 0 || to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}
