//! What an `object_store` error means for a caller: pure, tested with constructed errors.

use crate::error_chain::ErrorChain;
use object_store::client::{HttpError, HttpErrorKind};

/// The meaning of a failed request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Meaning {
    /// The server refused our credentials or signature.
    Unauthorized,
    /// No server answered, or the bucket does not exist.
    Unreachable,
    /// The key does not exist (the bucket does).
    NotFound,
    /// Anything else.
    Other,
}

/// S3 error codes that mean "these credentials are wrong", whatever the status code (AWS sends
/// some as 400, others as 403; `AuthorizationHeaderMalformed` is a wrong region in the signature).
const AUTH_CODES: &[&str] = &[
    "<Code>InvalidAccessKeyId</Code>",
    "<Code>SignatureDoesNotMatch</Code>",
    "<Code>AuthorizationHeaderMalformed</Code>",
    "<Code>AccessDenied</Code>",
    "<Code>ExpiredToken</Code>",
    "<Code>InvalidToken</Code>",
];

/// NB: `object_store` keeps the server's XML error body only in its error's Display (the retry
/// error type is private), so S3 error codes are found in the rendered chain.
pub(crate) fn classify(err: &object_store::Error) -> Meaning {
    let rendered = ErrorChain(err).to_string();
    let has = |code: &str| rendered.contains(code);
    match err {
        object_store::Error::PermissionDenied { .. }
        | object_store::Error::Unauthenticated { .. } => Meaning::Unauthorized,
        _ if has("<Code>NoSuchBucket</Code>") => Meaning::Unreachable,
        _ if AUTH_CODES.iter().any(|code| has(code)) => Meaning::Unauthorized,
        object_store::Error::NotFound { .. } => Meaning::NotFound,
        _ if no_connection(err) => Meaning::Unreachable,
        _ => Meaning::Other,
    }
}

/// The region the server says requests must be signed for, when it refused ours: S3 servers
/// (AWS, Garage, MinIO) answer a signature scoped to another region with
/// `AuthorizationHeaderMalformed` and name their own region in `<Region>`.
pub(crate) fn region_hint(err: &object_store::Error) -> Option<String> {
    let rendered = ErrorChain(err).to_string();
    if !rendered.contains("<Code>AuthorizationHeaderMalformed</Code>") {
        return None;
    }
    let (_, after) = rendered.split_once("<Region>")?;
    let (region, _) = after.split_once("</Region>")?;
    let region = region.trim();
    let plausible = !region.is_empty()
        && region
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.');
    plausible.then(|| region.to_string())
}

/// Did the request fail before any server answered (refused, DNS, TLS handshake, connect
/// timeout)?
fn no_connection(err: &object_store::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(current) = source {
        if let Some(http) = current.downcast_ref::<HttpError>() {
            return matches!(http.kind(), HttpErrorKind::Connect);
        }
        source = current.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stands in for `object_store`'s private retry error, which renders the server's body.
    #[derive(Debug, thiserror::Error)]
    #[error("server returned {0}")]
    struct Body(&'static str);

    fn s3_body(code: &str) -> String {
        format!("<?xml version=\"1.0\"?><Error><Code>{code}</Code><Message>m</Message></Error>")
    }

    #[test]
    fn region_hint_comes_only_from_a_wrong_region_answer() {
        let generic = |body: String| object_store::Error::Generic {
            store: "S3",
            source: Box::new(Body(Box::leak(body.into_boxed_str()))),
        };
        let wrong_region = |region: &str| {
            format!(
                "<?xml version=\"1.0\"?><Error><Code>AuthorizationHeaderMalformed</Code>\
                 <Message>unexpected scope</Message><Region>{region}</Region></Error>"
            )
        };
        let cases: Vec<(object_store::Error, Option<&str>)> = vec![
            (generic(wrong_region("garage")), Some("garage")),
            (generic(wrong_region(" eu-west-1 ")), Some("eu-west-1")),
            (generic(wrong_region("")), None),
            (generic(wrong_region("a b")), None),
            (
                generic(s3_body("AuthorizationHeaderMalformed")),
                None, // no <Region> element
            ),
            (
                generic(
                    "<Error><Code>AccessDenied</Code><Region>garage</Region></Error>".to_string(),
                ),
                None,
            ),
            (generic(s3_body("SignatureDoesNotMatch")), None),
        ];
        for (err, want) in cases {
            assert_eq!(region_hint(&err).as_deref(), want, "{err}");
        }
    }

    #[test]
    fn errors_are_classified_by_meaning() {
        let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
        let connect = || {
            Box::new(HttpError::new(
                HttpErrorKind::Connect,
                std::io::Error::from(std::io::ErrorKind::ConnectionRefused),
            ))
        };
        let cases: Vec<(object_store::Error, Meaning)> = vec![
            (
                object_store::Error::PermissionDenied {
                    path: "a".into(),
                    source: Box::new(Body("403")),
                },
                Meaning::Unauthorized,
            ),
            (
                object_store::Error::Unauthenticated {
                    path: "a".into(),
                    source: Box::new(Body("401")),
                },
                Meaning::Unauthorized,
            ),
            (
                object_store::Error::Generic {
                    store: "S3",
                    source: Box::new(Body(leak(s3_body("InvalidAccessKeyId")))),
                },
                Meaning::Unauthorized,
            ),
            (
                object_store::Error::Generic {
                    store: "S3",
                    source: Box::new(Body(leak(s3_body("AuthorizationHeaderMalformed")))),
                },
                Meaning::Unauthorized,
            ),
            (
                object_store::Error::NotFound {
                    path: "a".into(),
                    source: Box::new(Body(leak(s3_body("NoSuchBucket")))),
                },
                Meaning::Unreachable,
            ),
            (
                object_store::Error::NotFound {
                    path: "a".into(),
                    source: Box::new(Body(leak(s3_body("NoSuchKey")))),
                },
                Meaning::NotFound,
            ),
            (
                object_store::Error::NotFound {
                    path: "a".into(),
                    source: Box::new(Body("404 with no body (HEAD)")),
                },
                Meaning::NotFound,
            ),
            (
                object_store::Error::Generic {
                    store: "S3",
                    source: connect(),
                },
                Meaning::Unreachable,
            ),
            (
                object_store::Error::Generic {
                    store: "S3",
                    source: Box::new(HttpError::new(
                        HttpErrorKind::Decode,
                        std::io::Error::other("bad body"),
                    )),
                },
                Meaning::Other,
            ),
            (
                object_store::Error::Generic {
                    store: "S3",
                    source: Box::new(Body(leak(s3_body("InternalError")))),
                },
                Meaning::Other,
            ),
        ];
        for (err, want) in cases {
            assert_eq!(classify(&err), want, "{err}");
        }
    }
}
