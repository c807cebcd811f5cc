//! What to remove once a workflow has completed.

use std::collections::BTreeSet;

/// Pipelines that have Works but are no longer in the workflow (removed or renamed): their
/// Works, and with them their files in every state store, are deleted after a successful run.
/// `work_pipeline_names` are the `kratix.io/pipeline-name` labels of the object's Works of this
/// workflow; the answer keeps their order, without repeats.
pub(crate) fn obsolete_pipelines(
    work_pipeline_names: &[String],
    current: &[String],
) -> Vec<String> {
    let mut seen = BTreeSet::new();
    work_pipeline_names
        .iter()
        .filter(|name| !current.contains(name))
        .filter(|name| seen.insert(name.as_str()))
        .cloned()
        .collect()
}
