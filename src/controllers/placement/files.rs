//! The files one write puts in the store: each placement's, at the paths its Destination's
//! filepath mode gives them, and in mode `aggregatedYAML` the Destination's one shared file.

use crate::api::object::label;
use crate::api::{labels, Destination, FilepathMode, Object, WorkPlacementSpec, WorkType};
use crate::controllers::placement::layout;
use crate::controllers::placement::layout::PlacementContext;
use crate::controllers::placement::layout::PlacementFiles;
use crate::store::Selector;

use crate::controllers::placement::error::{Invalid, WriteError};
use crate::controllers::placement::spec_of;
use crate::controllers::state_store::StoreHandle;
use crate::controllers::Runtime;

pub(super) fn context(
    dest: &Destination,
    handle: &StoreHandle,
    wp: &Object,
    spec: &WorkPlacementSpec,
    work: Option<&Object>,
) -> PlacementContext {
    let is_static = work.and_then(WorkType::of) == Some(WorkType::StaticDependency);
    let pipeline = label(wp, labels::PIPELINE_NAME).filter(|p| !p.is_empty() && !is_static);
    let resource = spec.resource_name.as_str();
    PlacementContext {
        store_path: handle.path.clone(),
        destination_path: dest.spec.path.clone(),
        mode: dest.spec.filepath_mode(),
        aggregated_filename: dest.spec.filepath.as_ref().and_then(|f| f.filename.clone()),
        namespace: wp.metadata.namespace.clone().unwrap_or_default(),
        promise: spec.promise_name.clone(),
        resource: (!resource.is_empty()).then(|| resource.to_string()),
        pipeline: pipeline.map(str::to_string),
        group_id: spec.id.clone(),
    }
}

pub(super) fn decode(spec: &WorkPlacementSpec) -> Result<PlacementFiles, WriteError> {
    PlacementFiles::decode(&spec.workloads).map_err(|e| Invalid::from(e).into())
}

/// The files one placement should have in the store (none when it is being deleted).
pub(super) fn desired_files(
    ctx: &PlacementContext,
    wp: &Object,
    spec: &WorkPlacementSpec,
) -> Result<Vec<(String, Vec<u8>)>, WriteError> {
    if wp.metadata.deletion_timestamp.is_some() {
        return Ok(vec![]);
    }
    let files = decode(spec)?;
    let mut desired = layout::file_paths(ctx, &files);
    if ctx.mode == FilepathMode::None {
        let filepaths: Vec<String> = files.workloads.iter().map(|(p, _)| p.clone()).collect();
        let state = layout::none_mode_state_file(
            ctx,
            &ctx.namespace,
            wp.metadata.name.as_deref().unwrap_or_default(),
            &filepaths,
        )
        .map_err(Invalid::from)?;
        desired.push(state);
    }
    Ok(desired)
}

/// Mode `aggregatedYAML`: the Destination's one file, from every live placement on it; `None`
/// when no placement is left (the file is then deleted).
pub(super) async fn aggregated(
    rt: &Runtime,
    handle: &StoreHandle,
    dest: &Destination,
    dest_obj: &Object,
) -> Result<(String, Option<Vec<u8>>), WriteError> {
    let name = dest_obj.metadata.name.clone().unwrap_or_default();
    let path = layout::aggregated_file_path(
        handle.path.as_deref(),
        &dest.spec.path,
        dest.spec
            .filepath
            .as_ref()
            .and_then(|f| f.filename.as_deref()),
    );
    let all = rt
        .cp
        .list(
            &rt.kind(crate::api::Builtin::WorkPlacement),
            None,
            &Selector::from_labels([(labels::TARGET_DESTINATION, name.as_str())]),
        )
        .await?;
    let mut placements = Vec::new();
    for wp in all
        .iter()
        .filter(|w| w.metadata.deletion_timestamp.is_none())
    {
        placements.push((
            wp.metadata.name.clone().unwrap_or_default(),
            decode(&spec_of(wp).map_err(Invalid::from)?)?.workloads,
        ));
    }
    if placements.is_empty() {
        return Ok((path, None));
    }
    Ok((path, Some(layout::aggregated_yaml(&placements))))
}
