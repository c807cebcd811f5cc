//! Faults for the state-store campaign (tests/store_faults.rs): a look into bare repositories
//! with the git CLI, and an HTTP proxy on loopback that answers a seeded share of S3 requests
//! with errors instead of forwarding them, and counts what it forwarded. The servers that go
//! down or hang are the test kit's.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

// ---------------------------------------------------------------------------------------------
// git

/// A commit of a bare repository.
#[derive(Debug, Clone)]
pub(crate) struct Commit {
    pub sha: String,
    pub author: String,
    pub message: String,
}

impl Commit {
    pub(crate) fn subject(&self) -> &str {
        self.message.lines().next().unwrap_or_default()
    }

    /// The value of trailer `Kratix-<name>`, if the message has one.
    pub(crate) fn trailer(&self, name: &str) -> Option<&str> {
        let prefix = format!("Kratix-{name}: ");
        self.message
            .lines()
            .find_map(|l| l.strip_prefix(prefix.as_str()))
    }
}

/// A bare repository on this machine, read with the git CLI (branch `main`).
pub(crate) struct BareRepo {
    pub git_dir: PathBuf,
}

impl BareRepo {
    /// Creates an empty bare repository whose unborn branch is `main`.
    pub(crate) fn init(git_dir: &Path) -> Self {
        std::fs::create_dir_all(git_dir).expect("repository folder");
        let repo = Self {
            git_dir: git_dir.to_path_buf(),
        };
        repo.git(&["init", "-q", "--bare", "-b", "main", "."]);
        repo
    }

    pub(crate) fn try_git(&self, args: &[&str]) -> Option<String> {
        let out = testkit::hermetic_git_command(&self.git_dir)
            .args(args)
            .output()
            .expect("git runs");
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }

    #[track_caller]
    pub(crate) fn git(&self, args: &[&str]) -> String {
        let out = testkit::hermetic_git_command(&self.git_dir)
            .args(args)
            .output()
            .expect("git runs");
        assert!(
            out.status.success(),
            "git {args:?} in {} failed: {}",
            self.git_dir.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub(crate) fn head(&self) -> Option<String> {
        self.try_git(&["rev-parse", "--verify", "-q", "refs/heads/main"])
            .map(|s| s.trim().to_string())
    }

    /// Every commit reachable from `main`, newest first.
    pub(crate) fn commits(&self) -> Vec<Commit> {
        if self.head().is_none() {
            return Vec::new();
        }
        self.git(&["log", "--format=%H%x1f%an <%ae>%x1f%B%x1e", "main"])
            .split('\x1e')
            .map(|entry| entry.trim_start_matches('\n'))
            .filter(|entry| !entry.is_empty())
            .map(|entry| {
                let fields: Vec<&str> = entry.splitn(3, '\x1f').collect();
                Commit {
                    sha: fields[0].to_string(),
                    author: fields[1].to_string(),
                    message: fields[2].trim_end().to_string(),
                }
            })
            .collect()
    }

    /// Every file path in `main`'s tree.
    pub(crate) fn files(&self) -> BTreeSet<String> {
        if self.head().is_none() {
            return BTreeSet::new();
        }
        self.git(&["ls-tree", "-r", "--name-only", "main"])
            .lines()
            .map(str::to_string)
            .collect()
    }

    pub(crate) fn read(&self, path: &str) -> Option<String> {
        self.try_git(&["cat-file", "-p", &format!("main:{path}")])
    }

    pub(crate) fn is_ancestor(&self, ancestor: &str, of: &str) -> bool {
        self.try_git(&["merge-base", "--is-ancestor", ancestor, of])
            .is_some()
    }

    /// `git fsck --full --strict`: every object reachable and well formed.
    #[track_caller]
    pub(crate) fn assert_fsck(&self) {
        let out = testkit::hermetic_git_command(&self.git_dir)
            .args(["fsck", "--full", "--strict", "--no-dangling"])
            .output()
            .expect("git fsck runs");
        assert!(
            out.status.success(),
            "git fsck of {} failed:\n{}{}",
            self.git_dir.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

// ---------------------------------------------------------------------------------------------
// S3 error proxy

/// What the proxy does with one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    Forward,
    /// Answers `500 InternalError` without forwarding.
    InternalError,
    /// Answers `503 SlowDown` without forwarding.
    SlowDown,
    /// Closes the connection without answering, without forwarding.
    Drop,
}

/// A seeded stream of decisions: `share` of requests get a fault, spread over the three kinds.
/// splitmix64, so a seed gives the same sequence on every machine.
#[derive(Debug)]
pub(crate) struct FaultPlan {
    state: u64,
    share: f64,
}

impl FaultPlan {
    pub(crate) fn new(seed: u64, share: f64) -> Self {
        Self {
            state: seed,
            share: share.clamp(0.0, 1.0),
        }
    }

    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub(crate) fn next_fault(&mut self) -> Fault {
        let roll = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        if roll >= self.share {
            return Fault::Forward;
        }
        match self.next_u64() % 3 {
            0 => Fault::InternalError,
            1 => Fault::SlowDown,
            _ => Fault::Drop,
        }
    }
}

/// One request the proxy forwarded, and the status the server answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Forwarded {
    pub method: String,
    /// Path and query, as sent (`/bucket/key?…`).
    pub target: String,
    pub status: u16,
}

/// What the proxy saw.
#[derive(Debug, Default, Clone)]
pub(crate) struct ProxyLog {
    pub forwarded: Vec<Forwarded>,
    pub injected: Vec<(String, String, Fault)>,
    /// Requests that could not be forwarded because the server did not answer.
    pub unreachable: usize,
}

impl ProxyLog {
    /// How many times each object was stored (a PUT the server accepted), by path.
    pub(crate) fn successful_puts(&self) -> std::collections::BTreeMap<String, usize> {
        let mut out = std::collections::BTreeMap::new();
        for f in &self.forwarded {
            if f.method == "PUT" && (200..300).contains(&f.status) {
                let path = f.target.split('?').next().unwrap_or_default().to_string();
                *out.entry(path).or_insert(0) += 1;
            }
        }
        out
    }
}

/// An HTTP/1 proxy on loopback in front of an S3 server. Each request either goes to the
/// server unchanged (`Host` included, so signatures still verify) or gets the plan's fault.
/// When the server does not answer, the client's connection is closed, as a server that is
/// down would do. Stops on drop.
pub(crate) struct FaultProxy {
    pub addr: SocketAddr,
    log: Arc<Mutex<ProxyLog>>,
    plan: Arc<Mutex<FaultPlan>>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl FaultProxy {
    pub(crate) fn start(upstream: SocketAddr, plan: FaultPlan) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("proxy runtime");
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind(("127.0.0.1", 0)))
            .expect("proxy listens");
        let addr = listener.local_addr().expect("proxy address");
        let log = Arc::new(Mutex::new(ProxyLog::default()));
        let plan = Arc::new(Mutex::new(plan));
        runtime.spawn(accept_loop(
            listener,
            upstream,
            Arc::clone(&log),
            Arc::clone(&plan),
        ));
        Self {
            addr,
            log,
            plan,
            runtime: Some(runtime),
        }
    }

    /// `127.0.0.1:<port>`, as a store's `endpoint`.
    pub(crate) fn endpoint(&self) -> String {
        self.addr.to_string()
    }

    pub(crate) fn log(&self) -> ProxyLog {
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Replaces the plan, e.g. with a share of 0 to let everything through.
    pub(crate) fn set_plan(&self, plan: FaultPlan) {
        *self.plan.lock().unwrap_or_else(PoisonError::into_inner) = plan;
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

async fn accept_loop(
    listener: tokio::net::TcpListener,
    upstream: SocketAddr,
    log: Arc<Mutex<ProxyLog>>,
    plan: Arc<Mutex<FaultPlan>>,
) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let log = Arc::clone(&log);
        let plan = Arc::clone(&plan);
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                handle(req, upstream, Arc::clone(&log), Arc::clone(&plan))
            });
            // A dropped connection ends here with an error: that is the fault.
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
        });
    }
}

