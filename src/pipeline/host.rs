//! Runs a container on the host: sandboxed or as a plain process, in its own process group.

use std::path::PathBuf;

use tokio::time::Instant;

use super::api_reach::Reach;
use super::invocation::{invocation, Prepared, Shown};
use super::{
    container_failure, exec, groups, isolation, Error, Isolation, RunDirs, RunRequest, RunResult,
};

/// What every host container of one run shares.
pub(super) struct HostRun<'a> {
    req: &'a RunRequest,
    dirs: &'a RunDirs,
    isolation: Isolation,
    root: Vec<isolation::RootEntry>,
    hidden: Vec<PathBuf>,
    /// `KRATIX_*`, and `KUBECONFIG` when the run reaches the platform's API.
    env: Vec<(String, String)>,
    /// The run's API folder, bound into the sandbox.
    api_dir: Option<PathBuf>,
}

impl<'a> HostRun<'a> {
    pub(super) fn new(
        req: &'a RunRequest,
        dirs: &'a RunDirs,
        isolation: Isolation,
        reach: Option<&Reach>,
    ) -> Result<Self, Error> {
        let root = match isolation {
            Isolation::Sandbox => isolation::host_root_entries().map_err(Error::ListRoot)?,
            _ => Vec::new(),
        };
        // Symbolic links resolved, as the sandbox sees the host; what does not exist hides
        // nothing.
        let hidden = req
            .hidden
            .iter()
            .filter_map(|p| p.canonicalize().ok())
            .collect();
        let mut env = req.env.clone();
        env.extend(reach.map(|r| r.host_env(isolation)));
        Ok(Self {
            req,
            dirs,
            isolation,
            root,
            hidden,
            env,
            api_dir: reach.map(|r| r.dir().to_path_buf()),
        })
    }

    /// Runs the `index`th container; `Some` when it ends the run.
    pub(super) async fn run(
        &self,
        index: usize,
        container: &Prepared,
        deadline: Instant,
        logs: &mut Vec<u8>,
    ) -> Result<Option<RunResult>, Error> {
        let tmp = self.dirs.tmp.join(index.to_string());
        std::fs::create_dir_all(&tmp).map_err(|source| Error::CreateDir {
            path: tmp.clone(),
            source,
        })?;
        let invocation = invocation(
            self.isolation,
            &self.root,
            self.dirs,
            Shown {
                hidden: &self.hidden,
                api_dir: self.api_dir.as_deref(),
            },
            &tmp,
            &self.env,
            container,
        );
        let exit = exec::run(invocation, deadline, logs, |group| {
            groups::record(&self.req.work_dir, group)
        })
        .await
        .map_err(|source| Error::Exec {
            run: self.req.run_name.clone(),
            container: container.name.clone(),
            source,
        })?;
        Ok(container_failure(&container.name, &container.command, exit))
    }
}
