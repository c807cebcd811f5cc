//! Fetching from and pushing to a repository behind a transport, with libgit2, into the
//! handle's cached bare repository.

use super::error::{GitError, ServerRefusal};
use super::known_hosts::{self, Verdict};
use super::tls::{self, TlsTrust};
use super::url::Remote;
use super::{GitCredentials, GitOptions, Publish};
use git2::{
    AutotagOption, CertificateCheckStatus, Cred, CredentialType, Direction, ErrorClass, ErrorCode,
    FetchOptions, PushOptions, RemoteCallbacks, Repository,
};
use std::cell::{Cell, RefCell};
use std::io::Write;
use std::path::Path;

/// Everything a connection needs to authenticate; lives as long as one operation.
struct Auth<'a> {
    credentials: &'a GitCredentials,
    trust: Trust,
    remote: &'a Remote,
    /// Offers of a secret so far: a second offer means the first was refused.
    offers: Cell<u32>,
    /// Only when libssh2 cannot take the key from memory; removed when dropped.
    key_file: RefCell<Option<tempfile::NamedTempFile>>,
}

impl<'a> Auth<'a> {
    fn new(options: &'a GitOptions, remote: &'a Remote) -> Result<Self, GitError> {
        let trust = match &options.tls {
            TlsTrust::System => Trust::System,
            TlsTrust::Insecure => Trust::Anything,
            TlsTrust::AlsoTrust(pem) => {
                Trust::Also(tls::parse_bundle(pem).map_err(GitError::CaCertificates)?)
            }
        };
        Ok(Self {
            credentials: &options.credentials,
            trust,
            remote,
            offers: Cell::new(0),
            key_file: RefCell::new(None),
        })
    }

    fn refused(message: &str) -> git2::Error {
        git2::Error::new(ErrorCode::Auth, ErrorClass::Callback, message)
    }

    fn credential(
        &self,
        user_from_url: Option<&str>,
        allowed: CredentialType,
    ) -> Result<Cred, git2::Error> {
        match self.credentials {
            // libgit2 offers a password in the URL by itself, and asks us only once it failed.
            GitCredentials::None if super::redact_url(&self.remote.url) != self.remote.url => {
                Err(Self::refused("the server refused the password in the URL"))
            }
            GitCredentials::None => Err(Self::refused(
                "the server asks for credentials and none are configured",
            )),
            GitCredentials::Basic { username, password } => {
                if !allowed.contains(CredentialType::USER_PASS_PLAINTEXT) {
                    return Err(Self::refused("the server does not accept a password"));
                }
                self.offer()?;
                Cred::userpass_plaintext(username, password)
            }
            GitCredentials::Ssh {
                private_key,
                username,
                ..
            } => {
                let user = username
                    .as_deref()
                    .or(user_from_url)
                    .unwrap_or(super::DEFAULT_SSH_USER);
                if allowed.contains(CredentialType::USERNAME) {
                    return Cred::username(user);
                }
                if !allowed.intersects(CredentialType::SSH_KEY | CredentialType::SSH_MEMORY) {
                    return Err(Self::refused("the server does not accept an SSH key"));
                }
                self.offer()?;
                if allowed.contains(CredentialType::SSH_MEMORY) {
                    if let Ok(cred) = Cred::ssh_key_from_memory(user, None, private_key, None) {
                        return Ok(cred);
                    }
                }
                self.key_from_file(user, private_key)
            }
        }
    }

    fn offer(&self) -> Result<(), git2::Error> {
        let offers = self.offers.get() + 1;
        self.offers.set(offers);
        if offers > 1 {
            return Err(Self::refused("the server refused the credentials"));
        }
        Ok(())
    }

