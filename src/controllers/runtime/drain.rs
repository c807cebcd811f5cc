//! Draining on stop: a command that ran the controllers only while it waited carries out what
//! its changes set off before it lets go of the home.

use std::time::Duration;

use futures::StreamExt;

use crate::controllers::runtime::change_batch;
use crate::controllers::runtime::change_batch::ChangeBatch;
use crate::controllers::runtime::queue::Queue;
use crate::controllers::runtime::workers::Take;
use crate::controllers::runtime::workers::Workers;
use crate::controllers::{ChangeFeed, Runtime};

/// How long nothing must change before a draining runtime counts as done (see
/// [`Runtime::draining_on_stop`]).
const DRAIN_QUIET: Duration = Duration::from_millis(200);

impl Runtime {
    /// Carries out what is already set off — queued objects and the changes they make in turn
    /// (a new Destination's Works placed and written, say) — until nothing is left to do: no
    /// reconcile or pipeline run going, none due, and every change the store holds taken from
    /// the feed (`seen` is where the feed got to). While runs go, or where that cannot be told,
    /// until nothing has changed for [`DRAIN_QUIET`]. For at most `limit`; pipeline runs are not
    /// waited for here.
    pub(crate) async fn drain(
        &self,
        queue: &mut Queue,
        workers: &mut Workers,
        (changes, mut seen): (&mut ChangeFeed, String),
        limit: Duration,
    ) {
        let deadline = tokio::time::Instant::now() + limit;
        while tokio::time::Instant::now() < deadline {
            workers.start(queue, self, Take::DueOnly);
            // A pipeline run under way may still change something: then only quiet tells.
            if workers.is_empty() && !self.executing_any() && self.fed_everything(&seen).await {
                break;
            }
            let quiet =
                DRAIN_QUIET.min(deadline.saturating_duration_since(tokio::time::Instant::now()));
            let change = tokio::select! {
                Some(finished) = workers.next(), if !workers.is_empty() => {
                    self.settle(queue, finished);
                    continue;
                }
                change = changes.next() => change,
                // Nothing running and nothing changed for a while: done.
                () = tokio::time::sleep(quiet), if workers.is_empty() => break,
                () = tokio::time::sleep_until(deadline) => break,
            };
            let batch = ChangeBatch::take(change, changes);
            if batch.feed_lost {
                break;
            }
            seen = batch.newest.clone().unwrap_or(seen);
            self.queue_affected(queue, &batch).await;
        }
        while let Some(finished) = workers.next().await {
            self.settle(queue, finished);
        }
    }

    /// Whether the change feed has delivered every change the store holds, given the position
    /// of the last one it delivered.
    async fn fed_everything(&self, seen: &str) -> bool {
        match self.cp.current_resource_version().await {
            Ok(current) => change_batch::caught_up(seen, &current),
            Err(_) => false,
        }
    }
}
