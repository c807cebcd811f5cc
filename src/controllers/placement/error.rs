//! What fails in writing placements. A state store that refuses a write and a placement that
//! cannot be written as it is are the writer's own outcomes: recorded on the placements as
//! conditions (and retried, or left until the placement changes), not failures of the
//! reconcile. Only the floor's failures (the control plane) fail it.

pub(crate) use crate::controllers::placement::invalid::Invalid;

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

impl From<crate::store::Error> for WriteError {
    fn from(e: crate::store::Error) -> Self {
        Self::Controller(e.into())
    }
}
