//! The scratch copy of a home that `diff` runs workflows in: the stored objects (one consistent
//! copy of the control plane) and the image map, nothing else. Pipeline run folders are not
//! copied, so nothing in the copy can name (and kill) a process of the real home.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::api::Builtin;
use crate::pipeline::images::HOME_IMAGE_MAP;
use crate::platform::{builtin, Platform};
use crate::store::embedded::EmbeddedStore;
use crate::store::Selector;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("creating a scratch folder")]
    Folder(#[source] std::io::Error),
    #[error("copying {from} into the scratch home")]
    Copy {
        from: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("copying the control plane")]
    Store(#[from] crate::store::Error),
    #[error(transparent)]
    Platform(#[from] crate::platform::Error),
}

/// A scratch home, removed when dropped.
#[derive(Debug)]
pub(super) struct Scratch {
    pub platform: Platform,
    _folder: tempfile::TempDir,
}

impl Scratch {
    /// Copies `home` into a new scratch home. The copy is read in one transaction, so a `serve`
    /// writing the home meanwhile is neither blocked nor seen half-way.
    pub(super) async fn of(home: &Path) -> Result<Self, Error> {
        let folder = tempfile::Builder::new()
            .prefix("kratix-diff-")
            .tempdir()
            .map_err(Error::Folder)?;
        EmbeddedStore::open(home)?.copy_into(folder.path()).await?;
        let images = home.join(HOME_IMAGE_MAP);
        if images.is_file() {
            std::fs::copy(&images, folder.path().join(HOME_IMAGE_MAP)).map_err(|source| {
                Error::Copy {
                    from: images.clone(),
                    source,
                }
            })?;
        }
        let platform = Platform::open(folder.path())?;
        release_claims(&platform).await?;
        Ok(Self {
            platform,
            _folder: folder,
        })
    }
}

/// Runs the copy shows `Running` are claimed by whoever runs the real home's controllers, who
/// will never carry them out here: without a claim they count as interrupted and run again from
/// their first container.
async fn release_claims(platform: &Platform) -> Result<(), Error> {
    let kind = builtin(Builtin::PipelineRun);
    let cp = platform.control_plane();
    for mut run in cp.list(&kind, None, &Selector::everything()).await? {
        if !needs_release(&run.data) {
            continue;
        }
        if let Some(status) = run.data.get_mut("status").and_then(Value::as_object_mut) {
            status.remove("executor");
        }
        cp.update_status(&kind, &run).await?;
    }
    Ok(())
}

/// A run claimed and `Running`.
fn needs_release(run: &Value) -> bool {
    run.pointer("/status/phase").and_then(Value::as_str) == Some(crate::api::words::phases::RUNNING)
        && run.pointer("/status/executor").is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_claimed_running_runs_are_released() {
        let cases = [
            (
                json!({"status": {"phase": "Running", "executor": {"pid": 1}}}),
                true,
            ),
            (json!({"status": {"phase": "Running"}}), false),
            (
                json!({"status": {"phase": "Succeeded", "executor": {"pid": 1}}}),
                false,
            ),
            (json!({"status": {"phase": "Pending"}}), false),
            (json!({}), false),
        ];
        for (run, want) in cases {
            assert_eq!(needs_release(&run), want, "{run}");
        }
    }
}
