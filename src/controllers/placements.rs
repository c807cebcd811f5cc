//! The writer: puts WorkPlacements' files into their Destination's state store. All pending
//! placements of one Work on one Destination go into one write (one commit in Git). Ownership is
//! recorded on each placement (`status.files`), and only owned files are ever deleted.

use std::collections::BTreeSet;
use std::time::Duration;

use bytes::Bytes;
use statestores::{Change, Key, WriteInfo};

use crate::api::object::label;
use crate::api::{
    finalizers, labels, Destination, FilepathMode, Object, ObjectKey, WorkPlacement,
    WorkPlacementSpec, WorkPlacementStatus,
};
use crate::store::Selector;
use crate::writer::layout::{self, FileBytes, PlacementContext, PlacementFiles};
use crate::writer::plan;

use super::commit_message::{
    generation_and_annotations, placement_message, ObjectMeta, PlacementWrite,
};
use super::metrics::{WorkRef, WriteResult};
use super::placement_conditions::{failed_conditions, written_conditions};
use super::state_stores::StoreHandle;
use super::write_summary::LastWrite;
use super::{drift, status, write_retry, Error, ErrorChain, Next, Runtime};
use crate::events::{self, Reason};

const RETRY_WRITE: Duration = Duration::from_secs(5);

fn spec_of(wp: &Object) -> Result<WorkPlacementSpec, serde_json::Error> {
    crate::api::object::to_typed::<WorkPlacement>(wp).map(|typed| typed.spec)
}

/// Written for its current generation: nothing to do until it changes.
fn written_current(wp: &Object) -> bool {
    status::status_or_default::<WorkPlacementStatus>(wp).written_for(wp.metadata.generation)
}

fn owned_paths(wp: &Object) -> BTreeSet<String> {
    status::status_or_default::<WorkPlacementStatus>(wp).owned_paths()
}

/// Changes a placement's status and writes it if anything changed.
async fn update_wp_status(
    rt: &Runtime,
    wp: &Object,
    change: impl FnMut(&mut WorkPlacementStatus),
) -> Result<Option<Object>, Error> {
    let kind = rt.kind(crate::api::Builtin::WorkPlacement);
    status::update_typed_status(
        rt.cp.as_ref(),
        &kind,
        &ObjectKey::of(wp),
        "WorkPlacement",
        change,
    )
    .await
}

pub async fn reconcile(rt: &Runtime, wp: Object) -> Result<Next, Error> {
    let deleting = wp.metadata.deletion_timestamp.is_some();
    // Written already: nothing to do, unless its drift check is due.
    let mut drift_check = false;
    if deleting {
        rt.drift.forget(&ObjectKey::of(&wp));
    } else if written_current(&wp) {
        let interval = rt.settings.drift_interval;
        match rt
            .drift
            .decide(&ObjectKey::of(&wp), interval, super::now_ms())
        {
            drift::Decision::Off => return Ok(Next::Done),
            drift::Decision::After(delay) => return Ok(Next::After(delay)),
            drift::Decision::Rewrite => drift_check = true,
        }
    }
    let wp_kind = rt.kind(crate::api::Builtin::WorkPlacement);
    let namespace = wp.metadata.namespace.clone().unwrap_or_default();
    let dest_name = spec_of(&wp)
        .map_err(|source| Error::malformed(&wp, "WorkPlacement", source))?
        .target_destination_name;
    let Some(dest_obj) = rt
        .cp
        .get(&rt.kind(crate::api::Builtin::Destination), None, &dest_name)
        .await?
    else {
        if deleting {
            // The Destination is gone, and with it any way to reach its files.
            status::remove_finalizer(rt.cp.as_ref(), &wp_kind, &wp, finalizers::WORK_PLACEMENT)
                .await?;
        } else {
            mark_failed(
                rt,
                std::slice::from_ref(&wp),
                "DestinationNotFound",
                &format!("Destination {dest_name:?} not found"),
            )
            .await?;
        }
        return Ok(Next::Done);
    };
    let dest: Destination = crate::api::object::to_typed(&dest_obj)
        .map_err(|source| Error::malformed(&dest_obj, "Destination", source))?;
    // Nothing of it was ever written (or about to be): it can go without the store, even one
    // that is unreachable. In mode aggregatedYAML its content lives in the shared file instead.
    if deleting
        && owned_paths(&wp).is_empty()
        && dest.spec.filepath_mode() != FilepathMode::AggregatedYaml
    {
        status::remove_finalizer(rt.cp.as_ref(), &wp_kind, &wp, finalizers::WORK_PLACEMENT).await?;
        return Ok(Next::Done);
    }
    let Some(store_ref) = dest.spec.state_store_ref.clone() else {
        return Ok(Next::Done);
    };
    let work_name = label(&wp, labels::WORK).unwrap_or_default().to_string();
    let batch: Vec<Object> = rt
        .cp
        .list(
            &wp_kind,
            Some(&namespace),
            &Selector::from_labels([
                (labels::WORK, work_name.as_str()),
                (labels::TARGET_DESTINATION, dest_name.as_str()),
            ]),
        )
        .await?
        .into_iter()
        .filter(|p| drift_check || p.metadata.deletion_timestamp.is_some() || !written_current(p))
        .collect();
    if batch.is_empty() {
        return Ok(Next::Done);
    }
    let handle = match rt
        .state_stores
        .get(rt, &store_ref.kind, &store_ref.name)
        .await?
    {
        Ok(h) => h,
        Err(not_ready) => {
            mark_failed(rt, &batch, "StateStoreNotReady", &not_ready.message).await?;
            return Ok(Next::After(RETRY_WRITE));
        }
    };
    let work = rt
        .cp
        .get(
            &rt.kind(crate::api::Builtin::Work),
            Some(&namespace),
            &work_name,
        )
        .await?;
    match write_batch(rt, &handle, &dest, &dest_obj, work.as_ref(), &batch).await {
        Ok(()) => {
            let keys: Vec<ObjectKey> = batch.iter().map(ObjectKey::of).collect();
            rt.drift.checked(&keys, super::now_ms());
            if drift_check {
                tracing::debug!(placement = %ObjectKey::of(&wp), "state store checked for drift");
            }
            Ok(rt.settings.drift_interval.map_or(Next::Done, Next::After))
        }
        Err(WriteError::Store(e)) => {
            let retry = write_retry::retry_after(
                &e,
                write_retry::failing_for(&wp, super::now_ms()),
                rt.settings.write_retry_max,
            );
            let message = ErrorChain(&e).to_string();
            mark_failed(rt, &batch, "WorkloadsFailedWrite", &message).await?;
            Ok(Next::After(retry))
        }
        Err(WriteError::Invalid(reason)) => {
            mark_failed(rt, &batch, "InvalidWorkloads", &reason).await?;
            Ok(Next::Done)
        }
        Err(WriteError::Controller(e)) => Err(e),
    }
}

