//! How the API server's answers map onto the control plane's errors.

use crate::api::ObjectKey;
use crate::store;

/// What an API server failure means for the caller, by HTTP code and reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    NotFound,
    AlreadyExists,
    Conflict,
    Invalid,
    Forbidden,
    Expired,
    Other,
}

/// Classifies a failure the API server answered with.
pub(crate) fn classify(code: u16, reason: &str) -> Failure {
    match (code, reason) {
        (404, _) => Failure::NotFound,
        (409, "AlreadyExists") => Failure::AlreadyExists,
        (409, _) => Failure::Conflict,
        (410, _) => Failure::Expired,
        (400 | 422, _) => Failure::Invalid,
        (403, _) => Failure::Forbidden,
        _ => Failure::Other,
    }
}

/// The control-plane error for a failed request about `key`. `expected` is the
/// `resourceVersion` the write was conditioned on.
pub(crate) fn to_store(
    err: kube::Error,
    key: &ObjectKey,
    expected: Option<&str>,
    context: &str,
) -> store::Error {
    if let kube::Error::Api(status) = &err {
        match classify(status.code, &status.reason) {
            Failure::NotFound => return store::Error::NotFound { key: key.clone() },
            Failure::AlreadyExists => return store::Error::AlreadyExists { key: key.clone() },
            Failure::Conflict => {
                return store::Error::Conflict {
                    key: key.clone(),
                    expected: expected.unwrap_or_default().to_string(),
                }
            }
            Failure::Invalid => {
                return store::Error::Invalid {
                    key: key.clone(),
                    reason: status.message.clone(),
                }
            }
            Failure::Forbidden => {
                return store::Error::Forbidden {
                    key: key.clone(),
                    reason: status.message.clone(),
                }
            }
            Failure::Expired => {
                return store::Error::Expired {
                    resource_version: expected.unwrap_or_default().to_string(),
                }
            }
            Failure::Other => {}
        }
    }
    backend(format!("{context} {key}"), err)
}

/// A failure of the API server or of the connection to it.
pub(crate) fn backend(
    context: impl Into<String>,
    source: impl std::error::Error + Send + Sync + 'static,
) -> store::Error {
    store::Error::Backend {
        context: context.into(),
        source: Box::new(source),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_server_answers_map_to_store_errors() {
        let cases = [
            (404, "NotFound", Failure::NotFound),
            (409, "AlreadyExists", Failure::AlreadyExists),
            (409, "Conflict", Failure::Conflict),
            (409, "", Failure::Conflict),
            (410, "Expired", Failure::Expired),
            (410, "Gone", Failure::Expired),
            (422, "Invalid", Failure::Invalid),
            (400, "BadRequest", Failure::Invalid),
            (403, "Forbidden", Failure::Forbidden),
            (500, "InternalError", Failure::Other),
            (503, "ServiceUnavailable", Failure::Other),
        ];
        for (code, reason, want) in cases {
            assert_eq!(classify(code, reason), want, "{code} {reason}");
        }
    }

    #[test]
    fn conflicts_name_the_stale_resource_version() {
        let key = ObjectKey::new("platform.kratix.io", "Work", Some("default"), "w");
        let status = kube::core::Status::failure("changed", "Conflict").with_code(409);
        let err = to_store(kube::Error::Api(status.boxed()), &key, Some("41"), "update");
        match err {
            store::Error::Conflict { key: k, expected } => {
                assert_eq!((k, expected.as_str()), (key.clone(), "41"));
            }
            other => panic!("want Conflict, got {other:?}"),
        }
        let status = kube::core::Status::failure("no", "Forbidden").with_code(403);
        let err = to_store(kube::Error::Api(status.boxed()), &key, None, "update");
        assert!(matches!(err, store::Error::Forbidden { .. }), "{err:?}");
        let status = kube::core::Status::failure("down", "InternalError").with_code(500);
        let err = to_store(kube::Error::Api(status.boxed()), &key, None, "update");
        assert!(matches!(err, store::Error::Backend { .. }), "{err:?}");
    }
}
