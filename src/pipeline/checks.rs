//! The checks every executor makes once a pipeline's containers have succeeded: its output
//! folder, then its metadata folder, refused under the name of the Kratix container that makes
//! the same check.

use std::path::Path;

use statestores::error_chain::ErrorChain;

use super::{metadata, output, Metadata, Output, RunDirs, RunOutcome, RunResult};
use super::{STATUS_WRITER, WORK_WRITER};

/// Reads and checks output and metadata once every container has succeeded.
pub(super) async fn check_results(
    dirs: &RunDirs,
    limits: output::Limits,
    outcome: &mut RunOutcome,
    logs: &mut Vec<u8>,
) {
    match check_folders_off_workers(&dirs.output, &dirs.metadata, limits).await {
        Ok((output, metadata)) => {
            outcome.output = Some(output);
            outcome.metadata = metadata;
        }
        Err(refused) => {
            logs.extend_from_slice(
                format!("== {} ==\n{}\n", refused.container, refused.reason).as_bytes(),
            );
            outcome.result = RunResult::Failed {
                container: refused.container.to_string(),
                exit_code: None,
                reason: refused.reason,
            };
        }
    }
}

/// Why [`check_folders`] refused a run: the Kratix container that makes the failing check, and
/// the check's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refused {
    pub container: &'static str,
    pub reason: String,
}

/// The checks of every executor once the containers have succeeded: the output folder, then the
/// metadata folder.
pub(crate) fn check_folders(
    output_dir: &Path,
    metadata_dir: &Path,
    limits: output::Limits,
) -> Result<(Output, Metadata), Refused> {
    let output = output::read_output(output_dir, limits).map_err(|e| Refused {
        container: WORK_WRITER,
        reason: ErrorChain(&e).to_string(),
    })?;
    let metadata = metadata::read_metadata(metadata_dir).map_err(|e| Refused {
        // Kratix's work-creator reads the selectors; its status-writer the rest.
        container: match e.file() {
            Some(metadata::DESTINATION_SELECTORS_FILE) => WORK_WRITER,
            _ => STATUS_WRITER,
        },
        reason: ErrorChain(&e).to_string(),
    })?;
    Ok((output, metadata))
}

/// [`check_folders`] on a thread for blocking work: it reads every file of the output, which
/// must not hold up a worker of the async runtime.
pub(crate) async fn check_folders_off_workers(
    output_dir: &Path,
    metadata_dir: &Path,
    limits: output::Limits,
) -> Result<(Output, Metadata), Refused> {
    let (output_dir, metadata_dir) = (output_dir.to_path_buf(), metadata_dir.to_path_buf());
    tokio::task::spawn_blocking(move || check_folders(&output_dir, &metadata_dir, limits))
        .await
        .unwrap_or_else(|e| {
            Err(Refused {
                container: WORK_WRITER,
                reason: format!("the output check ended without an answer: {e}"),
            })
        })
}
