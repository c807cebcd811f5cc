//! What fails in the Destination controller itself: a Destination whose path makes no
//! state-store key. Failures every kind shares are the floor's [`crate::controllers::Error`].

use crate::api::ObjectKey;
use crate::metrics::ErrorCategory;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A Destination's path makes no valid state-store key.
    #[error("{key} is not a valid Destination")]
    InvalidPath {
        key: ObjectKey,
        #[source]
        source: statestores::KeyError,
    },
}

impl Error {
    /// The metrics' category of the failure.
    pub(crate) fn category(&self) -> ErrorCategory {
        match self {
            Error::InvalidPath { .. } => ErrorCategory::InvalidObject,
        }
    }
}
