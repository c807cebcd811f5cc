//! The Git store over each network transport, against real servers on loopback: the whole
//! conformance suite over `git://`, `http://` with Basic auth and `ssh://` with a key, and the
//! errors a caller sees when credentials are wrong or the server is down.
//!
//! Every write is checked through the git CLI against the bare repository on the server's disk:
//! the store's own reads could agree with a write that never left the machine.

use statestores::{Change, Git, GitCredentials, GitOptions, StateStore, WriteInfo, WriteOutcome};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use testkit::{files_at, git, scratch_dir, GitDaemon, GitHttp, SshKeyPair, Sshd};

const USERNAME: &str = "kratix";
const PASSWORD: &str = "s3cret-http-password";
const REPO: &str = "state.git";

#[derive(Clone, Copy, Debug)]
enum Transport {
    Daemon,
    Http,
    Ssh,
}

/// A bare repository on a running server, and how to reach it.
struct Remote {
    bare: PathBuf,
    url: String,
    credentials: GitCredentials,
    /// Held only so that the server runs as long as any store uses it.
    _server: Box<dyn std::any::Any + Send + Sync>,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl Remote {
    fn start(transport: Transport) -> Self {
        match transport {
            Transport::Daemon => {
                let server = GitDaemon::start().expect("start git daemon");
                Self {
                    bare: server.bare_repo(REPO).expect("bare repo"),
                    url: server.url(REPO),
                    credentials: GitCredentials::None,
                    _server: Box::new(server),
                }
            }
            Transport::Http => {
                let server = GitHttp::start(USERNAME, PASSWORD).expect("start git http server");
                Self {
                    bare: server.bare_repo(REPO).expect("bare repo"),
                    url: server.url(REPO),
                    credentials: basic(PASSWORD),
                    _server: Box::new(server),
                }
            }
            Transport::Ssh => {
                let server = Sshd::start().expect("start sshd");
                Self {
                    bare: server.bare_repo(REPO).expect("bare repo"),
                    url: server.url(REPO),
                    credentials: ssh_key(&server, server.client_private_key()),
                    _server: Box::new(server),
                }
            }
        }
    }
}

fn basic(password: &str) -> GitCredentials {
    GitCredentials::Basic {
        username: USERNAME.to_owned(),
        password: password.to_owned(),
    }
}

fn ssh_key(server: &Sshd, private_key: &str) -> GitCredentials {
    GitCredentials::Ssh {
        private_key: private_key.to_owned(),
        known_hosts: Some(server.known_hosts()),
        username: Some(server.username().to_owned()),
    }
}

/// Opens a store on the `main` branch of `url`, with its own fresh cache.
fn open(url: &str, credentials: GitCredentials) -> (statestores::Result<Git>, tempfile::TempDir) {
    let cache = scratch_dir("git-cache-").expect("cache folder");
    let mut options = GitOptions::new(url, "main");
    options.cache_dir = Some(cache.path().join("cache"));
    options.credentials = credentials;
    (Git::open(options), cache)
}

/// A Git store whose every write is verified on the server's disk with the git CLI.
#[derive(Debug)]
struct Checked {
    store: Git,
    remote: Arc<Remote>,
    _cache: tempfile::TempDir,
}

impl Checked {
    async fn start(transport: Transport) -> Self {
        Self::on(Arc::new(Remote::start(transport))).await
    }

    // A future, as `reopen` hands it to the conformance suite.
    #[allow(clippy::unused_async)]
    async fn on(remote: Arc<Remote>) -> Self {
        let (store, cache) = open(&remote.url, remote.credentials.clone());
        let store = store.unwrap_or_else(|err| {
            panic!(
                "open {}: {}",
                remote.url,
                statestores::error_chain::ErrorChain(&err)
            )
        });
        Self {
            store,
            remote,
            _cache: cache,
        }
    }

    /// A second, independent store on the same repository, as another process would have.
    fn reopen(&self) -> impl std::future::Future<Output = Self> + 'static {
        Self::on(Arc::clone(&self.remote))
    }
}

#[async_trait::async_trait]
impl StateStore for Checked {
    fn kind(&self) -> &'static str {
        self.store.kind()
    }

    async fn write(
        &self,
        changes: &[Change],
        info: &WriteInfo,
    ) -> statestores::Result<WriteOutcome> {
        let outcome = self.store.write(changes, info).await?;
        let bare = self.remote.bare.clone();
        let (changes, info, checked) = (changes.to_vec(), info.clone(), outcome.clone());
        tokio::task::spawn_blocking(move || verify_on_server(&bare, &changes, &info, &checked))
            .await
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic.into_panic()));
        Ok(outcome)
    }

    async fn read(&self, key: &statestores::Key) -> statestores::Result<Option<bytes::Bytes>> {
        self.store.read(key).await
    }

    async fn list(&self, prefix: &statestores::Key) -> statestores::Result<Vec<statestores::Key>> {
        self.store.list(prefix).await
    }

    async fn check_access(&self) -> statestores::Result<()> {
        self.store.check_access().await
    }

    async fn snapshot(
        &self,
        prefix: &statestores::Key,
    ) -> statestores::Result<statestores::Snapshot> {
        self.store.snapshot(prefix).await
    }
}

