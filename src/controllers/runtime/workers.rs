//! The reconciles in progress: up to a set number at once, each in a task of its own, so that
//! one waiting on the control plane or a state store does not hold up the others, and their
//! work spreads over the cores. The queue keeps two of them off one key (see [`Queue::take`]).
//!
//! Each reconcile runs in a span of its own, `reconcile`, with the object's key and why it was
//! queued: every line it logs carries both.

use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};
use tokio::task::JoinError;
use tracing::Instrument;

use crate::api::ObjectKey;
use crate::controllers::runtime::queue::Queue;
use crate::controllers::runtime::queue::Reason;
use crate::controllers::{Error, Next, Runtime};

/// A reconcile that ended: its key, its span (for what is logged of its end), and what it asked
/// for (or how its task failed).
#[derive(Debug)]
pub(crate) struct Finished {
    pub(crate) key: ObjectKey,
    pub(crate) span: tracing::Span,
    pub(crate) outcome: Result<Result<Next, Error>, JoinError>,
}

/// The span of one reconcile of `key`, queued for `reason`. At ERROR level so that it is on
/// whenever any of the reconcile's lines is: with the default filter (`warn`) a reconcile's
/// warnings still name the object and the reason.
fn reconcile_span(key: &ObjectKey, reason: Reason) -> tracing::Span {
    tracing::error_span!("reconcile", object = %key, reason = %reason)
}

/// Which keys a worker may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Take {
    /// Due ones first, then the background ones.
    All,
    /// Due ones only.
    DueOnly,
}

pub(crate) struct Workers {
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
    pub(crate) fn new(limit: usize) -> Self {
        Workers {
            limit: limit.max(1),
            running: FuturesUnordered::new(),
        }
    }

    pub(crate) fn is_full(&self) -> bool {
        self.running.len() >= self.limit
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.running.is_empty()
    }

    /// Starts a reconcile for each key the queue gives, until every worker is busy or nothing
    /// is due.
    pub(crate) fn start(&mut self, queue: &mut Queue, runtime: &Runtime, which: Take) {
        while !self.is_full() {
            let taken = match which {
                Take::All => queue.take(),
                Take::DueOnly => queue.take_due(),
            };
            let Some((key, reason)) = taken else {
                return;
            };
            let span = reconcile_span(&key, reason);
            let (runtime, task_key) = (runtime.clone(), key.clone());
            let task = tokio::spawn(
                async move { runtime.reconcile(&task_key).await }.instrument(span.clone()),
            );
            self.running.push(
                async move {
                    Finished {
                        key,
                        span,
                        outcome: task.await,
                    }
                }
                .boxed(),
            );
        }
    }

    /// The next reconcile to end; `None` when none runs.
    pub(crate) async fn next(&mut self) -> Option<Finished> {
        self.running.next().await
    }
}
