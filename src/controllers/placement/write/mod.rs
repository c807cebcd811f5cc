//! One write of a batch of placements: observes their files, asks [`decide`] for the records
//! to store first and the commit's changes, writes them, and records on each placement what
//! [`decide::after_write`] says the commit did for it (status and event).

mod decide;

use std::collections::BTreeSet;

use statestores::{Key, WriteInfo};

use crate::api::object::label;
use crate::api::{
    finalizers, labels, Destination, FilepathMode, Object, WorkPlacementSpec, WorkPlacementStatus,
    WorkType,
};
use crate::events::{self, Reason};
use crate::platform::builtin;
use crate::store::Selector;

use crate::controllers::placement::commit_message::generation_and_annotations;
use crate::controllers::placement::commit_message::placement_message;
use crate::controllers::placement::commit_message::ObjectMeta;
use crate::controllers::placement::commit_message::PlacementWrite;
use crate::controllers::placement::error::{Invalid, WriteError};
use crate::controllers::placement::files::aggregated;
use crate::controllers::placement::files::context;
use crate::controllers::placement::files::desired_files;
use crate::controllers::placement::owned_paths;
use crate::controllers::placement::spec_of;
use crate::controllers::placement::update_wp_status;
use crate::controllers::placement::write::decide::After;
use crate::controllers::placement::write::decide::Member;
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
    let wp_kind = builtin(crate::api::Builtin::WorkPlacement);
    let dest_name = dest_obj.metadata.name.clone().unwrap_or_default();
    // Observe: each placement's files, and what else on the Destination the write must mind.
    let mut members = Vec::with_capacity(batch.len());
    for wp in batch {
        let spec = spec_of(wp).map_err(Invalid::from)?;
        let ctx = context(dest, handle.path.as_deref(), wp, &spec, work);
        members.push(Member {
            name: wp.metadata.name.clone().unwrap_or_default(),
            owned: owned_paths(wp),
            desired: desired_files(&ctx, wp, &spec)?,
        });
    }
    let aggregated = match dest.spec.filepath_mode() {
        FilepathMode::AggregatedYaml => Some(aggregated(rt, handle, dest, dest_obj).await?),
        _ => None,
    };
    let others = match dest.spec.filepath_mode() {
        FilepathMode::None => others_on(rt, &dest_name).await?,
        _ => Vec::new(),
    };
    let planned = decide::plan_write(&decide::Observed {
        members: &members,
        aggregated,
        others: &others,
    })?;

    // Act: the records first, then the commit.
    let mut batch: Vec<Object> = batch.to_vec();
    for (wp, pending) in batch.iter_mut().zip(&planned.pending) {
        let Some(pending) = pending else { continue };
        if let Some(stored) =
            update_wp_status(rt, wp, |s| s.pending_files = Some(pending.clone())).await?
        {
            *wp = stored;
        }
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
        planned.puts,
        object.as_ref(),
    );
    let written = if planned.changes.is_empty() {
        Ok(statestores::WriteOutcome::default())
    } else {
        handle.store.write(&planned.changes, &info).await
    };
    rt.metrics.placement_written(
        handle.store.kind(),
        &work_ref(&batch[0], &first),
        dest.metadata.name.as_deref().unwrap_or_default(),
        WriteResult::of(&written),
    );
    let outcome = written.map_err(WriteError::Store)?;
    let written = decide::Written {
        written: keys(&outcome.written),
        deleted: keys(&outcome.deleted),
        version: outcome.version.map(|v| v.0),
    };
    for (wp, member) in batch.iter().zip(&members) {
        let before = status::status_or_default::<WorkPlacementStatus>(wp)
            .files
            .unwrap_or_default();
        let after = decide::after_write(
            member,
            wp.metadata.deletion_timestamp.is_some(),
            &before,
            wp.metadata.generation,
            label(wp, labels::MISPLACED) == Some("true"),
            &written,
        );
        let record = match after {
            After::Release => {
                status::remove_finalizer(rt.cp.as_ref(), &wp_kind, wp, finalizers::WORK_PLACEMENT)
                    .await?;
                continue;
            }
            After::Record(record) => record,
        };
        // As read for this write (or as its pending files were stored): only this controller
        // writes a placement's status, so it is not read again (a conflict reads it).
        let stored = status::update_typed_status_of(
            rt.cp.as_ref(),
            &wp_kind,
            wp,
            "WorkPlacement",
            |s: &mut WorkPlacementStatus| record.apply(s),
        )
        .await?;
        // Its Work hears of the write; the placement itself need not be looked at again for it.
        if let Some(stored) =
            stored.filter(|s| s.metadata.resource_version != wp.metadata.resource_version)
        {
            rt.wrote_own_status(&stored);
        }
        if let Some(message) = record.event(&dest_name) {
            events::record(&rt.cp, wp, Reason::WorkWritten, &message).await;
        }
    }
    Ok(())
}

fn keys(keys: &[Key]) -> BTreeSet<String> {
    keys.iter().map(|k| k.as_str().to_string()).collect()
}

/// Every live placement on the Destination, with the paths it owns: in mode `none` all of them
/// write flat, so placements of other Works count too.
async fn others_on(
    rt: &Runtime,
    dest_name: &str,
) -> Result<Vec<(String, Vec<String>)>, WriteError> {
    let others = rt
        .cp
        .list(
            &builtin(crate::api::Builtin::WorkPlacement),
            None,
            &Selector::from_labels([(labels::TARGET_DESTINATION, dest_name)]),
        )
        .await?;
    Ok(others
        .iter()
        .filter(|o| o.metadata.deletion_timestamp.is_none())
        .map(|o| {
            (
                o.metadata.name.clone().unwrap_or_default(),
                owned_paths(o).into_iter().collect(),
            )
        })
        .collect())
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
