//! One write of a batch of placements: the changes it makes in the store (ownership recorded
//! before, status and events after), and the commit that carries them.

use std::collections::BTreeSet;

use bytes::Bytes;
use statestores::{Change, Key, WriteInfo};

use crate::api::object::label;
use crate::api::{
    finalizers, labels, Destination, FilepathMode, Object, WorkPlacementSpec, WorkPlacementStatus,
    WorkType,
};
use crate::controllers::placement::layout::FileBytes;
use crate::controllers::placement::plan;
use crate::events::{self, Reason};
use crate::store::Selector;

use crate::controllers::placement::commit_message::generation_and_annotations;
use crate::controllers::placement::commit_message::placement_message;
use crate::controllers::placement::commit_message::ObjectMeta;
use crate::controllers::placement::commit_message::PlacementWrite;
use crate::controllers::placement::conditions::written_conditions;
use crate::controllers::placement::error::{Invalid, WriteError};
use crate::controllers::placement::files::aggregated;
use crate::controllers::placement::files::context;
use crate::controllers::placement::files::desired_files;
use crate::controllers::placement::owned_paths;
use crate::controllers::placement::spec_of;
use crate::controllers::placement::summary::LastWrite;
use crate::controllers::placement::update_wp_status;
use crate::controllers::state_store::StoreHandle;
use crate::controllers::{status, Runtime};
use crate::metrics::{WorkRef, WriteResult};

pub(super) async fn write_batch(
    rt: &Runtime,
    handle: &StoreHandle,
    dest: &Destination,
    dest_obj: &Object,
    work: Option<&Object>,
    batch: &[Object],
) -> Result<(), WriteError> {
    let wp_kind = rt.kind(crate::api::Builtin::WorkPlacement);
    let mut per_wp: Vec<(Object, Vec<FileBytes>)> = Vec::new();
    let mut desired_all: Vec<(String, Vec<u8>)> = Vec::new();
    let mut owned_all: BTreeSet<String> = BTreeSet::new();
    for wp in batch {
        let spec = spec_of(wp).map_err(Invalid::from)?;
        let ctx = context(dest, handle.path.as_deref(), wp, &spec, work);
        let desired = desired_files(&ctx, wp, &spec)?;
        owned_all.extend(owned_paths(wp));
        desired_all.extend(desired.iter().cloned());
        per_wp.push((wp.clone(), desired));
    }
    if dest.spec.filepath_mode() == FilepathMode::AggregatedYaml {
        let (path, content) = aggregated(rt, handle, dest, dest_obj).await?;
        match content {
            Some(bytes) => desired_all.push((path, bytes)),
            None => {
                owned_all.insert(path);
            }
        }
    }
    // Two placements must never claim one path: in mode `none` every placement of the
    // Destination writes flat, so placements of other Works count too.
    let mut claims: Vec<(String, Vec<String>)> = per_wp
        .iter()
        .map(|(wp, desired)| {
            let name = wp.metadata.name.clone().unwrap_or_default();
            (name, desired.iter().map(|(p, _)| p.clone()).collect())
        })
        .collect();
    if dest.spec.filepath_mode() == FilepathMode::None {
        let in_batch: BTreeSet<String> = claims.iter().map(|(n, _)| n.clone()).collect();
        let dest_name = dest_obj.metadata.name.clone().unwrap_or_default();
        let others = rt
            .cp
            .list(
                &wp_kind,
                None,
                &Selector::from_labels([(labels::TARGET_DESTINATION, dest_name.as_str())]),
            )
            .await?;
        for other in others
            .iter()
            .filter(|o| o.metadata.deletion_timestamp.is_none())
        {
            let name = other.metadata.name.clone().unwrap_or_default();
            if !in_batch.contains(&name) {
                claims.push((name, owned_paths(other).into_iter().collect()));
            }
        }
    }
    plan::check_collisions(&claims).map_err(Invalid::from)?;
    let owned_list: Vec<String> = owned_all.into_iter().collect();
    let planned = plan::plan(&desired_all, &owned_list);

    // Record what we are about to write before writing, so a crash in between never leaves a
    // file of ours that no record claims.
    for (wp, desired) in &mut per_wp {
        let owned = owned_paths(wp);
        if desired.iter().any(|(p, _)| !owned.contains(p)) {
            let pending: Vec<String> = owned
                .iter()
                .cloned()
                .chain(desired.iter().map(|(p, _)| p.clone()))
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            if let Some(stored) =
                update_wp_status(rt, wp, |s| s.pending_files = Some(pending.clone())).await?
            {
                *wp = stored;
            }
        }
    }

    let mut changes = Vec::with_capacity(planned.puts.len() + planned.deletes.len());
    for (path, bytes) in &planned.puts {
        let key = Key::parse(path).map_err(Invalid::from)?;
        changes.push(Change::Put(key, Bytes::from(bytes.clone())));
    }
    for path in &planned.deletes {
        let key = Key::parse(path).map_err(Invalid::from)?;
        changes.push(Change::Delete(key));
    }
    let first = spec_of(&batch[0]).map_err(Invalid::from)?;
    let object = match &handle.message_template {
        Some(t) if t.needs_object() => Some(
            generation_and_annotations(rt, &first.promise_name, request_of(&batch[0], &first))
                .await?,
        ),
        _ => None,
    };
    let info = write_info(
        handle,
        dest,
        work,
        &batch[0],
        &first,
        !planned.puts.is_empty(),
        object.as_ref(),
    );
    let written = if changes.is_empty() {
        Ok(statestores::WriteOutcome::default())
    } else {
        handle.store.write(&changes, &info).await
    };
    rt.metrics.placement_written(
        handle.store.kind(),
        &work_ref(&batch[0], &first),
        dest.metadata.name.as_deref().unwrap_or_default(),
        WriteResult::of(&written),
    );
    let outcome = written.map_err(WriteError::Store)?;
    let written_keys: BTreeSet<String> = outcome
        .written
        .iter()
        .map(|k| k.as_str().to_string())
        .collect();
    let removed: BTreeSet<String> = outcome
        .deleted
        .iter()
        .map(|k| k.as_str().to_string())
        .collect();
    let version = outcome.version.map(|v| v.0);
    let dest_name = dest_obj.metadata.name.clone().unwrap_or_default();
    for (wp, desired) in per_wp {
        if wp.metadata.deletion_timestamp.is_some() {
            status::remove_finalizer(rt.cp.as_ref(), &wp_kind, &wp, finalizers::WORK_PLACEMENT)
                .await?;
            continue;
        }
        let files: Vec<String> = desired.iter().map(|(p, _)| p.clone()).collect();
        let generation = wp.metadata.generation;
        let misplaced = label(&wp, labels::MISPLACED) == Some("true");
        let version = version.clone();
        let before = status::status_or_default::<WorkPlacementStatus>(&wp)
            .files
            .unwrap_or_default();
        let last = LastWrite::of(&before, &files, &written_keys, &removed, version.clone());
        // As read for this write (or as its pending files were stored): only this controller
        // writes a placement's status, so it is not read again (a conflict reads it).
        status::update_typed_status_of(
            rt.cp.as_ref(),
            &wp_kind,
            &wp,
            "WorkPlacement",
            |s: &mut WorkPlacementStatus| {
                if !last.is_empty() {
                    s.extra.insert(
                        "lastWrite".into(),
                        serde_json::to_value(&last).unwrap_or_default(),
                    );
                }
                s.files = Some(files.clone());
                s.pending_files = None;
                if let Some(v) = &version {
                    s.version_id = Some(v.clone());
                }
                s.observed_generation = generation;
                status::merge_conditions(&mut s.conditions, written_conditions(misplaced));
            },
        )
        .await?;
        if !last.is_empty() {
            events::record(
                &rt.cp,
                &wp,
                Reason::WorkWritten,
                &written_message(&dest_name, &last),
            )
            .await;
        }
    }
    Ok(())
}

