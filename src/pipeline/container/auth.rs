//! Registry credentials from a Pipeline's `imagePullSecrets`: the `.dockerconfigjson` (or legacy
//! `.dockercfg`) of each Secret, and the entry for an image's registry host. Values never reach a
//! log or an error: `Debug` shows only the registry.

use std::collections::BTreeMap;

use base64::Engine;
use serde::Deserialize;

use super::reference::DOCKER_HUB;

/// One registry's credentials.
#[derive(Clone, Default, PartialEq, Eq, Deserialize)]
pub(crate) struct Credentials {
    #[serde(default)]
    pub username: Option<String>,
    #[serde(default)]
    pub password: Option<String>,
    /// base64 of `username:password`.
    #[serde(default)]
    pub auth: Option<String>,
    #[serde(default, rename = "identitytoken")]
    pub identity_token: Option<String>,
    /// The registry host they are for (set when selected).
    #[serde(skip)]
    pub server: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Credentials {{ server: {:?}, .. }}", self.server)
    }
}

impl Credentials {
    /// Every secret value, to scrub from what the engine says back.
    pub(crate) fn secret_values(&self) -> Vec<&str> {
        [&self.password, &self.auth, &self.identity_token]
            .into_iter()
            .flatten()
            .map(String::as_str)
            .filter(|v| !v.is_empty())
            .collect()
    }

    /// Username and password, from `auth` when they are not given apart.
    fn completed(mut self) -> Self {
        if self.username.is_none() {
            let decoded = self
                .auth
                .as_deref()
                .and_then(|a| base64::engine::general_purpose::STANDARD.decode(a).ok())
                .and_then(|b| String::from_utf8(b).ok());
            if let Some((user, password)) = decoded.as_deref().and_then(|d| d.split_once(':')) {
                self.username = Some(user.to_string());
                self.password = Some(password.to_string());
            }
        }
        self
    }
}

/// The registries of one Secret.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DockerConfig {
    auths: BTreeMap<String, Credentials>,
}

#[derive(Debug, thiserror::Error)]
#[error("is not a Docker config JSON ({detail})")]
pub struct ParseError {
    detail: String,
}

impl DockerConfig {
    /// `.dockerconfigjson` (`{"auths": {...}}`) or `.dockercfg` (the registries at the top).
    pub fn parse(bytes: &[u8], legacy: bool) -> Result<Self, ParseError> {
        #[derive(Deserialize)]
        struct Modern {
            #[serde(default)]
            auths: BTreeMap<String, Credentials>,
        }
        // NB: serde's messages can quote the input; only the category is kept.
        let fail = |e: serde_json::Error| ParseError {
            detail: format!("{:?} error at line {}", e.classify(), e.line()),
        };
        let auths = if legacy {
            serde_json::from_slice::<BTreeMap<String, Credentials>>(bytes).map_err(fail)?
        } else {
            serde_json::from_slice::<Modern>(bytes).map_err(fail)?.auths
        };
        Ok(Self { auths })
    }
}

/// The host a config key names: `https://ghcr.io/v2/` and `ghcr.io` are both `ghcr.io`; Docker
/// Hub's many names are one.
fn key_host(key: &str) -> &str {
    let rest = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    let host = rest.split('/').next().unwrap_or(rest);
    match host {
        "index.docker.io" | "registry-1.docker.io" | "registry.hub.docker.com" => DOCKER_HUB,
        other => other,
    }
}

/// The credentials for `host` from the first config (in the Pipeline's order) that has them.
pub(crate) fn credentials_for(host: &str, configs: &[DockerConfig]) -> Option<Credentials> {
    configs
        .iter()
        .find_map(|config| {
            config
                .auths
                .iter()
                .find(|(key, _)| key_host(key) == host)
                .map(|(_, creds)| Credentials {
                    server: host.to_string(),
                    ..creds.clone()
                })
        })
        .map(Credentials::completed)
}

/// `text` with every secret value replaced by `***`.
pub(crate) fn scrub(text: &str, credentials: Option<&Credentials>) -> String {
    let mut out = text.to_string();
    for value in credentials
        .map(Credentials::secret_values)
        .unwrap_or_default()
    {
        out = out.replace(value, "***");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(json: &str) -> DockerConfig {
        DockerConfig::parse(json.as_bytes(), false).expect("valid config")
    }

    #[test]
    fn selects_the_registry_of_the_image() {
        let hub = config(r#"{"auths":{"https://index.docker.io/v1/":{"auth":"dTpw"}}}"#);
        let ghcr = config(r#"{"auths":{"https://ghcr.io":{"username":"a","password":"b"}}}"#);
        let local = config(r#"{"auths":{"172.30.254.1:5000":{"username":"c","password":"d"}}}"#);
        let all = [hub, ghcr, local];
        let cases = [
            ("docker.io", Some(("u", "p"))),
            ("ghcr.io", Some(("a", "b"))),
            ("172.30.254.1:5000", Some(("c", "d"))),
            ("quay.io", None),
        ];
        for (host, want) in cases {
            let got = credentials_for(host, &all);
            let got = got.as_ref().map(|c| {
                (
                    c.username.as_deref().unwrap_or(""),
                    c.password.as_deref().unwrap_or(""),
                )
            });
            assert_eq!(got, want, "{host}");
        }
    }

    #[test]
    fn first_secret_wins_and_legacy_parses() {
        let first = config(r#"{"auths":{"ghcr.io":{"username":"first","password":"1"}}}"#);
        let legacy =
            DockerConfig::parse(br#"{"ghcr.io":{"username":"second","password":"2"}}"#, true)
                .expect("legacy");
        let got = credentials_for("ghcr.io", &[first, legacy.clone()]).expect("found");
        assert_eq!(got.username.as_deref(), Some("first"));
        let got = credentials_for("ghcr.io", &[legacy]).expect("found");
        assert_eq!(got.username.as_deref(), Some("second"));
    }

    #[test]
    fn secrets_stay_out_of_messages() {
        let err = DockerConfig::parse(br#"{"auths": "hunter2"}"#, false).expect_err("bad");
        assert!(!err.to_string().contains("hunter2"), "{err}");
        let creds = credentials_for(
            "ghcr.io",
            &[config(
                r#"{"auths":{"ghcr.io":{"username":"u","password":"hunter2"}}}"#,
            )],
        )
        .expect("found");
        assert!(!format!("{creds:?}").contains("hunter2"));
        assert_eq!(
            scrub("denied for u:hunter2", Some(&creds)),
            "denied for u:***"
        );
    }
}
