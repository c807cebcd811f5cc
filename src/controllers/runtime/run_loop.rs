//! The controllers' loop: start-up, then reconciles taken from the queue by the workers while
//! the change feed and the periodic resync add to it, until told to stop.

use std::future::Future;
use std::time::Duration;

use futures::StreamExt;
use tracing::warn;

use crate::controllers::runtime::backoff::Backoff;
use crate::controllers::runtime::change_batch::ChangeBatch;
use crate::controllers::runtime::queue::Queue;
use crate::controllers::runtime::workers::Take;
use crate::controllers::runtime::workers::Workers;
use crate::controllers::{ErrorChain, Runtime};

impl Runtime {
    /// Runs every controller until `stop` completes, then stops executing pipeline runs (see
    /// [`Runtime::stop_executing`]) and returns. `lock` (the home lock of the embedded runtime)
    /// is held until then: it proves this process is the only one running controllers for the home. A process runs one `Runtime` at a time: the claims it
    /// writes on runs name this instance, and it never runs what another live instance claimed.
    ///
    /// Failures of the control plane are retried with backoff, never returned: a transient error
    /// must not end the controllers.
    pub async fn run(self, lock: impl Send, stop: impl Future<Output = ()>) {
        let _lock = lock;
        tokio::pin!(stop);
        let mut queue = Queue::default();
        let mut backoff = Backoff::default();
        // Start-up: recover interrupted runs and look at everything, once the store answers.
        let (mut changes, mut seen) = loop {
            match self.start_up(&mut queue).await {
                Ok(started) => break started,
                Err(err) => {
                    let delay = backoff.next();
                    warn!(error = %ErrorChain(&err), "starting the controllers failed; retrying in {delay:?}");
                    tokio::select! {
                        () = &mut stop => return self.stop_executing().await,
                        () = tokio::time::sleep(delay) => continue,
                    }
                }
            }
        };
        backoff = Backoff::default();
        self.metrics.set_started(true);
        let mut resync = tokio::time::interval(self.settings.resync);
        resync.tick().await;
        // When set, everything is looked at again at that moment (after a failure to).
        let mut resync_due: Option<tokio::time::Instant> = None;
        let mut workers = Workers::new(self.settings.workers());
        loop {
            // Due keys first, then the ones everything was queued with (see
            // `Queue::add_background`); the change feed is looked at whenever a worker is done.
            workers.start(&mut queue, &self, Take::All);
            if resync_due.is_some_and(|due| due <= tokio::time::Instant::now()) {
                resync_due = match self.resync(&mut queue).await {
                    Ok((fresh, since)) => {
                        (changes, seen) = (fresh, since);
                        backoff = Backoff::default();
                        self.metrics.set_started(true);
                        None
                    }
                    Err(err) => {
                        let delay = backoff.next();
                        warn!(error = %ErrorChain(&err), "looking at everything again failed; retrying in {delay:?}");
                        Some(tokio::time::Instant::now() + delay)
                    }
                };
                continue;
            }
            self.metrics.set_queue_depth(queue.len());
            // With every worker busy, only one finishing lets another key be taken.
            let mut sleep = if workers.is_full() {
                Duration::from_secs(1)
            } else {
                queue.time_to_next().unwrap_or(Duration::from_secs(1))
            };
            if let Some(due) = resync_due {
                sleep = sleep.min(due.saturating_duration_since(tokio::time::Instant::now()));
            }
            tokio::select! {
                () = &mut stop => break,
                Some(finished) = workers.next(), if !workers.is_empty() => {
                    self.settle(&mut queue, finished);
                }
                change = changes.next() => {
                    // Take every change already read with it: an object changed several times
                    // (or several of whose parts changed) is then looked at once, not once each.
                    let batch = ChangeBatch::take(change, &mut changes);
                    if batch.feed_lost {
                        // Not ready until everything is listed and the feed is open again.
                        self.metrics.set_started(false);
                        resync_due = Some(tokio::time::Instant::now());
                    }
                    seen = batch.newest.clone().unwrap_or(seen);
                    if !self.queue_affected(&mut queue, &batch)
                        .await {
                        // Some dependants are unknown for now: look at everything soon.
                        resync_due.get_or_insert_with(|| tokio::time::Instant::now() + backoff.next());
                    }
                }
                _ = resync.tick() => resync_due = Some(tokio::time::Instant::now()),
                () = tokio::time::sleep(sleep) => {}
            }
        }
        // Reconciles under way end as they would have: stopping never cuts one short.
        while let Some(finished) = workers.next().await {
            self.settle(&mut queue, finished);
        }
        if let Some(limit) = self.drain_on_stop {
            self.drain(&mut queue, &mut workers, (&mut changes, seen), limit)
                .await;
        }
        self.stop_executing().await;
    }
}
