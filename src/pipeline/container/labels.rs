//! The labels that tie an engine container to its run, and the sweep that removes what an
//! executor which died mid-run left in the engine.

use std::collections::HashMap;
use std::path::Path;

use bollard::query_parameters::ListContainersOptions;

/// The run's folder: unique per run and home, and what the recovery of a run knows.
pub(crate) const RUN_DIR: &str = "io.kratix-rs.run-dir";
pub(crate) const RUN: &str = "io.kratix-rs.run";
pub(crate) const CONTAINER: &str = "io.kratix-rs.container";

pub(crate) fn of_run(work_dir: &Path, run: &str, container: &str) -> HashMap<String, String> {
    HashMap::from([
        (RUN_DIR.to_string(), work_dir.display().to_string()),
        (RUN.to_string(), run.to_string()),
        (CONTAINER.to_string(), container.to_string()),
    ])
}

/// The engine filter for the containers of the run in `work_dir`.
pub(crate) fn filter(work_dir: &Path) -> HashMap<String, Vec<String>> {
    HashMap::from([(
        "label".to_string(),
        vec![format!("{RUN_DIR}={}", work_dir.display())],
    )])
}

/// Removes every container of the run in `work_dir`, running or not, and returns their ids.
/// Without a reachable engine there is nothing of it to remove.
pub(crate) async fn remove_leftovers(work_dir: &Path) -> Vec<String> {
    let Ok((docker, _)) = super::engine::connect().await else {
        return Vec::new();
    };
    let options = ListContainersOptions {
        all: true,
        filters: Some(filter(work_dir)),
        ..ListContainersOptions::default()
    };
    let found = match docker.list_containers(Some(options)).await {
        Ok(found) => found,
        Err(e) => {
            tracing::warn!(error = %e, "cannot list the pipeline containers an interrupted run left");
            return Vec::new();
        }
    };
    let mut removed = Vec::new();
    for id in found.into_iter().filter_map(|c| c.id) {
        super::removal::remove(&docker, &id).await;
        removed.push(id);
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_name_the_run_folder() {
        let labels = of_run(Path::new("/h/runs/x"), "run-1", "render");
        assert_eq!(labels.get(RUN_DIR).map(String::as_str), Some("/h/runs/x"));
        assert_eq!(
            filter(Path::new("/h/runs/x")).get("label"),
            Some(&vec!["io.kratix-rs.run-dir=/h/runs/x".to_string()])
        );
    }
}
