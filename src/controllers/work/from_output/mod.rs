//! Pipeline output -> workload groups, with the semantics of Kratix's work-creator, and
//! the workload group of a Promise's static dependencies.
//!
//! Everything here is pure: it takes the checked [`Output`] of a run, never the file system.

use std::collections::BTreeMap;

use md5::{Digest, Md5};

use crate::api::work::{Workload, WorkloadGroup, WorkloadGroupSelector};
use crate::api::WorkflowType;
use crate::pipeline::{DestinationSelectorEntry, Output};

/// The directory of the default workload group.
pub(crate) const ROOT_DIRECTORY: &str = ".";
/// `source` of selectors that come from the Promise's `spec.destinationSelectors`.
pub(crate) const PROMISE_SOURCE: &str = "promise";

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `destination-selectors.yaml` names a folder the pipeline did not create.
    #[error("destination-selectors.yaml names directory {directory:?}, which is not a folder in the pipeline's output")]
    MissingDirectory { directory: String },
    /// Compressing a file failed.
    #[error("cannot compress {path}")]
    Compress {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// A static dependency cannot be written as YAML.
    #[error("dependency {index} of promise {promise:?} cannot be written as YAML")]
    Dependency {
        promise: String,
        index: usize,
        #[source]
        source: serde_yaml::Error,
    },
}

/// The workload groups of one pipeline run: one per destination-selector entry with a
/// directory (in the order listed), then the default group `.` with every other file, only if it
/// has any. `promise_selectors` are the Promise's own `spec.destinationSelectors`; they apply to
/// the default group only.
pub(crate) fn workload_groups(
    output: &Output,
    selectors: &[DestinationSelectorEntry],
    promise_selectors: &[BTreeMap<String, String>],
    workflow_type: WorkflowType,
) -> Result<Vec<WorkloadGroup>, Error> {
    let workflow_source = workflow_type.selector_source();
    let mut groups = Vec::new();
    let mut claimed: Vec<&str> = Vec::new();
    for entry in selectors {
        let Some(directory) = entry.directory.as_deref() else {
            continue;
        };
        if !output.dirs.iter().any(|d| d == directory) {
            return Err(Error::MissingDirectory {
                directory: directory.to_string(),
            });
        }
        let files = output
            .files
            .iter()
            .filter(|(path, _)| is_under(path, directory));
        groups.push(WorkloadGroup {
            id: group_id(directory),
            directory: directory.to_string(),
            workloads: workloads(files)?,
            destination_selectors: vec![WorkloadGroupSelector {
                match_labels: entry.match_labels.clone(),
                source: workflow_source.clone(),
            }],
        });
        claimed.push(directory);
    }

    let rest: Vec<&(String, Vec<u8>)> = output
        .files
        .iter()
        .filter(|(path, _)| !claimed.iter().any(|dir| is_under(path, dir)))
        .collect();
    if !rest.is_empty() {
        let mut destination_selectors: Vec<WorkloadGroupSelector> = selectors
            .iter()
            .filter(|entry| entry.directory.is_none())
            .map(|entry| WorkloadGroupSelector {
                match_labels: entry.match_labels.clone(),
                source: workflow_source.clone(),
            })
            .collect();
        destination_selectors.extend(promise_selector(promise_selectors));
        groups.push(WorkloadGroup {
            id: group_id(ROOT_DIRECTORY),
            directory: ROOT_DIRECTORY.to_string(),
            workloads: workloads(rest.into_iter())?,
            destination_selectors,
        });
    }
    Ok(groups)
}

/// The Promise's selectors squashed into one, the first entry winning a clash, as Kratix does.
fn promise_selector(
    promise_selectors: &[BTreeMap<String, String>],
) -> Option<WorkloadGroupSelector> {
    let mut squashed = BTreeMap::new();
    for selector in promise_selectors {
        for (key, value) in selector {
            squashed.entry(key.clone()).or_insert_with(|| value.clone());
        }
    }
    (!squashed.is_empty()).then(|| WorkloadGroupSelector {
        match_labels: squashed,
        source: PROMISE_SOURCE.to_string(),
    })
}

fn is_under(path: &str, directory: &str) -> bool {
    path.strip_prefix(directory)
        .is_some_and(|rest| rest.starts_with('/'))
}

fn workloads<'a>(
    files: impl Iterator<Item = &'a (String, Vec<u8>)>,
) -> Result<Vec<Workload>, Error> {
    files
        .map(|(path, bytes)| {
            Ok(Workload {
                filepath: path.clone(),
                content: crate::api::work::encode_content(bytes).map_err(|source| {
                    Error::Compress {
                        path: path.clone(),
                        source,
                    }
                })?,
            })
        })
        .collect()
}

/// A workload group's id: the md5 hex of its directory (`.` for the default group).
pub(crate) fn group_id(directory: &str) -> String {
    hex::encode(Md5::digest(directory.as_bytes()))
}

/// The path of a Promise's static dependencies in its workload group.
pub(crate) fn static_dependencies_path(promise_name: &str) -> String {
    format!("static/{promise_name}-dependencies.yaml")
}

/// The one workload group of a Promise's static `dependencies`: `.` holding
/// `static/<promise>-dependencies.yaml`, every dependency a YAML document of it, scheduled by the
/// Promise's own selectors.
pub(crate) fn static_dependencies_group(
    promise_name: &str,
    dependencies: &[serde_json::Value],
    promise_selectors: &[BTreeMap<String, String>],
) -> Result<WorkloadGroup, Error> {
    let documents = dependencies
        .iter()
        .enumerate()
        .map(|(index, dependency)| {
            serde_yaml::to_string(dependency).map_err(|source| Error::Dependency {
                promise: promise_name.to_string(),
                index,
                source,
            })
        })
        .collect::<Result<Vec<String>, Error>>()?;
    let path = static_dependencies_path(promise_name);
    let content =
        crate::api::work::encode_content(documents.join("---\n").as_bytes()).map_err(|source| {
            Error::Compress {
                path: path.clone(),
                source,
            }
        })?;
    Ok(WorkloadGroup {
        id: group_id(ROOT_DIRECTORY),
        directory: ROOT_DIRECTORY.to_string(),
        workloads: vec![Workload {
            filepath: path,
            content,
        }],
        destination_selectors: promise_selector(promise_selectors).into_iter().collect(),
    })
}

#[cfg(test)]
mod tests;
