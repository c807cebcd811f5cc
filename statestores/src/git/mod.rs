//! A branch of a Git repository as a state store.
//!
//! Each write becomes at most one commit, built from the previous tip's tree by editing only the
//! changed paths (gix), then pushed without force (libgit2). When the branch moved meanwhile,
//! the changes are re-applied on the new tip, so commits made by others are never lost.

mod error;
mod known_hosts;
mod local;
mod network;
mod tree;
mod url;

use crate::error_chain::ErrorChain;
use crate::{Change, Error, Key, Result, StateStore, Version, WriteInfo, WriteOutcome};
use bytes::Bytes;
use error::{GitError, Meaning, Refusal};
use gix::ObjectId;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use url::Location;

/// The SSH user when neither the credentials nor the URL name one.
pub const DEFAULT_SSH_USER: &str = "git";

/// How to authenticate to the repository. `Debug` never shows secrets.
#[derive(Clone, Default, PartialEq, Eq)]
pub enum GitCredentials {
    /// Anonymous access (and local repositories).
    #[default]
    None,
    /// HTTP basic authentication.
    Basic { username: String, password: String },
    /// An SSH key.
    Ssh {
        /// The private key, PEM or OpenSSH text, unencrypted.
        private_key: String,
        /// The text of a `known_hosts` file. When given, the server's host key must be listed
        /// in it (list every key type the server has, as `ssh-keyscan` prints); when absent,
        /// any host key is accepted.
        known_hosts: Option<String>,
        /// Defaults to the URL's user, else [`DEFAULT_SSH_USER`].
        username: Option<String>,
    },
}

impl GitCredentials {
    /// SSH key credentials with the default user.
    pub fn ssh(private_key: impl Into<String>, known_hosts: Option<String>) -> Self {
        Self::Ssh {
            private_key: private_key.into(),
            known_hosts,
            username: None,
        }
    }
}

impl std::fmt::Debug for GitCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GitCredentials::None => f.write_str("None"),
            GitCredentials::Basic { username, .. } => f
                .debug_struct("Basic")
                .field("username", username)
                .field("password", &"<redacted>")
                .finish(),
            GitCredentials::Ssh {
                known_hosts,
                username,
                ..
            } => f
                .debug_struct("Ssh")
                .field("private_key", &"<redacted>")
                .field("known_hosts", &known_hosts.as_ref().map(|_| "<set>"))
                .field("username", username)
                .finish(),
        }
    }
}

/// What [`Git::open`] needs.
#[derive(Clone, PartialEq, Eq)]
pub struct GitOptions {
    /// A local path, `file://`, `git://`, `http(s)://`, `ssh://` or scp-style `user@host:path`.
    /// A local repository that does not exist yet is created, bare.
    pub url: String,
    /// The branch to write; created by the first write when missing.
    pub branch: String,
    /// Where the handle keeps its cached bare repository for remote URLs (unused for local
    /// ones). One handle per folder. `None`: a private temporary folder, removed with the handle.
    pub cache_dir: Option<PathBuf>,
    pub credentials: GitCredentials,
    /// How many times a write is re-applied on a branch that moved before giving up with
    /// [`Error::Contended`].
    pub push_retries: u32,
    /// How long one operation (a write with its re-applies, a read, an access check) may take
    /// before it fails as [`Error::Unreachable`]: a server that accepts a connection and then
    /// never answers would otherwise hold the caller forever.
    pub timeout: Duration,
}

impl GitOptions {
    /// Options with no credentials, a private cache and the default retries.
    pub fn new(url: impl Into<String>, branch: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            branch: branch.into(),
            cache_dir: None,
            credentials: GitCredentials::None,
            push_retries: DEFAULT_PUSH_RETRIES,
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

/// See [`GitOptions::push_retries`].
pub const DEFAULT_PUSH_RETRIES: u32 = 5;

/// See [`GitOptions::timeout`].
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

impl std::fmt::Debug for GitOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GitOptions")
            .field("url", &redact_url(&self.url))
            .field("branch", &self.branch)
            .field("cache_dir", &self.cache_dir)
            .field("credentials", &self.credentials)
            .field("push_retries", &self.push_retries)
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// `https://user:secret@host/…` → `https://user:<redacted>@host/…`, for every place a URL is
/// shown (errors, logs, `get`). A password with an unescaped `/` (which git cannot use either)
/// ends the host part early: then everything from the first `:` to the first `@` is hidden, which
/// may hide more than the password but never less.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    if let Some((userinfo, host)) = authority.rsplit_once('@') {
        return match userinfo.split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:<redacted>@{host}{path}"),
            None => url.to_string(),
        };
    }
    match rest.split_once('@') {
        Some((before, after)) if before.contains(':') => {
            let user = before.split_once(':').map_or(before, |(u, _)| u);
            format!("{scheme}://{user}:<redacted>@{after}")
        }
        _ => url.to_string(),
    }
}

