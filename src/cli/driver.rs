//! The controllers of a command that waits (`apply`, `delete`, `wait`, `reconcile`). While no
//! other process runs the home's controllers, the command runs them itself, in one
//! [`controllers::Runtime`] for its whole life however many waits it makes; while another does
//! (a `serve`, another command), it only watches, and takes over as soon as that process lets go
//! of the home.

use std::sync::Mutex;

use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::controllers;
use crate::platform::Platform;
use crate::store::embedded::HomeLock;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The home lock could not be checked.
    #[error("checking the home lock")]
    Lock(#[source] crate::store::Error),
}

/// Runs the home's controllers in this process whenever it may.
#[derive(Debug)]
pub struct Driver {
    platform: Platform,
    running: Mutex<Option<Running>>,
}

#[derive(Debug)]
struct Running {
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

impl Driver {
    pub fn new(platform: Platform) -> Self {
        Driver {
            platform,
            running: Mutex::new(None),
        }
    }

    /// The control plane of the home.
    pub fn control_plane(&self) -> std::sync::Arc<dyn crate::store::ControlPlane> {
        self.platform.control_plane()
    }

    /// Starts the controllers here if they are not running here yet and no other process holds
    /// the home. Cheap when nothing changes: call it before every look.
    pub fn take_over_if_free(&self) -> Result<(), Error> {
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
        let runtime = controllers::Runtime::new(self.platform.clone());
        let limit = runtime.settings.shutdown_grace;
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
    pub async fn shutdown(self) {
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
