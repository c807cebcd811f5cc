//! What fails in the Work controller itself: a Work that cannot be made (static dependencies
//! that make no Work) or cannot be written this time. Failures every kind shares are the
//! floor's [`crate::controllers::Error`].

use crate::api::ObjectKey;
use crate::metrics::ErrorCategory;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A Promise's static dependencies do not make a Work.
    #[error("{key} is not a valid Promise")]
    InvalidDependencies {
        key: ObjectKey,
        #[source]
        source: super::from_output::Error,
    },
    /// A Work could not be written this time (see [`super::Refusal`]).
    #[error("Work {name}")]
    Refused {
        name: String,
        #[source]
        source: super::Refusal,
    },
}

impl Error {
    /// The metrics' category of the failure.
    pub(crate) fn category(&self) -> ErrorCategory {
        match self {
            Error::InvalidDependencies { .. } => ErrorCategory::InvalidObject,
            // A Work is stored for a pipeline: the run's output cannot be kept.
            Error::Refused { .. } => ErrorCategory::PipelineRun,
        }
    }
}
