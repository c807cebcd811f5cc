//! What can fail in the Git backend, and what each failure means to a caller.

use std::path::PathBuf;

/// One variant per failing step. Messages never carry credentials: URLs are redacted before they
/// are stored in a handle, and libgit2 messages do not echo secrets.
#[derive(Debug, thiserror::Error)]
pub(crate) enum GitError {
    #[error("could not create the repository at {path}")]
    InitRepository {
        path: PathBuf,
        #[source]
        source: git2::Error,
    },
    #[error("could not open the repository at {path}")]
    OpenRepository {
        path: PathBuf,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("could not fetch the branch")]
    Fetch(#[source] git2::Error),
    #[error("could not push the branch")]
    Push(#[source] git2::Error),
    #[error("the remote refused the push")]
    PushRefused(#[source] Refusal),
    #[error("gave up after {attempts} attempts because the branch kept moving")]
    Contended { attempts: u32 },
    #[error("could not connect for push")]
    ConnectForPush(#[source] git2::Error),
    #[error("could not read the branch")]
    ReadBranch(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("could not read objects")]
    ReadObjects(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("could not write objects")]
    WriteObjects(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("could not update the branch")]
    UpdateBranch(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("invalid branch name {name:?}")]
    BranchName { name: String },
    #[error("{path} holds a folder where a file is wanted, or the reverse")]
    PathConflict { path: String },
    #[error("could not check write access")]
    CheckAccess(#[source] std::io::Error),
    #[error("blocking task failed")]
    Join(#[source] tokio::task::JoinError),
    #[error("the server did not answer within {timeout:?}")]
    TimedOut { timeout: std::time::Duration },
    #[error("the write was taken by an operation that ended without saying how it went")]
    NoOutcome,
    /// A failure of a push that several writes shared, reported to each of them.
    #[error(transparent)]
    Shared(std::sync::Arc<GitError>),
    #[error("the CA certificates given cannot be used")]
    CaCertificates(#[source] super::tls::TlsError),
    #[error("an earlier operation is still waiting for the server, which did not answer it within {timeout:?}")]
    Overdue { timeout: std::time::Duration },
}

/// Why an update of the branch was refused: the error that said so, or the server's own words.
pub(crate) type Refusal = Box<dyn std::error::Error + Send + Sync>;

/// A refusal the server gave only as text: a push status line.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct ServerRefusal(pub String);

/// What a failure means, as [`crate::Error`] distinguishes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Meaning {
    Unauthorized,
    UntrustedCertificate,
    Unreachable,
    Other,
}

impl GitError {
    /// How many attempts a write made before giving up because the branch kept moving.
    pub(crate) fn contended_attempts(&self) -> Option<u32> {
        match self {
            GitError::Contended { attempts } => Some(*attempts),
            GitError::Shared(shared) => shared.contended_attempts(),
            _ => None,
        }
    }

    pub(crate) fn meaning(&self) -> Meaning {
        match self {
            GitError::Shared(shared) => shared.meaning(),
            GitError::Fetch(e) | GitError::Push(e) | GitError::ConnectForPush(e) => {
                classify(e.code(), e.class(), e.message())
            }
            GitError::OpenRepository { .. }
            | GitError::TimedOut { .. }
            | GitError::Overdue { .. } => Meaning::Unreachable,
            GitError::CheckAccess(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                Meaning::Unauthorized
            }
            _ => Meaning::Other,
        }
    }
}

/// Reads meaning from libgit2's code, class and message, which is all libgit2 gives: transports
/// report HTTP statuses and server refusals only as text.
pub(crate) fn classify(code: git2::ErrorCode, class: git2::ErrorClass, message: &str) -> Meaning {
    use git2::{ErrorClass as Class, ErrorCode as Code};
    let text = message.to_ascii_lowercase();
    let says = |needles: &[&str]| needles.iter().any(|n| text.contains(n));
    // An SSH host key refused is `Certificate` of class `Ssh`, and reads as access denied.
    if class == Class::Ssl && (code == Code::Certificate || says(&["certificate"])) {
        return Meaning::UntrustedCertificate;
    }
    if matches!(code, Code::Auth | Code::Certificate)
        || says(&[
            "status code: 401",
            "status code: 403",
            "authentication",
            "username/publickey",
            "permission denied",
            "credentials",
            "host key",
        ])
    {
        return Meaning::Unauthorized;
    }
    if matches!(class, Class::Net | Class::Os)
        || says(&[
            "status code: 404",
            "not found",
            "does not appear to be a git repository",
            "not exported",
            "no such repository",
            "could not find repository",
            "connection refused",
            "failed to connect",
            "failed to resolve",
            "could not resolve",
            "timed out",
            "early eof",
            "hung up",
            "unexpected eof",
        ])
    {
        return Meaning::Unreachable;
    }
    Meaning::Other
}

#[cfg(test)]
mod tests {
    use super::*;
    use git2::{ErrorClass as Class, ErrorCode as Code};

    #[test]
    fn libgit2_errors_are_read_by_meaning() {
        let cases = [
            (Code::Auth, Class::Http, "anything", Meaning::Unauthorized),
            (
                Code::GenericError,
                Class::Http,
                "unexpected http status code: 401",
                Meaning::Unauthorized,
            ),
            (
                Code::GenericError,
                Class::Http,
                "unexpected http status code: 403",
                Meaning::Unauthorized,
            ),
            (
                Code::GenericError,
                Class::Ssh,
                "Username/PublicKey combination invalid",
                Meaning::Unauthorized,
            ),
            (
                Code::Certificate,
                Class::Ssh,
                "host key rejected",
                Meaning::Unauthorized,
            ),
            (
                Code::Certificate,
                Class::Ssl,
                "the SSL certificate is invalid",
                Meaning::UntrustedCertificate,
            ),
            (
                Code::GenericError,
                Class::Ssl,
                "the SSL certificate is invalid",
                Meaning::UntrustedCertificate,
            ),
            (
                Code::GenericError,
                Class::Http,
                "unexpected http status code: 404",
                Meaning::Unreachable,
            ),
            (
                Code::GenericError,
                Class::Os,
                "failed to connect to 127.0.0.1: Connection refused",
                Meaning::Unreachable,
            ),
            (
                Code::GenericError,
                Class::Net,
                "early EOF",
                Meaning::Unreachable,
            ),
            (
                Code::GenericError,
                Class::Ssh,
                "ERROR: Repository not found.",
                Meaning::Unreachable,
            ),
            (
                Code::GenericError,
                Class::Net,
                "remote error: access denied or repository not exported: /x",
                Meaning::Unreachable,
            ),
            (
                Code::NotFastForward,
                Class::Reference,
                "cannot push non-fastforwardable reference",
                Meaning::Other,
            ),
            (
                Code::GenericError,
                Class::Odb,
                "object is corrupt",
                Meaning::Other,
            ),
        ];
        for (code, class, message, want) in cases {
            assert_eq!(classify(code, class, message), want, "{message}");
        }
    }
}
