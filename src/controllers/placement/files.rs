//! The files one write puts in the store: each placement's, at the paths its Destination's
//! filepath mode gives them, and in mode `aggregatedYAML` the Destination's one shared file.

use crate::api::object::label;
use crate::api::{labels, Destination, FilepathMode, Object, WorkPlacementSpec, WorkType};
use crate::controllers::placement::layout;
use crate::controllers::placement::layout::PlacementContext;
use crate::controllers::placement::layout::PlacementFiles;
use crate::platform::builtin;
use crate::store::Selector;

use crate::controllers::placement::error::{Invalid, WriteError};
use crate::controllers::placement::spec_of;
use crate::controllers::state_store::StoreHandle;
use crate::controllers::Runtime;

pub(super) fn context(
    dest: &Destination,
    store_path: Option<&str>,
    wp: &Object,
    spec: &WorkPlacementSpec,
    work: Option<&Object>,
) -> PlacementContext {
    let is_static = work.and_then(WorkType::of) == Some(WorkType::StaticDependency);
    let pipeline = label(wp, labels::PIPELINE_NAME).filter(|p| !p.is_empty() && !is_static);
    let resource = spec.resource_name.as_str();
    PlacementContext {
        store_path: store_path.map(str::to_string),
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

/// Whether a placement on `dest` is made owning its files: only where their folder is its own.
pub(super) fn owns_at_creation(dest: &Destination) -> bool {
    dest.spec.filepath_mode() == FilepathMode::NestedByMetadata
}

/// The paths a placement about to be made will own once written. Recorded in its status as it
/// is made, they spare its first write the record of its own it would otherwise store before
/// writing (see `write.rs`). Only in mode `nestedByMetadata`: there every path lies in the
/// folder of the placement's own request, pipeline and workload group, which no other placement
/// of the Destination writes, so claiming the paths before the write's collision check cannot
/// claim another placement's file. `None` in the other modes, and for files that do not lay out
/// (the write reports those).
pub(super) fn owned_at_creation(
    dest: &Destination,
    store_path: Option<&str>,
    wp: &Object,
    work: &Object,
) -> Option<Vec<String>> {
    if !owns_at_creation(dest) {
        return None;
    }
    let spec = spec_of(wp).ok()?;
    let ctx = context(dest, store_path, wp, &spec, Some(work));
    let paths: std::collections::BTreeSet<String> = desired_files(&ctx, wp, &spec)
        .ok()?
        .into_iter()
        .map(|(path, _)| path)
        .collect();
    (!paths.is_empty()).then(|| paths.into_iter().collect())
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
            &builtin(crate::api::Builtin::WorkPlacement),
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

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;

    fn destination(filepath: Value) -> Destination {
        serde_json::from_value(json!({
            "apiVersion": "platform.kratix.io/v1alpha1",
            "kind": "Destination",
            "metadata": {"name": "worker"},
            "spec": {"path": "worker", "filepath": filepath,
                     "stateStoreRef": {"kind": "GitStateStore", "name": "default"}},
        }))
        .expect("a Destination")
    }

    fn placement(content: &str) -> Object {
        serde_json::from_value(json!({
            "apiVersion": "platform.kratix.io/v1alpha1",
            "kind": "WorkPlacement",
            "metadata": {"name": "thing-t1-one.worker-5058f", "namespace": "default",
                         "labels": {"kratix.io/pipeline-name": "one"}},
            "spec": {"targetDestinationName": "worker", "promiseName": "thing",
                     "resourceName": "t1", "id": "5058f1af8388633f609cadb75a75dc9d",
                     "workloads": [{"filepath": "cm.yaml", "content": content}]},
        }))
        .expect("a WorkPlacement")
    }

    fn work() -> Object {
        serde_json::from_value(json!({
            "apiVersion": "platform.kratix.io/v1alpha1",
            "kind": "Work",
            "metadata": {"name": "thing-t1-one", "namespace": "default"},
        }))
        .expect("a Work")
    }

    #[test]
    fn a_new_placement_owns_its_files_only_where_their_folder_is_its_own() {
        let content = crate::api::work::encode_content(b"kind: ConfigMap\n").expect("encodes");
        let nested = destination(json!({"mode": "nestedByMetadata"}));
        let wp = placement(&content);
        let ctx = context(
            &nested,
            Some("store"),
            &wp,
            &spec_of(&wp).expect("a spec"),
            None,
        );
        let laid_out: Vec<String> = layout::file_paths(
            &ctx,
            &decode(&spec_of(&wp).expect("a spec")).expect("decodes"),
        )
        .into_iter()
        .map(|(path, _)| path)
        .collect();
        let cases: [(&str, Destination, Object, Option<Vec<String>>); 4] = [
            ("nested", nested.clone(), wp.clone(), Some(laid_out.clone())),
            (
                "aggregated",
                destination(json!({"mode": "aggregatedYAML"})),
                wp.clone(),
                None,
            ),
            (
                "flat",
                destination(json!({"mode": "none"})),
                wp.clone(),
                None,
            ),
            ("not laid out", nested, placement("not base64 gzip"), None),
        ];
        assert_eq!(
            laid_out,
            ["store/worker/resources/default/thing/t1/one/5058f/cm.yaml"]
        );
        for (name, dest, wp, want) in cases {
            assert_eq!(
                owned_at_creation(&dest, Some("store"), &wp, &work()),
                want,
                "{name}"
            );
        }
    }
}
