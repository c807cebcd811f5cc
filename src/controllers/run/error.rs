//! What fails in the run controller: a run that could not be carried out (not a pipeline's own
//! failure, which is recorded on the run). Failures every kind shares are the floor's
//! [`crate::controllers::Error`].

use crate::metrics::ErrorCategory;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("pipeline run {run}")]
    NotCarriedOut {
        run: String,
        #[source]
        source: super::failure::Error,
    },
}

impl Error {
    /// The run named `run` could not be carried out.
    pub(crate) fn not_carried_out(run: &str, source: impl Into<super::failure::Error>) -> Self {
        Error::NotCarriedOut {
            run: run.into(),
            source: source.into(),
        }
    }

    /// The metrics' category of the failure.
    pub(crate) fn category(&self) -> ErrorCategory {
        match self {
            Error::NotCarriedOut { .. } => ErrorCategory::PipelineRun,
        }
    }
}
