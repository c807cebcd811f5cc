//! Why placements cannot be written as they are: recorded on them until they change.

use statestores::error_chain::ErrorChain;

/// Why placements cannot be written as they are.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Invalid {
    /// A stored placement does not parse.
    #[error(transparent)]
    Spec(#[from] serde_json::Error),
    /// Its workloads do not decode, or its files cannot be laid out.
    #[error(transparent)]
    Layout(#[from] crate::controllers::placement::layout::Error),
    /// Two placements claim one path.
    #[error(transparent)]
    Collision(#[from] crate::controllers::placement::plan::Error),
    /// A file's path makes no state-store key.
    #[error(transparent)]
    Path(#[from] statestores::KeyError),
}

impl Invalid {
    /// The message recorded on the placements' condition: the cause and what caused it.
    pub(crate) fn reason(&self) -> String {
        ErrorChain(self).to_string()
    }
}
