//! What fails in writing placements. A state store that refuses a write and a placement that
//! cannot be written as it is are the writer's own outcomes: recorded on the placements as
//! conditions (and retried, or left until the placement changes), not failures of the
//! reconcile. Only the floor's failures (the control plane) fail it.

use crate::controllers::ErrorChain;

#[derive(Debug, thiserror::Error)]
pub(crate) enum WriteError {
    /// The state store refused or failed the write: tried again after a backoff.
    #[error("the state store failed the write")]
    Store(#[source] statestores::Error),
    /// The placements cannot be written as they are: nothing is written until they change.
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// What every kind shares failed (the control plane): the reconcile fails.
    #[error(transparent)]
    Controller(#[from] crate::controllers::Error),
}

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

impl From<crate::store::Error> for WriteError {
    fn from(e: crate::store::Error) -> Self {
        Self::Controller(e.into())
    }
}