/// The outcome of publishing a commit.
#[derive(Debug)]
pub(crate) enum Publish {
    Done,
    /// The update of the branch was refused, with the reason given.
    Rejected(Refusal),
}

/// A branch of a Git repository. Clones share the handle (and its lock).
#[derive(Debug, Clone)]
pub struct Git {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    options: GitOptions,
    location: Location,
    /// Names the store in errors: the redacted URL and the branch.
    label: String,
    /// The repository where objects are built: the cache, or the local repository itself.
    objects: PathBuf,
    /// Serialises this handle's operations: they share the cache's refs. Held by the blocking
    /// thread that runs an operation, so an operation that outlives its timeout keeps it.
    lock: Arc<tokio::sync::Mutex<()>>,
    /// Set when an operation outlived its timeout: libgit2 cannot be interrupted, so it still
    /// runs (and holds the lock) until the server answers or hangs up. Its flag turns true
    /// when it ends; until then other operations fail at once instead of queueing behind it.
    overdue: std::sync::Mutex<Option<Arc<AtomicBool>>>,
    _private_cache: Option<tempfile::TempDir>,
}

impl Git {
    /// Prepares a handle: parses the URL, creates a missing local repository, and creates or
    /// opens the cache. Touches only local files; the network is first used by an operation.
    pub fn open(options: GitOptions) -> Result<Git> {
        let label = format!("{}#{}", redact_url(&options.url), options.branch);
        let config = |source: Box<dyn std::error::Error + Send + Sync>| Error::Config {
            store: label.clone(),
            source,
        };
        if !git2::Reference::is_valid_name(&local::branch_ref(&options.branch)) {
            return Err(config(
                GitError::BranchName {
                    name: options.branch,
                }
                .into(),
            ));
        }
        let location = url::parse(&options.url).map_err(|e| config(e.into()))?;
        let mut private_cache = None;
        let objects = match &location {
            Location::Local(path) => {
                local::ensure_bare(path, &options.branch).map_err(|e| to_error(&label, e))?;
                path.clone()
            }
            Location::Remote(_) => {
                let dir = match &options.cache_dir {
                    Some(dir) => dir.clone(),
                    None => {
                        let temp = tempfile::Builder::new()
                            .prefix("kratix-git-cache-")
                            .tempdir()
                            .map_err(|source| Error::Backend {
                                store: label.clone(),
                                context: "could not create the cache folder".to_string(),
                                source: Box::new(source),
                            })?;
                        let path = temp.path().to_path_buf();
                        private_cache = Some(temp);
                        path
                    }
                };
                local::ensure_bare(&dir, &options.branch).map_err(|e| to_error(&label, e))?;
                dir
            }
        };
        Ok(Git {
            inner: Arc::new(Inner {
                options,
                location,
                label,
                objects,
                lock: Arc::new(tokio::sync::Mutex::new(())),
                overdue: std::sync::Mutex::new(None),
                _private_cache: private_cache,
            }),
        })
    }

    pub fn options(&self) -> &GitOptions {
        &self.inner.options
    }

    /// Runs `work` on a blocking thread, one operation of this handle at a time, and gives up
    /// waiting for it after the handle's timeout (see [`Inner::overdue`]).
    async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Inner) -> Result<T, GitError> + Send + 'static,
    ) -> Result<T> {
        let timeout = self.inner.options.timeout;
        let fail = |e: GitError| Err(to_error(&self.inner.label, e));
        if self.inner.still_overdue() {
            return fail(GitError::Overdue { timeout });
        }
        let lock = Arc::clone(&self.inner.lock).lock_owned();
        let Ok(serialised) = tokio::time::timeout(timeout, lock).await else {
            return fail(GitError::Overdue { timeout });
        };
        // From here: the wait for the lock is not this operation's time.
        let deadline = tokio::time::Instant::now() + timeout;
        let inner = Arc::clone(&self.inner);
        let done = Arc::new(AtomicBool::new(false));
        let task = tokio::task::spawn_blocking({
            let done = Arc::clone(&done);
            move || {
                let result = work(&inner);
                done.store(true, Ordering::SeqCst);
                drop(serialised);
                result
            }
        });
        match tokio::time::timeout_at(deadline, task).await {
            Ok(Ok(result)) => result.map_err(|e| to_error(&self.inner.label, e)),
            Ok(Err(join)) => fail(GitError::Join(join)),
            Err(_elapsed) => {
                if let Ok(mut overdue) = self.inner.overdue.lock() {
                    *overdue = Some(done);
                }
                fail(GitError::TimedOut { timeout })
            }
        }
    }
}

