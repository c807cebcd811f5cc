//! The reconciles in progress: up to a set number at once, each in a task of its own, so that
//! one waiting on the control plane or a state store does not hold up the others, and their
//! work spreads over the cores. The queue keeps two of them off one key (see [`Queue::take`]).

use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};
use tokio::task::JoinError;

use super::queue::Queue;
use super::{Error, Next, Runtime};
use crate::api::ObjectKey;

/// A reconcile that ended: its key, and what it asked for (or how its task failed).
#[derive(Debug)]
pub(super) struct Finished {
    pub key: ObjectKey,
    pub outcome: Result<Result<Next, Error>, JoinError>,
}

/// Which keys a worker may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Take {
    /// Due ones first, then the background ones.
    All,
    /// Due ones only.
    DueOnly,
}

pub(super) struct Workers {
    limit: usize,
    running: FuturesUnordered<BoxFuture<'static, Finished>>,
}

impl std::fmt::Debug for Workers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workers")
            .field("limit", &self.limit)
            .field("running", &self.running.len())
            .finish()
    }
}

impl Workers {
    /// Room for `limit` (at least 1) reconciles at once.
    pub fn new(limit: usize) -> Self {
        Workers {
            limit: limit.max(1),
            running: FuturesUnordered::new(),
        }
    }

    pub fn is_full(&self) -> bool {
        self.running.len() >= self.limit
    }

    pub fn is_empty(&self) -> bool {
        self.running.is_empty()
    }

    /// Starts a reconcile for each key the queue gives, until every worker is busy or nothing
    /// is due.
    pub fn start(&mut self, queue: &mut Queue, runtime: &Runtime, which: Take) {
        while !self.is_full() {
            let taken = match which {
                Take::All => queue.take(),
                Take::DueOnly => queue.take_due(),
            };
            let Some(key) = taken else {
                return;
            };
            let (runtime, task_key) = (runtime.clone(), key.clone());
            let task = tokio::spawn(async move { runtime.reconcile(&task_key).await });
            self.running.push(
                async move {
                    Finished {
                        key,
                        outcome: task.await,
                    }
                }
                .boxed(),
            );
        }
    }

    /// The next reconcile to end; `None` when none runs.
    pub async fn next(&mut self) -> Option<Finished> {
        self.running.next().await
    }
}
