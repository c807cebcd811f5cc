//! A branch of a Git repository as a state store.
//!
//! Each write becomes at most one commit, built from the previous tip's tree by editing only the
//! changed paths (gix), then pushed without force (libgit2). When the branch moved meanwhile,
//! the changes are re-applied on the new tip, so commits made by others are never lost. Writes
//! that arrive while another is under way keep their own commits but share one push.

mod error;
mod known_hosts;
mod local;
mod network;
mod options;
mod tls;
mod tree;
mod url;
mod write;

pub(crate) use options::DEFAULT_SSH_USER;
pub use options::{redact_url, GitCredentials, GitOptions};
pub use tls::TlsTrust;

use crate::{Change, Error, Key, Result, Snapshot, StateStore, Version, WriteInfo, WriteOutcome};
use bytes::Bytes;
use error::{GitError, Meaning, Refusal};
use gix::ObjectId;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use url::Location;

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
    /// Writes waiting for the next push; whoever holds the lock next takes them all.
    queue: std::sync::Mutex<Vec<write::Queued>>,
    next_write: AtomicU64,
    /// Who hears of pushes, conflicts and retries.
    events: Option<Arc<dyn crate::PushEvents>>,
    _private_cache: Option<tempfile::TempDir>,
}

impl Git {
    /// Prepares a handle: parses the URL, creates a missing local repository, and creates or
    /// opens the cache. Touches only local files; the network is first used by an operation.
    pub fn open(options: GitOptions) -> Result<Git> {
        Self::open_with_events(options, None)
    }

    /// [`Git::open`], telling `events` what each push does.
    pub fn open_with_events(
        options: GitOptions,
        events: Option<Arc<dyn crate::PushEvents>>,
    ) -> Result<Git> {
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
        if let TlsTrust::AlsoTrust(pem) = &options.tls {
            tls::parse_bundle(pem).map_err(|e| config(GitError::CaCertificates(e).into()))?;
        }
        let mut private_cache = None;
        let objects = match &location {
            Location::Local(path) => {
                local::ensure_bare(path, &options.branch).map_err(|e| to_error(&label, e))?;
                path.clone()
            }
            Location::Remote(_) => {
                let dir = if let Some(dir) = &options.cache_dir {
                    dir.clone()
                } else {
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
                queue: std::sync::Mutex::new(Vec::new()),
                next_write: AtomicU64::new(0),
                events,
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
    match err.contended_attempts() {
        Some(attempts) => Error::Contended { store, attempts },
        None => match err.meaning() {
            Meaning::Unauthorized => Error::Unauthorized {
                store,
                source: Box::new(err),
            },
            Meaning::UntrustedCertificate => Error::UntrustedCertificate {
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
            Location::Remote(remote) => {
                Ok(
                    network::fetch(&self.objects, remote, self.branch(), &self.options)?
                        .map(from_git2),
                )
            }
        }
    }

    fn read(&self, key: &Key) -> Result<Option<Vec<u8>>, GitError> {
        let tip = self.sync()?;
        tree::read(&local::open(&self.objects)?, tip, key)
    }

    fn list(&self, prefix: &Key) -> Result<Vec<Key>, GitError> {
        let tip = self.sync()?;
        tree::list(&local::open(&self.objects)?, tip, prefix)
    }

    /// Every file under `prefix` in one commit: the branch's tip, read once.
    fn snapshot(&self, prefix: &Key) -> Result<Snapshot, GitError> {
        let tip = self.sync()?;
        let repo = local::open(&self.objects)?;
        let mut files = Vec::new();
        for key in tree::list(&repo, tip, prefix)? {
            if let Some(bytes) = tree::read(&repo, tip, &key)? {
                files.push((key, Bytes::from(bytes)));
            }
        }
        Ok(Snapshot {
            version: tip.map(|id| Version(id.to_string())),
            files,
        })
    }

    fn check_access(&self) -> Result<(), GitError> {
        match &self.location {
            Location::Local(path) => local::check_write(path),
            Location::Remote(remote) => network::check_push(&self.objects, remote, &self.options),
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
        let (id, answer) = self.inner.enqueue(changes.to_vec(), info.clone());
        // Takes the write back if it is still queued when this call ends: failed to get its
        // turn, or was cancelled. Once taken, an operation that outlives its timeout may still
        // land it, as for any timeout.
        let _unqueue = write::Unqueue::new(&self.inner, id);
        self.run(|inner| {
            inner.write_queued();
            Ok(())
        })
        .await?;
        // Whoever took this write answered it before releasing the lock we then acquired.
        match answer.await {
            Ok(outcome) => outcome.map_err(|e| to_error(&self.inner.label, e)),
            Err(_) => Err(to_error(&self.inner.label, GitError::NoOutcome)),
        }
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
        self.run(Inner::check_access).await
    }

    async fn snapshot(&self, prefix: &Key) -> Result<Snapshot> {
        let prefix = prefix.clone();
        self.run(move |inner| inner.snapshot(&prefix)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error_chain::ErrorChain;

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
