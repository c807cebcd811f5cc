//! A run's folder on this machine (its input, output, metadata and logs): made fresh before the
//! run starts, removed with the run. File work, so it runs off the runtime's workers.

use std::path::PathBuf;

use tracing::warn;

use crate::api::ObjectKey;
use crate::controllers::run::failure::Error as Failure;

/// Empties the run's folder (what an earlier attempt left) and makes it again.
pub(crate) async fn fresh(path: PathBuf) -> Result<(), Failure> {
    tokio::task::spawn_blocking(move || {
        if path.exists() {
            std::fs::remove_dir_all(&path).map_err(|source| Failure::ClearDir {
                path: path.clone(),
                source,
            })?;
        }
        std::fs::create_dir_all(&path).map_err(|source| Failure::CreateDir { path, source })
    })
    .await
    .map_err(Failure::FolderTask)?
}

/// Removes the folder of `run`, which is going away. A folder that cannot be removed fails
/// nothing (only this machine's disk holds it) but is said at warn, with why.
pub(crate) async fn remove(path: PathBuf, run: &ObjectKey) {
    let shown = path.display().to_string();
    let removed = tokio::task::spawn_blocking(move || match std::fs::remove_dir_all(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        other => other.map_err(|e| e.to_string()),
    })
    .await
    .map_err(|e| e.to_string())
    .and_then(|removed| removed);
    if let Err(error) = removed {
        warn!(%run, folder = %shown, %error, "cannot remove the run's folder");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_fresh_folder_keeps_nothing_of_an_earlier_attempt() {
        let dir = tempfile::tempdir().expect("temp dir");
        let run = dir.path().join("run");
        std::fs::create_dir_all(run.join("output")).expect("earlier attempt");
        std::fs::write(run.join("output/old.yaml"), "x").expect("earlier output");
        fresh(run.clone()).await.expect("made fresh");
        assert!(run.is_dir());
        assert_eq!(std::fs::read_dir(&run).expect("readable").count(), 0);
    }

    #[tokio::test]
    async fn a_folder_that_cannot_be_made_names_itself() {
        let dir = tempfile::tempdir().expect("temp dir");
        let blocker = dir.path().join("file");
        std::fs::write(&blocker, "not a folder").expect("file");
        let err = fresh(blocker.join("run")).await.expect_err("under a file");
        assert!(
            err.to_string()
                .contains(&blocker.join("run").display().to_string()),
            "{err}"
        );
    }

    #[tokio::test]
    async fn removing_a_missing_folder_is_fine() {
        let dir = tempfile::tempdir().expect("temp dir");
        let key = ObjectKey::new(crate::api::GROUP, "PipelineRun", Some("default"), "r");
        remove(dir.path().join("gone"), &key).await;
        remove(dir.path().to_path_buf(), &key).await;
        assert!(!dir.path().exists());
    }
}
