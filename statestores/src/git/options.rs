//! How a Git store is reached: its URL, branch, credentials and limits, and how a URL is shown.

use std::path::PathBuf;
use std::time::Duration;

use super::TlsTrust;

/// The SSH user when neither the credentials nor the URL name one.
pub(crate) const DEFAULT_SSH_USER: &str = "git";

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
        /// Defaults to the URL's user, else `git`.
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
    /// How an `https://` server's certificate is checked (other transports ignore it).
    pub tls: TlsTrust,
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
            tls: TlsTrust::System,
            push_retries: DEFAULT_PUSH_RETRIES,
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

/// See [`GitOptions::push_retries`].
pub(crate) const DEFAULT_PUSH_RETRIES: u32 = 5;

/// See [`GitOptions::timeout`].
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

impl std::fmt::Debug for GitOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GitOptions")
            .field("url", &redact_url(&self.url))
            .field("branch", &self.branch)
            .field("cache_dir", &self.cache_dir)
            .field("credentials", &self.credentials)
            .field("tls", &self.tls)
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
