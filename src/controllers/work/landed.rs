//! Where each pipeline's files landed: recorded by its Work from its placements, read for a
//! request's `status.pipelines`.

use std::collections::HashMap;

use crate::api::object::label;
use crate::api::workflow_status::Landing;
use crate::api::{labels, Object, WorkPlacement, WorkPlacementStatus, WorkStatus};

use crate::controllers::status;
use crate::controllers::work::query::placement_written;

/// One placement's entry: its destination, the version (commit) holding its files, and whether
/// they are written for its current generation.
fn landing(wp: &Object) -> Landing {
    let destination = crate::api::object::to_typed::<WorkPlacement>(wp)
        .ok()
        .map(|typed| typed.spec.target_destination_name);
    let version = status::status_or_default::<WorkPlacementStatus>(wp).version_id;
    Landing {
        destination,
        version,
        written: placement_written(wp),
    }
}

/// A Work's landings: each placement's, one per Destination and version (workload groups of one
/// pipeline on one Destination share a commit).
pub(super) fn landings(placements: &[Object]) -> Vec<Landing> {
    let mut entries: Vec<Landing> = Vec::new();
    for entry in placements.iter().map(landing) {
        if !entries.contains(&entry) {
            entries.push(entry);
        }
    }
    entries
}

/// Per pipeline: the destinations its files went to and the version (commit) holding them, as
/// its Work records them.
pub(crate) fn where_files_landed(works: &[Object]) -> HashMap<String, Vec<Landing>> {
    works
        .iter()
        .filter_map(|work| {
            let pipeline = label(work, labels::PIPELINE_NAME)?;
            let recorded: WorkStatus = status::status_or_default(work);
            Some((pipeline.to_string(), recorded.landings))
        })
        .filter(|(_, landings)| !landings.is_empty())
        .collect()
}
