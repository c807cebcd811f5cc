//! Fetching a PromiseRelease's Promise over HTTP and checking it before it is installed, as
//! Kratix's URL fetcher and release controller do:
//! <https://github.com/syntasso/kratix/blob/ae170e22e974e45bb7cfda00986057e01b3ccfde/lib/fetchers/url.go>.

use std::time::Duration;

use serde_json::Value;

use crate::api::Action;
use crate::api::WorkflowType;
use crate::api::{labels, names, promise_api, Promise};

/// How long one fetch may take (Kratix's client timeout).
const TIMEOUT: Duration = Duration::from_secs(10);
/// The largest Promise accepted (a stored object's limit).
const MAX_BYTES: usize = 3 * 1024 * 1024;

/// Why a release's Promise could not be fetched or is not acceptable. Never holds a credential:
/// the URL is redacted and the Authorization header is never part of a message.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    #[error("request to {url} failed")]
    Request {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("{url} answered with status code {status}")]
    Status { url: String, status: u16 },
    #[error("{url} answered with more than {MAX_BYTES} bytes")]
    TooLarge { url: String },
    #[error("{url} did not answer with a YAML or JSON document")]
    Parse {
        url: String,
        #[source]
        source: serde_yaml::Error,
    },
    #[error("expected single Promise object but found object of kind: {kind}")]
    NotAPromise { kind: String },
    #[error("expected single document yaml, but found multiple documents")]
    MultipleDocuments,
    #[error("the Promise is not valid: {reason}")]
    Invalid { reason: String },
    #[error(
        "version label ({}) not found on promise; refusing to install",
        labels::PROMISE_VERSION
    )]
    NoVersionLabel,
    #[error("Version labels do not match, found: {found}, expected: {expected}")]
    VersionMismatch { found: String, expected: String },
}

impl Error {
    /// The `Installed` condition's reason, as Kratix names it.
    pub(crate) fn reason(&self) -> &'static str {
        match self {
            Error::NoVersionLabel => "VersionLabelNotFound",
            Error::VersionMismatch { .. } => "VersionNotMatching",
            _ => "FailedToFetchPromise",
        }
    }
}

