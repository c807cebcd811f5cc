//! What fails in the Promise controller itself: a Promise whose workflows are not pipelines.
//! Failures every kind shares (the control plane, a stored object that does not parse) are the
//! floor's [`crate::controllers::Error`].

use crate::api::ObjectKey;
use crate::metrics::ErrorCategory;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A Promise's workflows do not parse as pipelines.
    #[error("{key} is not a valid Promise")]
    InvalidWorkflows {
        key: ObjectKey,
        #[source]
        source: crate::api::pipeline::Error,
    },
}

impl Error {
    /// The metrics' category of the failure.
    pub(crate) fn category(&self) -> ErrorCategory {
        match self {
            Error::InvalidWorkflows { .. } => ErrorCategory::InvalidObject,
        }
    }
}