fn to_error(store: &str, err: GitError) -> Error {
    let store = store.to_string();
    match err {
        GitError::Contended { attempts } => Error::Contended { store, attempts },
        err => match err.meaning() {
            Meaning::Unauthorized => Error::Unauthorized {
                store,
                source: Box::new(err),
            },
            Meaning::Unreachable => Error::Unreachable {
                store,
                source: Box::new(err),
            },
            Meaning::Other => Error::Backend {
                store,
                context: "git".to_string(),
                source: Box::new(err),
            },
        },
    }
}

/// How long to wait before re-applying after the `attempt`-th rejection (0-based), given a
/// random `jitter` in `[0, 1)`: exponential from 50 ms, capped at 2 s, then scaled into
/// `[50%, 100%)` so that writers who collided do not collide again in step.
fn backoff(attempt: u32, jitter: f64) -> Duration {
    let base = Duration::from_millis(50)
        .saturating_mul(1u32 << attempt.min(6))
        .min(Duration::from_secs(2));
    base.mul_f64(0.5 + jitter.clamp(0.0, 1.0) * 0.5)
}

fn to_git2(id: ObjectId) -> git2::Oid {
    git2::Oid::from_bytes(id.as_bytes()).expect("gix and libgit2 agree on SHA-1 ids")
}

fn from_git2(id: git2::Oid) -> ObjectId {
    ObjectId::try_from(id.as_bytes()).expect("gix and libgit2 agree on SHA-1 ids")
}

impl Inner {
    /// Whether an operation that outlived its timeout is still running.
    fn still_overdue(&self) -> bool {
        let Ok(mut overdue) = self.overdue.lock() else {
            return false;
        };
        match overdue.as_ref() {
            Some(done) if !done.load(Ordering::SeqCst) => true,
            _ => {
                *overdue = None;
                false
            }
        }
    }

    fn branch(&self) -> &str {
        &self.options.branch
    }

    /// Brings the branch's current tip into `objects` and returns it.
    fn sync(&self) -> Result<Option<ObjectId>, GitError> {
        match &self.location {
            Location::Local(path) => local::tip(&local::open(path)?, self.branch()),
            Location::Remote(remote) => Ok(network::fetch(
                &self.objects,
                remote,
                self.branch(),
                &self.options.credentials,
            )?
            .map(from_git2)),
        }
    }

    fn publish(
        &self,
        repo: &gix::Repository,
        base: Option<ObjectId>,
        commit: ObjectId,
    ) -> Result<Publish, GitError> {
        match &self.location {
            Location::Local(_) => local::compare_and_swap(repo, self.branch(), base, commit),
            Location::Remote(remote) => network::push(
                &self.objects,
                remote,
                self.branch(),
                &self.options.credentials,
                to_git2(commit),
            ),
        }
    }

    fn write(&self, changes: &[Change], info: &WriteInfo) -> Result<WriteOutcome, GitError> {
        let retries = self.options.push_retries;
        let mut rejected: Option<(Option<ObjectId>, Refusal)> = None;
        let mut refusals_on_unmoved_tip = 0;
        for attempt in 0..=retries {
            let tip = self.sync()?;
            if let Some((base, reason)) = rejected.take() {
                refusals_on_unmoved_tip = if base == tip {
                    refusals_on_unmoved_tip + 1
                } else {
                    0
                };
                // NB: once may be a lock held by a writer that has not finished; twice in a row
                // on a branch that never moved is a refusal, not contention.
                if refusals_on_unmoved_tip >= 2 {
                    return Err(GitError::PushRefused(reason));
                }
            }
            let repo = local::open(&self.objects)?;
            // Re-diffed on every attempt: on a moved tip, some changes may be no-ops now.
            let Some(edited) = tree::edit(&repo, tip, changes)? else {
                return Ok(WriteOutcome::default());
            };
            let commit = tree::commit(&repo, edited.tree, tip, info)?;
            crate::crash::crash_point("git-after-commit");
            match self.publish(&repo, tip, commit)? {
                Publish::Done => {
                    return Ok(WriteOutcome {
                        version: Some(Version(commit.to_string())),
                        written: edited.written,
                        deleted: edited.deleted,
                    })
                }
                Publish::Rejected(reason) => {
                    tracing::debug!(store = %self.label, attempt, reason = %ErrorChain(&*reason), "branch moved; re-applying");
                    rejected = Some((tip, reason));
                    if attempt < retries {
                        std::thread::sleep(backoff(attempt, fastrand::f64()));
                    }
                }
            }
        }
        Err(GitError::Contended {
            attempts: retries + 1,
        })
    }

    fn read(&self, key: &Key) -> Result<Option<Vec<u8>>, GitError> {
        let tip = self.sync()?;
        tree::read(&local::open(&self.objects)?, tip, key)
    }

