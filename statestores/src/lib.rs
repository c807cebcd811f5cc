//! Where a platform's desired state is written: Git repositories, S3-compatible buckets and
//! memory, behind one trait, [`StateStore`].
//!
//! This crate knows nothing of Kratix or Kubernetes: it stores files at paths and reports what it
//! changed. Which paths a caller owns, and what they should hold, is the caller's business.

mod bucket;
mod key;

#[cfg(any(test, feature = "conformance"))]
pub mod conformance;
pub mod crash;
pub mod error_chain;
mod git;
mod memory;
mod overlay;

pub use bucket::{Bucket, BucketAuth, BucketOptions};
pub use git::{redact_url, Git, GitCredentials, GitOptions, TlsTrust};
pub use key::{Key, KeyError};
pub use memory::InMemory;
pub use overlay::{Overlay, Pending};

use bytes::Bytes;
use std::fmt::Debug;

/// An opaque identifier of what a store holds after a write: a commit SHA for Git, a content hash
/// for buckets.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Version(pub String);

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// One change to make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Make `key` hold exactly these bytes.
    Put(Key, Bytes),
    /// Make `key` absent (no error when it already is).
    Delete(Key),
}

impl Change {
    pub fn key(&self) -> &Key {
        match self {
            Change::Put(k, _) | Change::Delete(k) => k,
        }
    }
}

/// Who writes, and why: becomes the commit's author and message in Git; informational elsewhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteInfo {
    /// The whole message: a subject line, a blank line, then trailers.
    pub message: String,
    pub author_name: String,
    pub author_email: String,
}

/// Told what a Git store's publishing did, for a caller's metrics; the store neither knows nor
/// cares who listens. Called on the store's blocking thread: keep it cheap.
pub trait PushEvents: Debug + Send + Sync {
    /// One push (a compare-and-swap for a local repository) published `commits` commits.
    fn pushed(&self, commits: usize);
    /// A push was refused because the branch had moved; the writes are re-applied on its tip.
    fn conflict(&self);
    /// A write is pushed again after waiting, the branch having moved under a freshly fetched
    /// tip (contention, as opposed to a stale cache).
    fn retry(&self);
}

/// What a write did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WriteOutcome {
    /// The version that holds the change, or `None` when the store already held exactly the
    /// requested content (nothing was written).
    pub version: Option<Version>,
    /// Keys whose content was created or replaced.
    pub written: Vec<Key>,
    /// Keys that were present and were removed.
    pub deleted: Vec<Key>,
}

impl WriteOutcome {
    pub fn changed(&self) -> bool {
        !self.written.is_empty() || !self.deleted.is_empty()
    }
}

/// Every file under a prefix as one version of the store holds them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Snapshot {
    /// The version read: the commit for Git; for other stores a hash of the keys and contents
    /// read (the same files give the same version).
    pub version: Option<Version>,
    /// The files under the prefix, sorted by key.
    pub files: Vec<(Key, Bytes)>,
}

impl Snapshot {
    /// A snapshot of `files` whose version is the hash of their keys and contents.
    pub fn hashed(files: Vec<(Key, Bytes)>) -> Self {
        use sha2::{Digest, Sha256};
        let mut hash = Sha256::new();
        for (key, bytes) in &files {
            hash.update(key.as_str().as_bytes());
            hash.update([0]);
            hash.update((bytes.len() as u64).to_be_bytes());
            hash.update(bytes);
        }
        Self {
            version: Some(Version(hex::encode(hash.finalize()))),
            files,
        }
    }
}

/// Errors every backend reports, by meaning.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The store refused our credentials.
    #[error("{store}: access denied")]
    Unauthorized {
        store: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The server's TLS certificate is not trusted: it was not issued by a CA the store trusts
    /// (the system's, or those it was given), or not for its host name.
    #[error("{store}: the server's TLS certificate is not trusted")]
    UntrustedCertificate {
        store: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The store (server, bucket, repository) could not be reached or does not exist.
    #[error("{store}: unreachable")]
    Unreachable {
        store: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Someone else kept changing the store and our change could not be applied in the retries
    /// we allow.
    #[error("{store}: gave up after {attempts} attempts because the store kept changing")]
    Contended { store: String, attempts: u32 },
    /// The store's configuration is unusable (bad URL, missing credential field). The message
    /// names what is wrong, so that it reads whole even where only the top line is shown.
    #[error("{store}: {source}")]
    Config {
        store: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Anything else the backend reported.
    #[error("{store}: {context}")]
    Backend {
        store: String,
        context: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A place files are written to.
///
/// # Contract
/// - `write` MUST apply all `changes` as one unit where the backend can (one commit for Git) and
///   MUST write only what differs from what the store holds at the time of the write: a `Put` of
///   identical content and a `Delete` of an absent key are no-ops. When nothing differs it MUST NOT
///   write anything and returns `version: None`.
/// - `write` MUST NOT touch keys that are not named in `changes`, and MUST NOT lose concurrent
///   writes by others: when the store moved on meanwhile, the changes are re-applied on top of it.
/// - The same key MUST NOT appear twice in one `write`.
/// - `read` returns `None` for an absent key. `list` returns the keys under a prefix, sorted.
/// - `check_access` verifies the store can be written to and leaves nothing behind.
/// - `snapshot` returns every file under a prefix as one version holds them where the backend
///   keeps versions (Git reads one commit); elsewhere it lists, then reads each file.
#[async_trait::async_trait]
pub trait StateStore: Debug + Send + Sync + 'static {
    /// `git`, `bucket`, `dir` or `memory`.
    fn kind(&self) -> &'static str;

    async fn write(&self, changes: &[Change], info: &WriteInfo) -> Result<WriteOutcome>;

    async fn read(&self, key: &Key) -> Result<Option<Bytes>>;

    async fn list(&self, prefix: &Key) -> Result<Vec<Key>>;

    async fn check_access(&self) -> Result<()>;

    /// Every file under `prefix`, read with this store's own `list` and `read`.
    async fn snapshot(&self, prefix: &Key) -> Result<Snapshot> {
        let mut files = Vec::new();
        for key in self.list(prefix).await? {
            if let Some(bytes) = self.read(&key).await? {
                files.push((key, bytes));
            }
        }
        Ok(Snapshot::hashed(files))
    }
}