/// GETs `url` (with `authorization` as the `Authorization` header) and returns the body.
pub(crate) async fn get(url: &str, authorization: Option<&str>) -> Result<Vec<u8>, Error> {
    let shown = statestores::redact_url(url);
    let request_error = |source: reqwest::Error| Error::Request {
        url: shown.clone(),
        source: source.without_url(),
    };
    let client = reqwest::Client::builder()
        .timeout(TIMEOUT)
        .build()
        .map_err(request_error)?;
    let mut request = client.get(url);
    if let Some(value) = authorization {
        request = request.header(reqwest::header::AUTHORIZATION, value);
    }
    let mut response = request.send().await.map_err(request_error)?;
    if response.status() != reqwest::StatusCode::OK {
        return Err(Error::Status {
            url: shown,
            status: response.status().as_u16(),
        });
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(request_error)? {
        if body.len() + chunk.len() > MAX_BYTES {
            return Err(Error::TooLarge { url: shown });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The Promise in a fetched body: exactly one document, of kind Promise, that would be a valid
/// Promise, labelled with a version.
pub(crate) fn promise_from(url: &str, body: &[u8]) -> Result<(Value, String), Error> {
    let shown = statestores::redact_url(url);
    let mut documents = Vec::new();
    for document in serde_yaml::Deserializer::from_slice(body) {
        let value = <Value as serde::Deserialize>::deserialize(document).map_err(|source| {
            Error::Parse {
                url: shown.clone(),
                source,
            }
        })?;
        if !value.is_null() {
            documents.push(value);
        }
    }
    let value = match documents.len() {
        0 => {
            return Err(Error::NotAPromise {
                kind: String::new(),
            })
        }
        1 => documents.remove(0),
        _ => return Err(Error::MultipleDocuments),
    };
    let kind = value
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let api_version = value
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if kind != "Promise" || api_version != crate::api::API_VERSION {
        return Err(Error::NotAPromise { kind: kind.into() });
    }
    let invalid = |reason: String| Error::Invalid { reason };
    let promise: Promise =
        serde_json::from_value(value.clone()).map_err(|e| invalid(e.to_string()))?;
    let name = promise.metadata.name.clone().unwrap_or_default();
    names::dns1123_subdomain(&name).map_err(|r| invalid(format!("metadata.name {r}")))?;
    promise_api::request_kind(&promise).map_err(|e| invalid(e.to_string()))?;
    for ty in [WorkflowType::Promise, WorkflowType::Resource] {
        for action in [Action::Configure, Action::Delete] {
            crate::controllers::promise::pipelines(&promise, ty, action)
                .map_err(|e| invalid(crate::controllers::ErrorChain(&e).to_string()))?;
        }
    }
    let version = promise
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(labels::PROMISE_VERSION))
        .cloned()
        .ok_or(Error::NoVersionLabel)?;
    Ok((value, version))
}

/// Whether the fetched version is the one the release asks for (any, when it names none).
pub(crate) fn check_version(wanted: &str, found: &str) -> Result<(), Error> {
    if wanted.is_empty() || wanted == found {
        Ok(())
    } else {
        Err(Error::VersionMismatch {
            found: found.into(),
            expected: wanted.into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROMISE: &str = "apiVersion: platform.kratix.io/v1alpha1\nkind: Promise\nmetadata:\n  name: db\n  labels:\n    kratix.io/promise-version: v1.0\nspec: {}\n";

    #[test]
    fn only_one_versioned_promise_is_accepted() {
        let no_label = PROMISE.replace("  labels:\n    kratix.io/promise-version: v1.0\n", "");
        let two = format!("{PROMISE}---\n{PROMISE}");
        let secret = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n";
        let bad_name = PROMISE.replace("name: db", "name: Not_A_Name");
        let cases: Vec<(&str, &[u8], Result<&str, &str>)> = vec![
            ("a promise", PROMISE.as_bytes(), Ok("v1.0")),
            ("as JSON", br#"{"apiVersion":"platform.kratix.io/v1alpha1","kind":"Promise","metadata":{"name":"db","labels":{"kratix.io/promise-version":"v2"}},"spec":{}}"#, Ok("v2")),
            ("no version label", no_label.as_bytes(), Err("version label (kratix.io/promise-version) not found")),
            ("two documents", two.as_bytes(), Err("multiple documents")),
            ("another kind", secret.as_bytes(), Err("found object of kind: Secret")),
            ("garbage", b"<html>\n  <body>oops: [</body>", Err("did not answer with a YAML or JSON document")),
            ("plain text", b"hello", Err("found object of kind: ")),
            ("empty", b"", Err("found object of kind: ")),
            ("a bad name", bad_name.as_bytes(), Err("the Promise is not valid: metadata.name")),
        ];
        for (name, body, want) in cases {
            let got = promise_from("http://u:secret@h/p.yaml", body);
            match (got, want) {
                (Ok((_, version)), Ok(v)) => assert_eq!(version, v, "{name}"),
                (Err(e), Err(text)) => {
                    let message = e.to_string();
                    assert!(message.contains(text), "{name}: {message}");
                    assert!(!message.contains("secret"), "{name}: {message}");
                }
                (got, want) => panic!("{name}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn versions_must_match_unless_the_release_names_none() {
        let cases = [("", "v1", true), ("v1", "v1", true), ("v2", "v1", false)];
        for (wanted, found, ok) in cases {
            assert_eq!(check_version(wanted, found).is_ok(), ok, "{wanted} {found}");
        }
        let e = check_version("v2", "v1").expect_err("mismatch");
        assert_eq!(
            e.to_string(),
            "Version labels do not match, found: v1, expected: v2"
        );
        assert_eq!(e.reason(), "VersionNotMatching");
    }
}