    fn list(&self, prefix: &Key) -> Result<Vec<Key>, GitError> {
        let tip = self.sync()?;
        tree::list(&local::open(&self.objects)?, tip, prefix)
    }

    fn check_access(&self) -> Result<(), GitError> {
        match &self.location {
            Location::Local(path) => local::check_write(path),
            Location::Remote(remote) => {
                network::check_push(&self.objects, remote, &self.options.credentials)
            }
        }
    }
}

#[async_trait::async_trait]
impl StateStore for Git {
    fn kind(&self) -> &'static str {
        "git"
    }

    #[tracing::instrument(level = "debug", skip_all, fields(store = %self.inner.label, changes = changes.len()))]
    async fn write(&self, changes: &[Change], info: &WriteInfo) -> Result<WriteOutcome> {
        if changes.is_empty() {
            return Ok(WriteOutcome::default());
        }
        let changes = changes.to_vec();
        let info = info.clone();
        self.run(move |inner| inner.write(&changes, &info)).await
    }

    async fn read(&self, key: &Key) -> Result<Option<Bytes>> {
        let key = key.clone();
        Ok(self
            .run(move |inner| inner.read(&key))
            .await?
            .map(Bytes::from))
    }

    async fn list(&self, prefix: &Key) -> Result<Vec<Key>> {
        let prefix = prefix.clone();
        self.run(move |inner| inner.list(&prefix)).await
    }

    async fn check_access(&self) -> Result<()> {
        self.run(|inner| inner.check_access()).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_is_capped_and_jittered() {
        let cases = [
            (0, 0.0, 25),
            (0, 0.999_999, 49),
            (1, 0.0, 50),
            (3, 0.0, 200),
            (6, 0.0, 1000),
            (9, 0.0, 1000),
            (40, 0.5, 1500),
        ];
        for (attempt, jitter, want_ms) in cases {
            assert_eq!(
                backoff(attempt, jitter).as_millis(),
                want_ms,
                "{attempt} {jitter}"
            );
        }
    }

    #[test]
    fn urls_lose_their_passwords() {
        let cases = [
            ("https://u:secret@h/r.git", "https://u:<redacted>@h/r.git"),
            ("https://u@h/r.git", "https://u@h/r.git"),
            ("https://h/r@x.git", "https://h/r@x.git"),
            ("https://:secret@h/r", "https://:<redacted>@h/r"),
            ("https://u:p@ss@h:8443/r", "https://u:<redacted>@h:8443/r"),
            ("https://u:pa/ss@h/r.git", "https://u:<redacted>@h/r.git"),
            ("https://u:p%2Fss@h/r", "https://u:<redacted>@h/r"),
            ("HTTP://u:secret@h", "HTTP://u:<redacted>@h"),
            ("ssh://git@h:22/r@v1", "ssh://git@h:22/r@v1"),
            ("ssh://git:secret@h/r", "ssh://git:<redacted>@h/r"),
            ("https://h:8443/r@v1", "https://h:<redacted>@v1"),
            ("git@h:r.git", "git@h:r.git"),
            ("/srv/r.git", "/srv/r.git"),
        ];
        for (url, want) in cases {
            assert_eq!(redact_url(url), want);
        }
    }

    #[test]
    fn unusable_options_say_why_once() {
        let cases = [
            (
                "https://h/r.git",
                "bad..name",
                "https://h/r.git#bad..name: invalid branch name \"bad..name\"",
            ),
            (
                "ftp://h/r.git",
                "main",
                "ftp://h/r.git#main: unsupported URL scheme \"ftp\" \
                 (use a path, file, git, http, https or ssh)",
            ),
            ("", "main", "#main: the repository URL is empty"),
        ];
        for (url, branch, want) in cases {
            let err = Git::open(GitOptions::new(url, branch)).expect_err(want);
            assert!(matches!(err, Error::Config { .. }), "{err:?}");
            assert_eq!(ErrorChain(&err).to_string(), want);
        }
    }

    #[test]
    fn debug_never_shows_secrets() {
        let mut options = GitOptions::new("https://u:pw-in-url@h/r.git", "main");
        options.credentials = GitCredentials::Basic {
            username: "u".into(),
            password: "hunter2".into(),
        };
        let shown = format!("{options:?}");
        assert!(
            !shown.contains("hunter2") && !shown.contains("pw-in-url"),
            "{shown}"
        );
        let handle = Git::open(options).expect("a handle; no network yet");
        let shown = format!("{handle:?}");
        assert!(shown.contains("<redacted>"), "{shown}");
        assert!(
            !shown.contains("hunter2") && !shown.contains("pw-in-url"),
            "{shown}"
        );
        let ssh = GitCredentials::ssh("-----BEGIN OPENSSH PRIVATE KEY-----", Some("kh".into()));
        assert!(!format!("{ssh:?}").contains("BEGIN"));
    }
}
