//! Runs one pipeline on this machine: its containers in order, in a container engine from their
//! images, in a bubblewrap sandbox or as plain processes, then checks what they wrote (see
//! docs/architecture.md).
//!
//! [`run`] is the I/O shell; the decisions (command lines, environment, sandbox arguments,
//! output and metadata checks) are pure functions in the submodules.

mod api_reach;
mod checks;
pub(crate) mod container;
pub(crate) mod contract;
mod exec;
mod executor;
pub(crate) mod groups;
mod host;
pub mod images;
mod invocation;
pub(crate) mod isolation;
pub(crate) mod metadata;
pub mod output;
pub(crate) mod platform_api;
mod program_path;
pub(crate) mod progress;
mod steps;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::OnceCell;
use tokio::time::Instant;

use crate::api::pipeline::Pipeline;

pub use contract::{kratix_env, ResourceObject, Subject, WorkflowEnv};
pub use executor::{Executor, Local, Owner};
pub use images::ImageMap;
pub use isolation::Isolation;
pub use output::Output;

pub(crate) use checks::{check_folders, check_folders_off_workers, Refused};
pub(crate) use metadata::{DestinationSelectorEntry, Metadata};
pub(crate) use platform_api::PlatformApi;
pub(crate) use progress::Progress;

pub(crate) use container::auth::DockerConfig;
pub(crate) use container::setting::{ExecutorSetting, Mode};

use host::HostRun;
use steps::{steps, Step};

/// Names under which checks done after the containers report a failure; they are the Kratix
/// containers that make the same checks.
pub(crate) const WORK_WRITER: &str = "work-writer";
pub(crate) const STATUS_WRITER: &str = "status-writer";

/// Where the run's combined logs are saved inside the work folder.
pub(crate) const LOGS_FILE: &str = "logs.txt";

