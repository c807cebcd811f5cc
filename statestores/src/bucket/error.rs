//! What can go wrong talking to a bucket, step by step.

use super::options;
use crate::Key;

/// What went wrong, by step. Mapped to [`crate::Error`] by meaning in [`super::Bucket::error`].
#[derive(Debug, thiserror::Error)]
pub(super) enum Error {
    #[error("invalid bucket options")]
    Options(#[source] options::Error),
    #[error("invalid path prefix")]
    PathPrefix(#[source] crate::KeyError),
    #[error("key {key} cannot be an object name")]
    ObjectName {
        key: String,
        #[source]
        source: object_store::path::Error,
    },
    #[error("key {key} appears more than once in one write")]
    DuplicateKey { key: Key },
    #[error("could not build the S3 client")]
    BuildClient(#[source] object_store::Error),
    #[error("could not look up {key}")]
    HeadObject {
        key: Key,
        #[source]
        source: object_store::Error,
    },
    #[error("could not upload {key}")]
    PutObject {
        key: Key,
        #[source]
        source: object_store::Error,
    },
    #[error("could not delete objects")]
    DeleteObjects(#[source] object_store::Error),
    #[error("could not read {key}")]
    GetObject {
        key: Key,
        #[source]
        source: object_store::Error,
    },
    #[error("could not list under \"{prefix}\"")]
    ListObjects {
        prefix: Key,
        #[source]
        source: object_store::Error,
    },
    #[error("listed object {location} is outside the path prefix")]
    ForeignObject { location: String },
    #[error("could not start an upload to check write permission")]
    CheckWritePermission(#[source] object_store::Error),
}

impl Error {
    pub(super) fn object_store_source(&self) -> Option<&object_store::Error> {
        match self {
            Error::BuildClient(source)
            | Error::HeadObject { source, .. }
            | Error::PutObject { source, .. }
            | Error::DeleteObjects(source)
            | Error::GetObject { source, .. }
            | Error::ListObjects { source, .. }
            | Error::CheckWritePermission(source) => Some(source),
            Error::Options(_)
            | Error::PathPrefix(_)
            | Error::ObjectName { .. }
            | Error::DuplicateKey { .. }
            | Error::ForeignObject { .. } => None,
        }
    }
}
