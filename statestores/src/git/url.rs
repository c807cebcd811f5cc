//! Where a repository lives, decided from its URL alone.

use std::path::PathBuf;

/// How a repository is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Location {
    /// A repository on this machine (a path or `file://`): written directly, with an atomic
    /// compare-and-swap of the branch, which libgit2's local push does not do.
    Local(PathBuf),
    /// A repository behind a transport (`git://`, `http(s)://`, `ssh://`, `user@host:path`).
    Remote(Remote),
}

#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Remote {
    /// The URL handed to libgit2.
    pub url: String,
    pub scheme: Scheme,
    /// Host and port of SSH remotes, to look the host key up in `known_hosts`.
    pub ssh_host: Option<HostPort>,
}

/// By hand: the URL may hold a password.
impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote")
            .field("url", &super::redact_url(&self.url))
            .field("scheme", &self.scheme)
            .field("ssh_host", &self.ssh_host)
            .finish()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scheme {
    Git,
    Http,
    Ssh,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HostPort {
    pub host: String,
    pub port: u16,
}

/// Why a URL cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum UrlError {
    #[error("the repository URL is empty")]
    Empty,
    #[error("unsupported URL scheme {0:?} (use a path, file, git, http, https or ssh)")]
    Scheme(String),
    #[error("the URL has no host")]
    NoHost,
    #[error("the URL has an invalid port")]
    Port,
    #[error("the URL's user name or password has a character that must be percent-encoded (such as / as %2F)")]
    Userinfo,
}

pub(crate) fn parse(url: &str) -> Result<Location, UrlError> {
    let url = url.trim();
    if url.is_empty() {
        return Err(UrlError::Empty);
    }
    if let Some((scheme, rest)) = url.split_once("://") {
        return match scheme.to_ascii_lowercase().as_str() {
            "file" => Ok(Location::Local(PathBuf::from(rest))),
            "git" => remote(url, Scheme::Git, rest, 9418),
            "http" => remote(url, Scheme::Http, rest, 80),
            "https" => remote(url, Scheme::Http, rest, 443),
            "ssh" | "git+ssh" | "ssh+git" => remote(url, Scheme::Ssh, rest, 22),
            other => Err(UrlError::Scheme(other.to_string())),
        };
    }
    // scp-like `[user@]host:path`, as git reads it: a colon before any slash.
    if let Some((before, _path)) = url.split_once(':') {
        if !before.contains('/') && !before.is_empty() {
            let host = before.rsplit_once('@').map_or(before, |(_, h)| h);
            if host.is_empty() {
                return Err(UrlError::NoHost);
            }
            return Ok(Location::Remote(Remote {
                url: url.to_string(),
                scheme: Scheme::Ssh,
                ssh_host: Some(HostPort {
                    host: host.to_string(),
                    port: 22,
                }),
            }));
        }
    }
    Ok(Location::Local(PathBuf::from(url)))
}

fn remote(url: &str, scheme: Scheme, rest: &str, default_port: u16) -> Result<Location, UrlError> {
    let authority = rest.split('/').next().unwrap_or_default();
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, hp)| hp);
    // `user:pa/ss@host`: the `/` ends the host part early, inside the password.
    let misplaced_userinfo = !authority.contains('@') && rest.contains('@');
    let (host, port) = split_host_port(host_port).map_err(|e| match e {
        UrlError::Port if misplaced_userinfo => UrlError::Userinfo,
        other => other,
    })?;
    if host.is_empty() {
        return Err(UrlError::NoHost);
    }
    Ok(Location::Remote(Remote {
        url: url.to_string(),
        scheme,
        ssh_host: (scheme == Scheme::Ssh).then(|| HostPort {
            host: host.to_string(),
            port: port.unwrap_or(default_port),
        }),
    }))
}

fn split_host_port(host_port: &str) -> Result<(&str, Option<u16>), UrlError> {
    // `[::1]:2222` or `[::1]`
    if let Some(rest) = host_port.strip_prefix('[') {
        let (host, after) = rest.split_once(']').ok_or(UrlError::NoHost)?;
        return match after.strip_prefix(':') {
            Some(port) => Ok((host, Some(port.parse().map_err(|_| UrlError::Port)?))),
            None => Ok((host, None)),
        };
    }
    match host_port.rsplit_once(':') {
        Some((host, port)) => Ok((host, Some(port.parse().map_err(|_| UrlError::Port)?))),
        None => Ok((host_port, None)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ssh(url: &str, host: &str, port: u16) -> Location {
        Location::Remote(Remote {
            url: url.to_string(),
            scheme: Scheme::Ssh,
            ssh_host: Some(HostPort {
                host: host.to_string(),
                port,
            }),
        })
    }

    fn plain(url: &str, scheme: Scheme) -> Location {
        Location::Remote(Remote {
            url: url.to_string(),
            scheme,
            ssh_host: None,
        })
    }

    #[test]
    fn urls_are_classified() {
        let cases: Vec<(&str, Result<Location, UrlError>)> = vec![
            ("/srv/repo.git", Ok(Location::Local("/srv/repo.git".into()))),
            ("relative/repo", Ok(Location::Local("relative/repo".into()))),
            (
                "file:///srv/repo.git",
                Ok(Location::Local("/srv/repo.git".into())),
            ),
            (
                "git://127.0.0.1:9999/r.git",
                Ok(plain("git://127.0.0.1:9999/r.git", Scheme::Git)),
            ),
            (
                "http://u@h/r.git",
                Ok(plain("http://u@h/r.git", Scheme::Http)),
            ),
            (
                "HTTPS://h/r.git",
                Ok(plain("HTTPS://h/r.git", Scheme::Http)),
            ),
            (
                "ssh://git@host:2222/r.git",
                Ok(ssh("ssh://git@host:2222/r.git", "host", 2222)),
            ),
            ("ssh://host/r.git", Ok(ssh("ssh://host/r.git", "host", 22))),
            (
                "ssh://git@[::1]:2222/r",
                Ok(ssh("ssh://git@[::1]:2222/r", "::1", 2222)),
            ),
            (
                "git@github.com:org/r.git",
                Ok(ssh("git@github.com:org/r.git", "github.com", 22)),
            ),
            ("host:r.git", Ok(ssh("host:r.git", "host", 22))),
            ("", Err(UrlError::Empty)),
            ("ftp://h/r", Err(UrlError::Scheme("ftp".into()))),
            ("ssh://git@host:xx/r", Err(UrlError::Port)),
            ("https://u:pa/ss@host/r", Err(UrlError::Userinfo)),
            ("https://host:xx/r@v1", Err(UrlError::Userinfo)),
            ("git:///r.git", Err(UrlError::NoHost)),
            ("@:r", Err(UrlError::NoHost)),
        ];
        for (url, want) in cases {
            assert_eq!(parse(url), want, "{url}");
        }
    }
}