/// The Work of a placement, as the metrics of the pipeline that made it name it.
pub(super) fn work_ref(wp: &Object, spec: &WorkPlacementSpec) -> WorkRef {
    WorkRef {
        namespace: wp.metadata.namespace.clone().unwrap_or_default(),
        promise: spec.promise_name.clone(),
        resource: spec.resource_name.clone(),
        pipeline: label(wp, labels::PIPELINE_NAME)
            .unwrap_or_default()
            .to_string(),
    }
}

/// The request (namespace, name) a placement is for; none for a promise workflow's.
pub(super) fn request_of<'a>(
    wp: &'a Object,
    spec: &'a WorkPlacementSpec,
) -> Option<(&'a str, &'a str)> {
    let resource = spec.resource_name.as_str();
    let namespace = wp.metadata.namespace.as_deref().unwrap_or_default();
    (!resource.is_empty()).then_some((namespace, resource))
}

/// The commit of one write: what it is for, and who writes it.
pub(super) fn write_info(
    handle: &StoreHandle,
    dest: &Destination,
    work: Option<&Object>,
    wp: &Object,
    spec: &WorkPlacementSpec,
    puts: bool,
    object: Option<&ObjectMeta>,
) -> WriteInfo {
    let message = placement_message(&PlacementWrite {
        work: label(wp, labels::WORK).unwrap_or_default(),
        promise: &spec.promise_name,
        resource: request_of(wp, spec),
        pipeline: label(wp, labels::PIPELINE_NAME),
        destination: dest.metadata.name.as_deref().unwrap_or_default(),
        work_type: work.and_then(WorkType::of),
        removal: wp
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(labels::REMOVAL_REASON))
            .map(String::as_str),
        puts,
        template: handle.message_template.as_deref(),
        generation: object.and_then(|o| o.generation),
        annotations: object.map(|o| &o.annotations),
    });
    WriteInfo {
        message,
        author_name: handle.author_name.clone(),
        author_email: handle.author_email.clone(),
    }
}

/// `WorkWritten`'s message: where, which commit, and how many files changed.
pub(super) fn written_message(destination: &str, last: &LastWrite) -> String {
    let commit = last
        .version
        .as_deref()
        .map(|v| format!(" at {}", &v[..v.len().min(12)]))
        .unwrap_or_default();
    format!(
        "written to Destination {destination}{commit}: {}",
        last.counts()
    )
}
