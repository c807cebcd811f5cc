//! The controllers' machinery, which knows no kind: the loop (start-up, the change feed, periodic
//! resyncs), the workers that run reconciles side by side, the queue they take keys from (with
//! why each was queued), the batching of changes, draining on stop, and the backoff of the
//! loop's own failures. What a reconcile of each kind does lives in that kind's folder.

mod backoff;
mod change_batch;
mod drain;
mod own_writes;
pub(crate) mod queue;
mod run_loop;
pub(crate) mod workers;

pub(crate) use change_batch::{ChangeBatch, LastSeen};
pub(crate) use own_writes::OwnWrites;
