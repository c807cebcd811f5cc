//! The pipeline runs this controller instance carries out: each in a task of its own, recorded
//! so that a run is never started twice here and stopping can wait for, or give back, the rest.

use std::future::Future;
use std::sync::PoisonError;
use std::time::Duration;

use tokio::task::JoinHandle;
use tracing::{debug, warn, Instrument};

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

    /// Records that `run` is carried out by `task`, which starts now (see [`spawn_in_span`]).
    /// The map stays locked while the task starts, so its own [`Runtime::done_executing`]
    /// cannot come first.
    pub(super) fn start_executing(
        &self,
        run: ObjectKey,
        task: impl Future<Output = ()> + Send + 'static,
    ) {
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        let handle = spawn_in_span(&run, task);
        running.insert(run, handle);
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
                    warn!(run = %run, "stopped before the run finished; it runs again later");
                }
                Ok(false) => {}
                Err(err) => {
                    warn!(run = %run, error = %ErrorChain(&err), "could not give the run back; the next controllers take it over");
                }
            }
        }
    }
}

/// Spawns the task carrying out `run` in a span of its own (naming the run) inside the span of
/// whoever starts it (the reconcile that claimed or made the run), so that what the run logs
/// says which reconcile set it off.
fn spawn_in_span(
    run: &ObjectKey,
    task: impl Future<Output = ()> + Send + 'static,
) -> JoinHandle<()> {
    tokio::spawn(task.instrument(tracing::info_span!("run", run = %run)))
}

#[cfg(test)]
mod tests {
    use tracing::Span;
    use tracing_subscriber::registry::LookupSpan;

    use super::*;

    /// The names of the current span and its parents, innermost first.
    fn span_names() -> Vec<&'static str> {
        let Some(id) = Span::current().id() else {
            return Vec::new();
        };
        tracing::dispatcher::get_default(|dispatch| {
            let Some(registry) = dispatch.downcast_ref::<tracing_subscriber::Registry>() else {
                return Vec::new();
            };
            let mut names = Vec::new();
            let mut span = registry.span(&id);
            while let Some(s) = span {
                names.push(s.name());
                span = s.parent();
            }
            names
        })
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_run_task_runs_in_its_own_span_inside_the_starters() {
        let _subscriber = tracing::subscriber::set_default(tracing_subscriber::registry());
        let key = ObjectKey::new(crate::api::GROUP, "PipelineRun", Some("default"), "r-1");
        let (seen, names) = tokio::sync::oneshot::channel();
        let task = tracing::info_span!("reconcile").in_scope(|| {
            spawn_in_span(&key, async move {
                let _ = seen.send(span_names());
            })
        });
        task.await.expect("the task ends");
        assert_eq!(names.await.expect("told"), vec!["run", "reconcile"]);
    }
}