/// Checks, with the git CLI on the server's repository, that a write did what it reported: its
/// commit was pushed to `main`, carries the message and author asked for, changes exactly the
/// keys reported, and holds every requested content. A write that changed nothing must find
/// `main` holding the requested content already.
fn verify_on_server(bare: &Path, changes: &[Change], info: &WriteInfo, outcome: &WriteOutcome) {
    let rev = if let Some(version) = &outcome.version {
        let version = version.to_string();
        git(&["merge-base", "--is-ancestor", &version, "main"], bare);
        let header = git(&["log", "-1", "--format=%an <%ae>%n%B", &version], bare);
        let (author, message) = header.split_once('\n').expect("author line");
        assert_eq!(
            author,
            format!("{} <{}>", info.author_name, info.author_email)
        );
        assert_eq!(message.trim_end(), info.message.trim_end());
        let touched = git(
            &[
                "diff-tree",
                "-r",
                "--root",
                "--no-commit-id",
                "--name-only",
                &version,
            ],
            bare,
        );
        let mut touched: Vec<&str> = touched.lines().collect();
        touched.sort_unstable();
        let mut reported: Vec<&str> = outcome
            .written
            .iter()
            .chain(&outcome.deleted)
            .map(statestores::Key::as_str)
            .collect();
        reported.sort_unstable();
        assert_eq!(
            touched, reported,
            "the commit {version} changes exactly the reported keys"
        );
        version
    } else {
        assert!(
            !outcome.changed(),
            "a write that changed something has a version: {outcome:?}"
        );
        "main".to_owned()
    };
    if changes.is_empty() || git(&["for-each-ref", "refs/heads/main"], bare).is_empty() {
        assert!(outcome.version.is_none());
        return;
    }
    let paths: Vec<&str> = changes.iter().map(|change| change.key().as_str()).collect();
    let held = files_at(bare, &rev, &paths);
    for (change, held) in changes.iter().zip(held) {
        match change {
            Change::Put(key, content) => {
                assert_eq!(held.as_deref(), Some(&content[..]), "{key:?} at {rev}");
            }
            Change::Delete(key) => assert_eq!(held, None, "{key:?} at {rev}"),
        }
    }
}

mod over_git_daemon {
    use super::{Checked, Transport};
    statestores::conformance_suite!(Checked::start(Transport::Daemon), |store: &Checked| store
        .reopen());
}

mod over_http_with_basic_auth {
    use super::{Checked, Transport};
    statestores::conformance_suite!(Checked::start(Transport::Http), |store: &Checked| store
        .reopen());
}

mod over_ssh_with_a_key {
    use super::{Checked, Transport};
    statestores::conformance_suite!(Checked::start(Transport::Ssh), |store: &Checked| store
        .reopen());
}

fn put(path: &str, content: &str) -> Change {
    statestores::conformance::put(path, content)
}

/// Opens a store and tries to write one file and to check access; returns both errors (or the
/// error of opening, twice, when opening already fails).
async fn attempt(url: &str, credentials: GitCredentials) -> Vec<statestores::Error> {
    let (store, _cache) = open(url, credentials);
    match store {
        Err(err) => vec![err],
        Ok(store) => {
            let info = statestores::conformance::info("should not land");
            let write = store.write(&[put("a.yaml", "a")], &info).await;
            let access = store.check_access().await;
            let mut errors = Vec::new();
            match write {
                Ok(outcome) => panic!("write to {url} succeeded: {outcome:?}"),
                Err(err) => errors.push(err),
            }
            match access {
                Ok(()) => panic!("check_access on {url} succeeded"),
                Err(err) => errors.push(err),
            }
            errors
        }
    }
}

/// Everything a caller could print about `err`: Display, Debug and the chain of sources.
fn printed(err: &statestores::Error) -> String {
    format!(
        "{err}\n{err:?}\n{}",
        statestores::error_chain::ErrorChain(err)
    )
}

