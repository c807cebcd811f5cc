//! The executor the controllers know ([`Executor`]), what its leftovers belong to
//! ([`Owner`]), and the executor of the embedded runtime ([`Local`]).

use std::path::Path;
use std::sync::Arc;

use super::{container, groups, run_with, Error, PlatformApi, RunOutcome, RunRequest};

/// What the executor's leftovers belong to: a Promise (and everything of its requests) or one
/// request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    Promise {
        name: String,
    },
    Request {
        promise: String,
        /// Empty for a cluster-scoped request.
        namespace: String,
        name: String,
    },
}

impl std::fmt::Display for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Owner::Promise { name } => write!(f, "Promise {name}"),
            Owner::Request {
                promise,
                namespace,
                name,
            } if namespace.is_empty() => write!(f, "{promise} request {name}"),
            Owner::Request {
                promise,
                namespace,
                name,
            } => write!(f, "{promise} request {namespace}/{name}"),
        }
    }
}

/// Carries out pipeline runs. The controllers only know this trait; [`Local`] runs containers on
/// this machine.
#[async_trait::async_trait]
pub trait Executor: std::fmt::Debug + Send + Sync + 'static {
    /// Runs every container of the pipeline in order and checks what they wrote.
    async fn run(&self, req: RunRequest) -> Result<RunOutcome, Error>;

    /// Kills whatever a run that an executor which is now gone started in `work_dir` left
    /// running, and returns what it killed (process groups, for the local executor).
    async fn kill_leftovers(&self, work_dir: &Path) -> Vec<i32>;

    /// Removes everything the executor made for `owner` beyond its runs' folders (for the Job
    /// executor: Jobs, ServiceAccounts, roles, ConfigMaps). Called once the owner's delete
    /// workflows ran, before its finalizer goes; doing it again finds nothing.
    async fn sweep(&self, owner: &Owner) -> Result<(), Error>;

    /// Prunes what the executor keeps of `owner`'s finished `action` runs beyond their
    /// PipelineRuns (for the Job executor: Jobs): everything of pipelines not in `pipelines`
    /// (removed or renamed), and of each current pipeline all but the newest it keeps. Never
    /// anything of a run in progress.
    async fn prune(
        &self,
        owner: &Owner,
        action: crate::api::Action,
        pipelines: &[String],
    ) -> Result<(), Error>;
}

/// The executor of the embedded runtime: containers run on this machine, sandboxed or as plain
/// processes; with the platform's API, each run gets credentials for it.
#[derive(Debug, Clone, Default)]
pub struct Local {
    api: Option<Arc<dyn PlatformApi>>,
}

impl Local {
    /// An executor whose runs reach `api` with credentials of their own.
    pub(crate) fn with_api(api: Arc<dyn PlatformApi>) -> Self {
        Self { api: Some(api) }
    }
}

#[async_trait::async_trait]
impl Executor for Local {
    async fn run(&self, req: RunRequest) -> Result<RunOutcome, Error> {
        run_with(req, self.api.as_deref()).await
    }

    async fn kill_leftovers(&self, work_dir: &Path) -> Vec<i32> {
        for id in container::remove_leftovers(work_dir).await {
            tracing::warn!(container = %id, "removed a leftover pipeline container of the interrupted run");
        }
        // Reads the run's record of its process groups: file work, off the runtime's workers.
        let work_dir = work_dir.to_path_buf();
        tokio::task::spawn_blocking(move || groups::kill_recorded(&work_dir))
            .await
            .unwrap_or_else(|e| {
                tracing::warn!(error = %e, "cannot kill the leftover process groups");
                Vec::new()
            })
    }

    /// Runs leave only their folders, which the controllers remove with the runs.
    async fn sweep(&self, _owner: &Owner) -> Result<(), Error> {
        Ok(())
    }

    /// Nothing beyond the runs' folders, which go with the runs.
    async fn prune(
        &self,
        _owner: &Owner,
        _action: crate::api::Action,
        _pipelines: &[String],
    ) -> Result<(), Error> {
        Ok(())
    }
}
