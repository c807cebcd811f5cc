//! What fails in driving a workflow itself: a run that cannot be made. Failures every kind
//! shares are the floor's [`crate::controllers::Error`].

use crate::metrics::ErrorCategory;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A new pipeline run could not be encoded for the control plane.
    #[error("pipeline run {run}: cannot record {what}")]
    EncodeRun {
        run: String,
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
}

impl Error {
    /// The metrics' category of the failure.
    pub(crate) fn category(&self) -> ErrorCategory {
        match self {
            Error::EncodeRun { .. } => ErrorCategory::PipelineRun,
        }
    }
}