fn has_no_branches(bare: &Path) -> bool {
    git(&["for-each-ref", "refs/heads"], bare).is_empty()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_with_a_wrong_password_is_unauthorized_and_pushes_nothing() {
    let server = GitHttp::start(USERNAME, PASSWORD).expect("start git http server");
    let bare = server.bare_repo(REPO).expect("bare repo");
    let wrong = "wrong-password-never-printed";
    for err in attempt(&server.url(REPO), basic(wrong)).await {
        assert!(
            matches!(err, statestores::Error::Unauthorized { .. }),
            "{}",
            printed(&err)
        );
        let printed = printed(&err);
        assert!(!printed.contains(wrong), "the password leaks: {printed}");
        assert!(!printed.contains(PASSWORD), "the password leaks: {printed}");
    }
    assert!(has_no_branches(&bare));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_without_credentials_is_unauthorized() {
    let server = GitHttp::start(USERNAME, PASSWORD).expect("start git http server");
    let bare = server.bare_repo(REPO).expect("bare repo");
    for err in attempt(&server.url(REPO), GitCredentials::None).await {
        assert!(
            matches!(err, statestores::Error::Unauthorized { .. }),
            "{}",
            printed(&err)
        );
    }
    assert!(has_no_branches(&bare));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ssh_with_a_key_the_server_does_not_know_is_unauthorized_and_pushes_nothing() {
    let server = Sshd::start().expect("start sshd");
    let bare = server.bare_repo(REPO).expect("bare repo");
    let stranger = SshKeyPair::generate().expect("generate key");
    for err in attempt(&server.url(REPO), ssh_key(&server, &stranger.private_key)).await {
        assert!(
            matches!(err, statestores::Error::Unauthorized { .. }),
            "{}\nsshd log:\n{}",
            printed(&err),
            server.log()
        );
        let printed = printed(&err);
        for secret in [&stranger.private_key, server.client_private_key()] {
            for line in secret.lines().filter(|line| !line.starts_with("-----")) {
                assert!(!printed.contains(line), "a private key leaks: {printed}");
            }
        }
    }
    assert!(has_no_branches(&bare));
}

/// A man in the middle would present another host key: the store must not talk to it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ssh_to_a_host_key_not_in_known_hosts_is_refused_and_pushes_nothing() {
    let server = Sshd::start().expect("start sshd");
    let bare = server.bare_repo(REPO).expect("bare repo");
    let impostor = SshKeyPair::generate().expect("generate key");
    let blob = impostor
        .public_key
        .split_whitespace()
        .take(2)
        .collect::<Vec<_>>()
        .join(" ");
    let credentials = GitCredentials::Ssh {
        private_key: server.client_private_key().to_owned(),
        known_hosts: Some(format!("[127.0.0.1]:{} {blob}\n", server.port())),
        username: Some(server.username().to_owned()),
    };
    for err in attempt(&server.url(REPO), credentials).await {
        assert!(
            matches!(err, statestores::Error::Unauthorized { .. }),
            "{}",
            printed(&err)
        );
    }
    assert!(has_no_branches(&bare));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_is_down_is_unreachable() {
    let port = testkit::closed_port().expect("free port");
    let key = SshKeyPair::generate().expect("generate key");
    let cases = [
        (
            format!("git://127.0.0.1:{port}/{REPO}"),
            GitCredentials::None,
        ),
        (format!("http://127.0.0.1:{port}/{REPO}"), basic(PASSWORD)),
        (
            format!("ssh://root@127.0.0.1:{port}/srv/{REPO}"),
            GitCredentials::ssh(key.private_key.clone(), None),
        ),
    ];
    for (url, credentials) in cases {
        for err in attempt(&url, credentials).await {
            assert!(
                matches!(err, statestores::Error::Unreachable { .. }),
                "{url}: {}",
                printed(&err)
            );
            let printed = printed(&err);
            assert!(!printed.contains(PASSWORD), "the password leaks: {printed}");
        }
    }
}

/// What a store told its listener of its pushes.
#[derive(Debug, Default)]
struct Heard(std::sync::Mutex<Vec<String>>);

impl Heard {
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().expect("events"))
    }
}

impl statestores::PushEvents for Heard {
    fn pushed(&self, commits: usize) {
        self.0
            .lock()
            .expect("events")
            .push(format!("pushed {commits}"));
    }
    fn conflict(&self) {
        self.0.lock().expect("events").push("conflict".into());
    }
    fn retry(&self) {
        self.0.lock().expect("events").push("retry".into());
    }
}

/// A handle whose cache saw an older tip finds the branch moved: its push is refused once (a
/// conflict, not a retry after waiting), the commit is re-applied on the real tip and pushed.
#[tokio::test]
async fn a_push_on_a_moved_branch_is_told_as_a_conflict_then_pushed() {
    let remote = Remote::start(Transport::Daemon);
    let heard = Arc::new(Heard::default());
    let cache = scratch_dir("git-cache-").expect("cache folder");
    let mut options = GitOptions::new(&remote.url, "main");
    options.cache_dir = Some(cache.path().join("cache"));
    let events: Arc<dyn statestores::PushEvents> = heard.clone();
    let ours = Git::open_with_events(options, Some(events)).expect("open");
    let (other, _other_cache) = open(&remote.url, GitCredentials::None);
    let other = other.expect("open");
    let info = statestores::conformance::info("test");

    ours.write(&[put("a/one.yaml", "1")], &info)
        .await
        .expect("first write");
    assert_eq!(heard.take(), ["pushed 1"]);
    other
        .write(&[put("b/two.yaml", "2")], &info)
        .await
        .expect("another writer");
    ours.write(&[put("a/one.yaml", "1b")], &info)
        .await
        .expect("re-applied");
    assert_eq!(heard.take(), ["conflict", "pushed 1"]);
    let files = files_at(&remote.bare, "main", &["a/one.yaml", "b/two.yaml"]);
    assert_eq!(files, [Some(b"1b".to_vec()), Some(b"2".to_vec())]);
}