enum WriteError {
    Store(statestores::Error),
    Invalid(String),
    Controller(Error),
}

impl From<Error> for WriteError {
    fn from(e: Error) -> Self {
        Self::Controller(e)
    }
}

fn context(
    dest: &Destination,
    handle: &StoreHandle,
    wp: &Object,
    spec: &WorkPlacementSpec,
    work: Option<&Object>,
) -> PlacementContext {
    let is_static = work.and_then(|w| label(w, labels::WORK_TYPE)) == Some("static-dependency");
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

fn decode(spec: &WorkPlacementSpec) -> Result<PlacementFiles, WriteError> {
    PlacementFiles::decode(&spec.workloads)
        .map_err(|e| WriteError::Invalid(ErrorChain(&e).to_string()))
}

/// The files one placement should have in the store (none when it is being deleted).
fn desired_files(
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
        .map_err(|e| WriteError::Invalid(ErrorChain(&e).to_string()))?;
        desired.push(state);
    }
    Ok(desired)
}

async fn write_batch(
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
        let spec = spec_of(wp).map_err(|e| WriteError::Invalid(e.to_string()))?;
        let ctx = context(dest, handle, wp, &spec, work);
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
            .await
            .map_err(|e| WriteError::Controller(e.into()))?;
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
    plan::check_collisions(&claims).map_err(|e| WriteError::Invalid(e.to_string()))?;
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
        let key = Key::parse(path).map_err(|e| WriteError::Invalid(e.to_string()))?;
        changes.push(Change::Put(key, Bytes::from(bytes.clone())));
    }
    for path in &planned.deletes {
        let key = Key::parse(path).map_err(|e| WriteError::Invalid(e.to_string()))?;
        changes.push(Change::Delete(key));
    }
    let first = spec_of(&batch[0]).map_err(|e| WriteError::Invalid(e.to_string()))?;
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

/// Mode `aggregatedYAML`: the Destination's one file, from every live placement on it; `None`
/// when no placement is left (the file is then deleted).
async fn aggregated(
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
        .await
        .map_err(|e| WriteError::Controller(e.into()))?;
    let mut placements = Vec::new();
    for wp in all
        .iter()
        .filter(|w| w.metadata.deletion_timestamp.is_none())
    {
        placements.push((
            wp.metadata.name.clone().unwrap_or_default(),
            decode(&spec_of(wp).map_err(|e| WriteError::Invalid(e.to_string()))?)?.workloads,
        ));
    }
    if placements.is_empty() {
        return Ok((path, None));
    }
    Ok((path, Some(layout::aggregated_yaml(&placements))))
}

/// The Work of a placement, as the metrics of the pipeline that made it name it.
fn work_ref(wp: &Object, spec: &WorkPlacementSpec) -> WorkRef {
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
fn request_of<'a>(wp: &'a Object, spec: &'a WorkPlacementSpec) -> Option<(&'a str, &'a str)> {
    let resource = spec.resource_name.as_str();
    let namespace = wp.metadata.namespace.as_deref().unwrap_or_default();
    (!resource.is_empty()).then_some((namespace, resource))
}

/// The commit of one write: what it is for, and who writes it.
fn write_info(
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
        work_type: work.and_then(|w| label(w, labels::WORK_TYPE)),
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

async fn mark_failed(
    rt: &Runtime,
    placements: &[Object],
    reason: &str,
    message: &str,
) -> Result<(), Error> {
    for wp in placements {
        update_wp_status(rt, wp, |s| {
            status::merge_conditions(&mut s.conditions, failed_conditions(reason, message));
        })
        .await?;
        events::record(
            &rt.cp,
            wp,
            Reason::WriteFailed,
            &format!("{reason}: {message}"),
        )
        .await;
    }
    Ok(())
}

/// `WorkWritten`'s message: where, which commit, and how many files changed.
fn written_message(destination: &str, last: &LastWrite) -> String {
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
