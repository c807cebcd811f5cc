//! Where each pipeline's files landed: for a request's `status.pipelines`.

use std::collections::HashMap;

use crate::api::object::label;
use crate::api::workflow_status::Landing;
use crate::api::{labels, Object, WorkPlacement, WorkPlacementStatus};

use crate::controllers::work::query::placement_written;
use crate::controllers::work::query::placements_of;
use crate::controllers::{status, Error, Runtime};

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

/// Per pipeline: the destinations its files went to and the version (commit) holding them.
pub async fn where_files_landed(
    rt: &Runtime,
    works: &[Object],
) -> Result<HashMap<String, Vec<Landing>>, Error> {
    let mut out: HashMap<String, Vec<Landing>> = HashMap::new();
    for work in works {
        let Some(pipeline) = label(work, labels::PIPELINE_NAME) else {
            continue;
        };
        let name = work.metadata.name.clone().unwrap_or_default();
        let placements = placements_of(rt, work.metadata.namespace.as_deref(), &name).await?;
        let mut entries: Vec<Landing> = Vec::new();
        for entry in placements.iter().map(landing) {
            // Workload groups of one pipeline on one Destination share a commit: list it once.
            if !entries.contains(&entry) {
                entries.push(entry);
            }
        }
        out.insert(pipeline.to_string(), entries);
    }
    Ok(out)
}
