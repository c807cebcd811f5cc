//! How a container is started: its command line and environment resolved before anything
//! runs, and the program, arguments and variables it gets in a sandbox or as a plain process.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::api::pipeline::Container;

use super::{exec, images, isolation, ImageMap, Isolation, RunDirs, SANDBOX_PATH};

/// A container ready to start: its command line and its own variables.
#[derive(Debug, Clone)]
pub(super) struct Prepared {
    pub(super) name: String,
    pub(super) command: Vec<String>,
    pub(super) env: Vec<(String, String)>,
}

/// Resolves every container before any runs, so a pipeline that cannot start has no side effects.
pub(super) fn prepare(
    containers: &[Container],
    images: &ImageMap,
) -> Result<Vec<Prepared>, (String, images::Refusal)> {
    containers
        .iter()
        .map(|c| {
            let command = images::resolve_command(c, images).map_err(|r| (c.name.clone(), r))?;
            let env = images::container_env(c).map_err(|r| (c.name.clone(), r))?;
            Ok(Prepared {
                name: c.name.clone(),
                command,
                env,
            })
        })
        .collect()
}

/// The environment of a container: minimal base, folder locations, `KRATIX_*`, then the
/// container's own `env` (which, as in Kubernetes, wins on a clash).
pub(super) fn container_environment(
    base: &[(&str, String)],
    kratix: &[(String, String)],
    own: &[(String, String)],
) -> Vec<(OsString, OsString)> {
    base.iter()
        .map(|(k, v)| (OsString::from(k), OsString::from(v)))
        .chain(kratix.iter().chain(own).map(|(k, v)| (k.into(), v.into())))
        .collect()
}

/// What the sandbox hides of the host, and the run's API folder it shows.
pub(super) struct Shown<'a> {
    pub(super) hidden: &'a [PathBuf],
    pub(super) api_dir: Option<&'a Path>,
}

pub(super) fn invocation(
    isolation: Isolation,
    root: &[isolation::RootEntry],
    dirs: &RunDirs,
    shown: Shown<'_>,
    tmp: &Path,
    kratix: &[(String, String)],
    container: &Prepared,
) -> exec::Invocation {
    if isolation == Isolation::Sandbox {
        let base = [
            ("PATH", SANDBOX_PATH.to_string()),
            ("HOME", "/tmp".to_string()),
            ("TMPDIR", "/tmp".to_string()),
            ("KRATIX_INPUT_DIR", isolation::SANDBOX_INPUT.to_string()),
            ("KRATIX_OUTPUT_DIR", isolation::SANDBOX_OUTPUT.to_string()),
            (
                "KRATIX_METADATA_DIR",
                isolation::SANDBOX_METADATA.to_string(),
            ),
        ];
        let mounts = isolation::SandboxMounts {
            input: &dirs.input,
            output: &dirs.output,
            metadata: &dirs.metadata,
            hidden: shown.hidden,
            api: shown.api_dir,
        };
        exec::Invocation {
            program: isolation::BWRAP.into(),
            args: isolation::sandbox_args(root, &mounts, &container.command),
            env: container_environment(&base, kratix, &container.env),
            cwd: tmp.to_path_buf(),
        }
    } else {
        let path_var = std::env::var("PATH").unwrap_or_else(|_| SANDBOX_PATH.to_string());
        let shown = |p: &Path| p.display().to_string();
        let base = [
            ("PATH", path_var),
            ("HOME", shown(tmp)),
            ("TMPDIR", shown(tmp)),
            ("KRATIX_INPUT_DIR", shown(&dirs.input)),
            ("KRATIX_OUTPUT_DIR", shown(&dirs.output)),
            ("KRATIX_METADATA_DIR", shown(&dirs.metadata)),
        ];
        let (program, args) = match container.command.split_first() {
            Some((program, args)) => (program.into(), args.iter().map(OsString::from).collect()),
            None => (OsString::new(), Vec::new()),
        };
        exec::Invocation {
            program,
            args,
            env: container_environment(&base, kratix, &container.env),
            cwd: tmp.to_path_buf(),
        }
    }
}