    /// NB: the temporary file is created with mode 0600 by `tempfile`, and removed when this
    /// operation ends.
    fn key_from_file(&self, user: &str, private_key: &str) -> Result<Cred, git2::Error> {
        let io = |e: std::io::Error| {
            git2::Error::new(
                ErrorCode::GenericError,
                ErrorClass::Ssh,
                format!(
                    "could not write the SSH key to a private file: {}",
                    e.kind()
                ),
            )
        };
        let mut file = tempfile::NamedTempFile::new().map_err(io)?;
        file.write_all(private_key.as_bytes()).map_err(io)?;
        if !private_key.ends_with('\n') {
            file.write_all(b"\n").map_err(io)?;
        }
        file.flush().map_err(io)?;
        let cred = Cred::ssh_key(user, None, file.path(), None);
        *self.key_file.borrow_mut() = Some(file);
        cred
    }

    /// A TLS certificate: accepted when verification is off, or when the CA certificates the
    /// store gave issued it; otherwise libgit2's own check against the system's decides.
    fn check_tls(&self, cert: &git2::cert::Cert<'_>, host: &str) -> CertificateCheckStatus {
        let accepted = match &self.trust {
            Trust::System => false,
            Trust::Anything => true,
            Trust::Also(bundle) => cert
                .as_x509()
                .is_some_and(|x509| tls::trusted_by(bundle, x509.data(), host)),
        };
        if accepted {
            CertificateCheckStatus::CertificateOk
        } else {
            CertificateCheckStatus::CertificatePassthrough
        }
    }

    fn check_certificate(
        &self,
        cert: &git2::cert::Cert<'_>,
        host: &str,
    ) -> Result<CertificateCheckStatus, git2::Error> {
        let Some(host_key) = cert.as_hostkey() else {
            return Ok(self.check_tls(cert, host));
        };
        let GitCredentials::Ssh {
            known_hosts: Some(known_hosts),
            ..
        } = self.credentials
        else {
            // Without known_hosts there is nothing to check against: accept, as configured.
            return Ok(CertificateCheckStatus::CertificateOk);
        };
        let untrusted = |why: &str| {
            git2::Error::new(
                ErrorCode::Certificate,
                ErrorClass::Ssh,
                format!("host key {why}"),
            )
        };
        let (Some(at), Some(key)) = (&self.remote.ssh_host, host_key.hostkey()) else {
            return Err(untrusted(
                "could not be read to check it against known_hosts",
            ));
        };
        match known_hosts::verify(known_hosts, at, key) {
            Verdict::Trusted => Ok(CertificateCheckStatus::CertificateOk),
            Verdict::Untrusted => Err(untrusted(&format!(
                "of {}:{} is not listed in known_hosts",
                at.host, at.port
            ))),
        }
    }

    fn callbacks(&self) -> RemoteCallbacks<'_> {
        let mut callbacks = RemoteCallbacks::new();
        callbacks.credentials(|_url, user, allowed| self.credential(user, allowed));
        callbacks.certificate_check(|cert, host| self.check_certificate(cert, host));
        callbacks
    }
}