const SANDBOX_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A folder of the run could not be created.
    #[error("cannot create {path}")]
    CreateDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// `input/object.yaml` or `logs.txt` could not be written.
    #[error("cannot write {path}")]
    WriteFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Sandbox isolation was asked for, but bubblewrap cannot run here.
    #[error("bubblewrap (bwrap) is missing or cannot create a sandbox on this machine ({detail}); install bubblewrap, or set KRATIX_ISOLATION=process to run pipeline containers as plain processes without isolation")]
    BubblewrapUnavailable { detail: String },
    /// `KRATIX_OUTPUT_MAX_FILES` or `KRATIX_OUTPUT_MAX_BYTES` is not a number.
    #[error("invalid output limit")]
    Limits(#[source] output::Error),
    /// The host's `/` could not be listed to build the sandbox.
    #[error("cannot list / to build the sandbox")]
    ListRoot(#[source] std::io::Error),
    /// The executor's own machinery (a cluster's API, for the Job executor) failed.
    #[error("cannot run {run}")]
    Backend {
        run: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The executor could not remove what it made for a deleted Promise or request.
    #[error("cannot remove what the pipelines of {owner} left")]
    Sweep {
        owner: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The executor could not prune what it keeps of an owner's finished runs.
    #[error("cannot prune what the {action} runs of {owner} left")]
    Prune {
        owner: String,
        action: crate::api::Action,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The run's folders could not be opened to the engine containers' users.
    #[error("cannot open the folders of {run} to its containers")]
    OpenFolders {
        run: String,
        #[source]
        source: std::io::Error,
    },
    /// Running a container failed for a reason that is not the container's.
    #[error("cannot run container {container:?} of {run}")]
    Exec {
        run: String,
        container: String,
        #[source]
        source: exec::Error,
    },
}

/// One pipeline run to execute.
#[derive(Debug, Clone, Default)]
pub struct RunRequest {
    /// Names the run in messages.
    pub run_name: String,
    pub pipeline: Pipeline,
    /// Written to `input/object.yaml`.
    pub object_yaml: String,
    /// The `KRATIX_*` variables (see [`contract::kratix_env`]).
    pub env: Vec<(String, String)>,
    /// A fresh folder: `input/`, `output/`, `metadata/` and `tmp/` are created inside.
    pub work_dir: PathBuf,
    /// For the whole run, all containers together.
    pub timeout: Duration,
    /// Local commands for containers that name only an image.
    pub images: ImageMap,
    /// How containers that run on the host are isolated.
    pub isolation: Isolation,
    /// Which containers run in the container engine (`KRATIX_EXECUTOR`).
    pub executor: ExecutorSetting,
    /// Registry credentials from the Pipeline's `imagePullSecrets`, in its order.
    pub registries: Vec<DockerConfig>,
    /// Host folders the sandbox hides from containers (the platform's home, whose database holds
    /// Secrets). Plain processes can read whatever their user can.
    pub hidden: Vec<PathBuf>,
    /// Told what the run is doing while it would otherwise look stuck (pulling an image).
    pub progress: Progress,
}

#[derive(Debug, Clone, PartialEq)]
pub enum RunResult {
    Succeeded,
    /// A container exited non-zero, could not start, or the output/metadata checks refused what
    /// the containers wrote (then `container` is [`WORK_WRITER`] or [`STATUS_WRITER`]).
    Failed {
        container: String,
        exit_code: Option<i32>,
        reason: String,
    },
    TimedOut {
        container: String,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct RunOutcome {
    pub result: RunResult,
    /// Every container's stdout and stderr, each headed `== container <name> ==`; also saved to
    /// `<work_dir>/logs.txt`.
    pub logs: String,
    /// The checked output; `Some` only on success.
    pub output: Option<Output>,
    /// What the pipeline wrote to its metadata folder; default unless the run succeeded.
    pub metadata: Metadata,
    /// How the containers were actually isolated.
    pub isolation_used: Isolation,
}

/// The folders of one run on the host.
#[derive(Debug, Clone)]
struct RunDirs {
    input: PathBuf,
    output: PathBuf,
    metadata: PathBuf,
    tmp: PathBuf,
}

impl RunDirs {
    fn create(work_dir: &Path) -> Result<Self, Error> {
        let dirs = RunDirs {
            input: work_dir.join("input"),
            output: work_dir.join("output"),
            metadata: work_dir.join("metadata"),
            tmp: work_dir.join("tmp"),
        };
        for dir in [&dirs.input, &dirs.output, &dirs.metadata, &dirs.tmp] {
            std::fs::create_dir_all(dir).map_err(|source| Error::CreateDir {
                path: dir.clone(),
                source,
            })?;
        }
        Ok(dirs)
    }
}

/// Runs the pipeline without the platform's API. `Err` only when the executor itself cannot
/// work (folders, bubblewrap); everything the pipeline got wrong is a [`RunResult::Failed`]
/// with its reason.
pub async fn run(req: RunRequest) -> Result<RunOutcome, Error> {
    run_with(req, None).await
}

/// Runs the pipeline; with `api`, its containers get credentials for it while the run runs.
#[tracing::instrument(skip_all, fields(run = %req.run_name, isolation))]
pub async fn run_with(req: RunRequest, api: Option<&dyn PlatformApi>) -> Result<RunOutcome, Error> {
    let limits = output::Limits::from_env().map_err(Error::Limits)?;
    let dirs = RunDirs::create(&req.work_dir)?;
    let object_path = dirs.input.join("object.yaml");
    std::fs::write(&object_path, &req.object_yaml).map_err(|source| Error::WriteFile {
        path: object_path,
        source,
    })?;
    let deadline = Instant::now() + req.timeout;
    let mut logs: Vec<u8> = Vec::new();
    let mut outcome = RunOutcome {
        result: RunResult::Succeeded,
        logs: String::new(),
        output: None,
        metadata: Metadata::default(),
        isolation_used: req.isolation,
    };
    match steps(&req).await {
        Err((container, reason)) => {
            logs.extend_from_slice(format!("{reason}\n").as_bytes());
            outcome.result = RunResult::Failed {
                container,
                exit_code: None,
                reason,
            };
        }
        Ok((steps, engine)) => {
            if steps.iter().any(|s| matches!(s, Step::Host(_))) {
                outcome.isolation_used = choose_isolation(req.isolation, &dirs).await?;
            }
            tracing::Span::current()
                .record("isolation", tracing::field::debug(outcome.isolation_used));
            if engine.is_some() {
                container::open_folders(&[&dirs.input, &dirs.output, &dirs.metadata]).map_err(
                    |source| Error::OpenFolders {
                        run: req.run_name.clone(),
                        source,
                    },
                )?;
            }
            let reach = match api {
                Some(api) => Some(api_reach::admit(api, &req, engine.as_ref()).await?),
                None => None,
            };
            let host = HostRun::new(&req, &dirs, outcome.isolation_used, reach.as_ref())?;
            let engine_env = api_reach::engine_env(reach.as_ref(), &req.env);
            for (index, step) in steps.iter().enumerate() {
                let name = step.name();
                logs.extend_from_slice(format!("== container {name} ==\n").as_bytes());
                let result = match (step, &engine) {
                    (Step::Host(prepared), _) => {
                        host.run(index, prepared, deadline, &mut logs).await?
                    }
                    (Step::Engine(planned), Some(docker)) => {
                        let ctx = container::run::Context {
                            docker,
                            run_name: &req.run_name,
                            folders: container::run::Folders {
                                work_dir: &req.work_dir,
                                input: &dirs.input,
                                output: &dirs.output,
                                metadata: &dirs.metadata,
                            },
                            kratix_env: &engine_env,
                            api: reach.as_ref().and_then(api_reach::Reach::engine_mount),
                            registries: &req.registries,
                            deadline,
                            progress: &req.progress,
                        };
                        let ended = container::run::run(&ctx, planned, &mut logs).await;
                        engine_failure(name, ended)
                    }
                    // `steps` plans engine containers only with an engine.
                    (Step::Engine(_), None) => None,
                };
                if !logs.ends_with(b"\n") {
                    logs.push(b'\n');
                }
                if let Some(result) = result {
                    if let RunResult::Failed { reason, .. } = &result {
                        logs.extend_from_slice(format!("{reason}\n").as_bytes());
                    }
                    outcome.result = result;
                    break;
                }
            }
            // The run's access ends here, before its results are checked.
            drop(reach);
        }
    }
    if outcome.result == RunResult::Succeeded {
        checks::check_results(&dirs, limits, &mut outcome, &mut logs).await;
    }
    outcome.logs = String::from_utf8_lossy(&logs).into_owned();
    let logs_path = req.work_dir.join(LOGS_FILE);
    std::fs::write(&logs_path, &outcome.logs).map_err(|source| Error::WriteFile {
        path: logs_path,
        source,
    })?;
    Ok(outcome)
}

/// `None` when the engine container succeeded, else how the run ends.
fn engine_failure(name: &str, ended: container::run::Ended) -> Option<RunResult> {
    use container::run::Ended;
    let failed = |exit_code: Option<i32>, reason: String| {
        Some(RunResult::Failed {
            container: name.to_string(),
            exit_code,
            reason,
        })
    };
    match ended {
        Ended::Code(0) => None,
        Ended::Code(code) => failed(
            i32::try_from(code).ok(),
            format!("container {name:?} exited with code {code}"),
        ),
        Ended::TimedOut => Some(RunResult::TimedOut {
            container: name.to_string(),
        }),
        Ended::Refused(reason) => failed(None, reason),
    }
}

/// `None` when the container succeeded, else how the run ends.
fn container_failure(name: &str, command: &[String], exit: exec::Exit) -> Option<RunResult> {
    let failed = |exit_code: Option<i32>, reason: String| {
        Some(RunResult::Failed {
            container: name.to_string(),
            exit_code,
            reason,
        })
    };
    match exit {
        exec::Exit::Code(0) => None,
        exec::Exit::Code(code) => failed(
            Some(code),
            format!("container {name:?} exited with code {code}"),
        ),
        exec::Exit::Signal(signal) => failed(
            None,
            format!("container {name:?} was killed by signal {signal}"),
        ),
        exec::Exit::NotStarted(e) => failed(
            None,
            format!(
                "container {name:?} could not start {:?}: {e}",
                command.first().map(String::as_str).unwrap_or_default()
            ),
        ),
        exec::Exit::TimedOut => Some(RunResult::TimedOut {
            container: name.to_string(),
        }),
    }
}

static BUBBLEWRAP: OnceCell<Result<(), String>> = OnceCell::const_new();
static FALLBACK_WARNED: AtomicBool = AtomicBool::new(false);

/// Sandbox or process for this run; `Auto` probes bubblewrap once per process.
async fn choose_isolation(wanted: Isolation, dirs: &RunDirs) -> Result<Isolation, Error> {
    if wanted == Isolation::Process {
        return Ok(Isolation::Process);
    }
    let probe = BUBBLEWRAP
        .get_or_init(|| probe_bubblewrap(isolation::BWRAP.as_ref(), dirs))
        .await;
    match (probe, wanted) {
        (Ok(()), _) => Ok(Isolation::Sandbox),
        (Err(detail), Isolation::Sandbox) => Err(Error::BubblewrapUnavailable {
            detail: detail.clone(),
        }),
        (Err(detail), _) => {
            if !FALLBACK_WARNED.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    %detail,
                    "bubblewrap cannot run here: pipeline containers run as plain processes, without isolation (set KRATIX_ISOLATION=process to silence this)"
                );
            }
            Ok(Isolation::Process)
        }
    }
}

/// Starts `true` in exactly the sandbox a container would get.
async fn probe_bubblewrap(program: &Path, dirs: &RunDirs) -> Result<(), String> {
    let root = isolation::host_root_entries().map_err(|e| format!("cannot list /: {e}"))?;
    let mounts = isolation::SandboxMounts {
        input: &dirs.input,
        output: &dirs.output,
        metadata: &dirs.metadata,
        hidden: &[],
        api: None,
    };
    let args = isolation::sandbox_args(&root, &mounts, &["true".to_string()]);
    let result = tokio::process::Command::new(program)
        .args(&args)
        .env_clear()
        .env("PATH", SANDBOX_PATH)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    match tokio::time::timeout(Duration::from_secs(30), result).await {
        Err(_) => Err(format!("{} did not finish within 30s", program.display())),
        Ok(Err(e)) => Err(format!("cannot start {}: {e}", program.display())),
        Ok(Ok(out)) if out.status.success() => Ok(()),
        Ok(Ok(out)) => Err(format!(
            "{} failed: {}",
            program.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )),
    }
}

#[cfg(test)]
mod props;
#[cfg(test)]
mod tests;
