//! The controllers of a command that waits (`apply`, `delete`, `wait`, `reconcile`). While no
//! other process runs the home's controllers, the command runs them itself, in one
//! [`controllers::Runtime`] for its whole life however many waits it makes; while another does
//! (a `serve`, another command), it only watches, and takes over as soon as that process lets go
//! of the home.

use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::controllers;
use crate::platform::Platform;
use crate::store::embedded::HomeLock;

/// What looks at the stored objects between two checks of a wait (the command's progress).
#[async_trait::async_trait]
pub(crate) trait Observer: std::fmt::Debug + Send + Sync {
    async fn look(&self);
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The home lock could not be checked.
    #[error("checking the home lock")]
    Lock(#[source] crate::store::Error),
}

/// Runs the home's controllers in this process whenever it may.
pub(crate) struct Driver {
    platform: Platform,
    running: Mutex<Option<Running>>,
    /// The command's progress, looked at between two checks of a wait.
    progress: Mutex<Option<Arc<dyn Observer>>>,
    /// Changes the controllers' runtime before they start.
    customise: Option<Customise>,
}

/// Changes a runtime before its controllers start.
pub(super) type Customise =
    std::sync::Arc<dyn Fn(controllers::Runtime) -> controllers::Runtime + Send + Sync>;

impl std::fmt::Debug for Driver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Driver")
            .field("platform", &self.platform)
            .field("running", &self.running)
            .field("customised", &self.customise.is_some())
            .field("progress", &self.progress)
            .finish()
    }
}

#[derive(Debug)]
struct Running {
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

impl Driver {
    pub(crate) fn new(platform: Platform) -> Self {
        Driver {
            platform,
            running: Mutex::new(None),
            progress: Mutex::new(None),
            customise: None,
        }
    }

    /// A driver whose controllers run in a runtime changed by `customise`.
    pub(crate) fn customised(platform: Platform, customise: Customise) -> Self {
        Driver {
            customise: Some(customise),
            ..Driver::new(platform)
        }
    }

    /// Shows `progress` while this driver's waits run.
    pub(crate) fn show_progress(&self, progress: Arc<dyn Observer>) {
        *self
            .progress
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(progress);
    }

    /// Lets the progress (if any) look at its objects.
    pub(crate) async fn look(&self) {
        let progress = self
            .progress
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        if let Some(p) = progress {
            p.look().await;
        }
    }

    /// The control plane of the home.
    pub(crate) fn control_plane(&self) -> std::sync::Arc<dyn crate::store::ControlPlane> {
        self.platform.control_plane()
    }

    /// Starts the controllers here if they are not running here yet and no other process holds
    /// the home. Cheap when nothing changes: call it before every look.
    pub(crate) fn take_over_if_free(&self) -> Result<(), Error> {
        let mut running = self
            .running
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if running.is_some() {
            return Ok(());
        }
        let Some(lock) = HomeLock::try_acquire(&self.platform.home).map_err(Error::Lock)? else {
            return Ok(());
        };
        let (stop, stopped) = oneshot::channel::<()>();
        let mut runtime = with_platform_api(
            controllers::Runtime::new(self.platform.clone()),
            &self.platform,
        )
        .0;
        if let Some(customise) = &self.customise {
            runtime = customise(runtime);
        }
        let limit = runtime.settings().shutdown_grace;
        let runtime = runtime.draining_on_stop(limit);
        let task = tokio::spawn(async move {
            runtime
                .run(lock, async {
                    let _ = stopped.await;
                })
                .await;
        });
        *running = Some(Running { stop, task });
        Ok(())
    }

    /// Stops the controllers if they run here: what the command's changes set off is carried out
    /// first (for at most the shutdown grace), pipeline runs in progress get the shutdown grace
    /// to finish, the rest are given back; the home is let go once that is done.
    pub(crate) async fn shutdown(self) {
        let running = self
            .running
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(Running { stop, task }) = running {
            let _ = stop.send(());
            let _ = task.await;
        }
    }
}

/// The runtime with its pipelines served the platform's API, and the API (`None`, with a
/// warning, when it cannot start: pipelines then run without it).
pub(super) fn with_platform_api(
    runtime: controllers::Runtime,
    platform: &Platform,
) -> (
    controllers::Runtime,
    Option<Arc<crate::apiserver::ApiServer>>,
) {
    match crate::apiserver::ApiServer::start(platform) {
        Ok(api) => {
            let local = crate::pipeline::Local::with_api(api.clone());
            (runtime.with_executor(Arc::new(local)), Some(api))
        }
        Err(err) => {
            tracing::warn!(error = %statestores::error_chain::ErrorChain(&err), "the platform API cannot start: pipelines run without it");
            (runtime, None)
        }
    }
}