/// Which TLS certificates a connection accepts beyond those libgit2 verifies itself.
enum Trust {
    System,
    Anything,
    Also(Vec<rustls_pki_types::CertificateDer<'static>>),
}

fn open(cache: &Path) -> Result<Repository, GitError> {
    Repository::open_bare(cache).map_err(|source| GitError::OpenRepository {
        path: cache.to_path_buf(),
        source: Box::new(source),
    })
}

pub(crate) fn tracking_ref(branch: &str) -> String {
    format!("refs/remotes/origin/{branch}")
}

/// Fetches `branch` into the cache and returns its tip on the remote, `None` when the branch
/// (or any commit at all) does not exist there yet.
pub(crate) fn fetch(
    cache: &Path,
    remote: &Remote,
    branch: &str,
    options: &GitOptions,
) -> Result<Option<git2::Oid>, GitError> {
    let repo = open(cache)?;
    let mut connection = repo
        .remote_anonymous(&remote.url)
        .map_err(GitError::Fetch)?;
    let auth = Auth::new(options, remote)?;
    let mut options = FetchOptions::new();
    options
        .remote_callbacks(auth.callbacks())
        .download_tags(AutotagOption::None)
        .update_fetchhead(false);
    let head = format!("refs/heads/{branch}");
    // The tracking ref keeps what we have reachable and tells the server what not to send.
    let refspec = format!("+{head}:{}", tracking_ref(branch));
    connection
        .fetch(&[refspec.as_str()], Some(&mut options), None)
        .map_err(GitError::Fetch)?;
    // NB: libgit2 keeps the advertised refs after the fetch disconnects; they are the truth
    // about the remote, where the tracking ref may be stale (a deleted branch is not pruned).
    let tip = connection
        .list()
        .map_err(GitError::Fetch)?
        .iter()
        .find(|advertised| advertised.name() == head)
        .map(git2::RemoteHead::oid);
    Ok(tip)
}

/// Pushes `commit` to `branch` without force, only if the remote's branch is at `expected`
/// (absent for `None`). A refusal because the branch moved (or any other refusal of the update)
/// is [`Publish::Rejected`]; transport failures are errors.
///
/// NB: checking the advertised tip first lets a writer push on the tip it last saw without
/// fetching first: a stale guess costs one connection and sends nothing. The server itself
/// then checks the same old value when it updates the branch.
pub(crate) fn push(
    cache: &Path,
    remote: &Remote,
    branch: &str,
    options: &GitOptions,
    expected: Option<git2::Oid>,
    commit: git2::Oid,
) -> Result<Publish, GitError> {
    let repo = open(cache)?;
    let mut anonymous = repo.remote_anonymous(&remote.url).map_err(GitError::Push)?;
    let auth = Auth::new(options, remote)?;
    let mut connection = anonymous
        .connect_auth(Direction::Push, Some(auth.callbacks()), None)
        .map_err(GitError::Push)?;
    let head = format!("refs/heads/{branch}");
    let advertised = connection
        .list()
        .map_err(GitError::Push)?
        .iter()
        .find(|advertised| advertised.name() == head)
        .map(git2::RemoteHead::oid);
    if advertised != expected {
        return Ok(Publish::Rejected(Box::new(ServerRefusal(
            "the branch moved on the remote".to_string(),
        ))));
    }
    let refused: RefCell<Option<String>> = RefCell::new(None);
    let mut callbacks = auth.callbacks();
    callbacks.push_transfer_progress(|_, _, _| crate::crash::crash_point("git-in-push"));
    callbacks.push_update_reference(|_name, status| {
        if let Some(reason) = status {
            *refused.borrow_mut() = Some(reason.to_string());
        }
        Ok(())
    });
    let mut options = PushOptions::new();
    options.remote_callbacks(callbacks);
    let refspec = format!("{commit}:refs/heads/{branch}");
    match connection
        .remote()
        .push(&[refspec.as_str()], Some(&mut options))
    {
        Ok(()) => {}
        // libgit2 checks fast-forward itself against what the server advertised.
        Err(e) if e.code() == ErrorCode::NotFastForward => {
            return Ok(Publish::Rejected(Box::new(e)))
        }
        Err(e) => return Err(GitError::Push(e)),
    }
    drop(options);
    drop(connection);
    if let Some(reason) = refused.into_inner() {
        return Ok(Publish::Rejected(Box::new(ServerRefusal(reason))));
    }
    // Best effort: only spares the next fetch from downloading our own commit again.
    let _ = repo.reference(&tracking_ref(branch), commit, true, "pushed");
    Ok(Publish::Done)
}

/// Connects for push, which needs write permission on every transport we support (the server
/// runs receive-pack), and disconnects without sending anything.
pub(crate) fn check_push(
    cache: &Path,
    remote: &Remote,
    options: &GitOptions,
) -> Result<(), GitError> {
    let repo = open(cache)?;
    let mut connection = repo
        .remote_anonymous(&remote.url)
        .map_err(GitError::ConnectForPush)?;
    let auth = Auth::new(options, remote)?;
    let connected = connection
        .connect_auth(Direction::Push, Some(auth.callbacks()), None)
        .map_err(GitError::ConnectForPush)?;
    connected.list().map_err(GitError::ConnectForPush)?;
    Ok(())
}