type ProxyBody = http_body_util::Either<http_body_util::Full<bytes::Bytes>, hyper::body::Incoming>;

#[derive(Debug)]
struct Dropped;

impl std::fmt::Display for Dropped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connection dropped by the fault proxy")
    }
}

impl std::error::Error for Dropped {}

async fn handle(
    req: hyper::Request<hyper::body::Incoming>,
    upstream: SocketAddr,
    log: Arc<Mutex<ProxyLog>>,
    plan: Arc<Mutex<FaultPlan>>,
) -> Result<hyper::Response<ProxyBody>, Dropped> {
    let method = req.method().to_string();
    let target = req
        .uri()
        .path_and_query()
        .map(std::string::ToString::to_string)
        .unwrap_or_default();
    let fault = plan
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .next_fault();
    if fault == Fault::Forward {
        return forward(req, upstream, method, target, &log).await;
    }
    log.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .injected
        .push((method, target, fault));
    let (status, code) = match fault {
        // (`Forward` was handled above.)
        Fault::Forward | Fault::Drop => return Err(Dropped),
        Fault::InternalError => (500, "InternalError"),
        Fault::SlowDown => (503, "SlowDown"),
    };
    let body = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{code}</Code><Message>injected by the fault proxy</Message></Error>"
    );
    hyper::Response::builder()
        .status(status)
        .header("content-type", "application/xml")
        .body(http_body_util::Either::Left(http_body_util::Full::new(
            bytes::Bytes::from(body),
        )))
        .map_err(|_| Dropped)
}

async fn forward(
    req: hyper::Request<hyper::body::Incoming>,
    upstream: SocketAddr,
    method: String,
    target: String,
    log: &Mutex<ProxyLog>,
) -> Result<hyper::Response<ProxyBody>, Dropped> {
    let unreachable = || {
        log.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .unreachable += 1;
        Dropped
    };
    let stream = tokio::net::TcpStream::connect(upstream)
        .await
        .map_err(|_| unreachable())?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .map_err(|_| unreachable())?;
    tokio::spawn(connection);
    let response = sender.send_request(req).await.map_err(|_| unreachable())?;
    log.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .forwarded
        .push(Forwarded {
            method,
            target,
            status: response.status().as_u16(),
        });
    Ok(response.map(http_body_util::Either::Right))
}

/// The plan's share is what it injects, and a seed always gives the same faults.
pub(crate) fn fault_plan_self_check() {
    let mut a = FaultPlan::new(7, 0.3);
    let mut b = FaultPlan::new(7, 0.3);
    let faults: Vec<Fault> = (0..10_000).map(|_| a.next_fault()).collect();
    let again: Vec<Fault> = (0..10_000).map(|_| b.next_fault()).collect();
    assert_eq!(faults, again);
    let injected = faults.iter().filter(|f| **f != Fault::Forward).count();
    assert!((2_700..3_300).contains(&injected), "{injected} of 10000");
    for kind in [Fault::InternalError, Fault::SlowDown, Fault::Drop] {
        assert!(faults.contains(&kind), "{kind:?} is injected");
    }
    let mut none = FaultPlan::new(7, 0.0);
    assert!((0..1000).all(|_| none.next_fault() == Fault::Forward));
}
