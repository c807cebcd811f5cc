//! The pipeline runs this controller instance carries out: each in a task of its own, recorded
//! so that a run is never started twice here and stopping can wait for, or give back, the rest.

use std::sync::PoisonError;
use std::time::Duration;

use tokio::task::JoinHandle;
use tracing::{debug, warn};

use crate::api::ObjectKey;

use crate::controllers::run;
use crate::controllers::ErrorChain;
use crate::controllers::Runtime;

impl Runtime {
    /// Whether this instance is carrying out `run` right now.
    pub(crate) fn is_executing(&self, run: &ObjectKey) -> bool {
        self.running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains_key(run)
    }

    /// Whether this instance is carrying out any pipeline run right now.
    pub(crate) fn executing_any(&self) -> bool {
        !self
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_empty()
    }

    /// Records that `run` is carried out by the task `spawn` starts. The map stays locked while
    /// the task starts, so its own [`Runtime::done_executing`] cannot come first.
    pub(super) fn start_executing(&self, run: ObjectKey, spawn: impl FnOnce() -> JoinHandle<()>) {
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        running.insert(run, spawn());
    }

    pub(super) fn done_executing(&self, run: &ObjectKey) {
        self.running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(run);
    }

    /// Stops executing: lets the runs in progress finish for up to the shutdown grace, then
    /// kills the rest (their containers die with their tasks) and gives their claims back, so
    /// that they run again from the start — never twice at once, never lost.
    pub(crate) async fn stop_executing(&self) {
        let deadline = tokio::time::Instant::now() + self.settings.shutdown_grace;
        loop {
            let left = self
                .running
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .len();
            if left == 0 {
                return;
            }
            if tokio::time::Instant::now() >= deadline {
                break;
            }
            debug!(
                runs = left,
                "waiting for pipeline runs to finish before stopping"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let unfinished: Vec<(ObjectKey, JoinHandle<()>)> = self
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain()
            .collect();
        for (run, task) in unfinished {
            task.abort();
            let _ = task.await;
            match run::release(self, &run).await {
                Ok(true) => {
                    warn!(run = %run, "stopped before the run finished; it runs again later")
                }
                Ok(false) => {}
                Err(err) => {
                    warn!(run = %run, error = %ErrorChain(&err), "could not give the run back; the next controllers take it over")
                }
            }
        }
    }
}
