//! The writer: puts WorkPlacements' files into their Destination's state store. All pending
//! placements of one Work on one Destination go into one write (one commit in Git). Ownership is
//! recorded on each placement (`status.files`), and only owned files are ever deleted.

mod batch;
pub(crate) mod commit_message;
pub(crate) mod conditions;
mod deletion;
pub(crate) mod drift;
mod error;
mod files;
mod invalid;
pub(crate) mod layout;
pub(crate) mod plan;
pub(crate) mod retry;
mod summary;
mod write;

use std::collections::BTreeSet;
use std::time::Duration;

use crate::api::destination::StateStoreRef;
use crate::api::destination_paths;
use crate::api::object::label;
use crate::api::state_store::StateStoreStatus;
use crate::api::words::{reasons, types};
use crate::api::{
    condition, finalizers, labels, ConditionStatus, Destination, FilepathMode, Object, ObjectKey,
    WorkPlacement, WorkPlacementSpec, WorkPlacementStatus,
};
use crate::events::{self, Reason};
use crate::platform::builtin;
use crate::store::Selector;

use crate::controllers::placement::conditions::failed_conditions;
use crate::controllers::status;
use crate::controllers::Error;
use crate::controllers::ErrorChain;
use crate::controllers::Next;
use crate::controllers::Runtime;
use error::WriteError;
use write::write_batch;

const RETRY_WRITE: Duration = Duration::from_secs(5);
/// How soon a placement whose Work the Work controller is still changing is looked at again.
const WAIT_FOR_WORK: Duration = Duration::from_millis(50);

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
    let kind = builtin(crate::api::Builtin::WorkPlacement);
    status::update_typed_status(
        rt.cp.as_ref(),
        &kind,
        &ObjectKey::of(wp),
        "WorkPlacement",
        change,
    )
    .await
}

/// Records in the status of `wp`, a placement about to be made for `work` on the Destination
/// `dest_obj`, the paths it will own once written (see [`files::owned_at_creation`]), for it to
/// be made with them (`ControlPlane::create_with_status`). Leaves it without a status when they
/// are left to its first write to record.
pub(crate) async fn own_files_at_creation(
    rt: &Runtime,
    dest_obj: &Object,
    wp: &mut Object,
    work: &Object,
) -> Result<(), Error> {
    let Ok(dest) = crate::api::object::to_typed::<Destination>(dest_obj) else {
        return Ok(());
    };
    // Decided before the store is read, which the other modes do not need.
    if !files::owns_at_creation(&dest) {
        return Ok(());
    }
    let Some(store_ref) = dest.spec.state_store_ref.as_ref() else {
        return Ok(());
    };
    let Some(store_kind) = crate::api::Builtin::state_store(&store_ref.kind) else {
        return Ok(());
    };
    let Some(store) = rt
        .cp
        .get(&builtin(store_kind), None, &store_ref.name)
        .await?
    else {
        return Ok(());
    };
    let store_path = crate::api::state_store::key_prefix(&store);
    let Some(paths) = files::owned_at_creation(&dest, store_path, wp, work) else {
        return Ok(());
    };
    let status = WorkPlacementStatus {
        pending_files: Some(paths),
        ..WorkPlacementStatus::default()
    };
    let status = serde_json::to_value(&status)
        .map_err(|source| Error::malformed(wp, "WorkPlacement", source))?;
    if let Some(map) = wp.data.as_object_mut() {
        map.insert("status".into(), status);
    }
    Ok(())
}

pub(crate) async fn reconcile(rt: &Runtime, wp: Object) -> Result<Next, Error> {
    let deleting = wp.metadata.deletion_timestamp.is_some();
    // Written already: nothing to do, unless its drift check is due.
    let mut drift_check = false;
    if deleting {
        rt.drift.forget(&ObjectKey::of(&wp));
    } else if written_current(&wp) {
        let interval = rt.settings.drift_interval;
        match rt
            .drift
            .decide(&ObjectKey::of(&wp), interval, crate::controllers::now_ms())
        {
            drift::Decision::Off => return Ok(Next::Done),
            drift::Decision::After(delay) => return Ok(Next::After(delay)),
            drift::Decision::Rewrite => drift_check = true,
        }
    }
    let wp_kind = builtin(crate::api::Builtin::WorkPlacement);
    let namespace = wp.metadata.namespace.clone().unwrap_or_default();
    let dest_name = spec_of(&wp)
        .map_err(|source| Error::malformed(&wp, "WorkPlacement", source))?
        .target_destination_name;
    let Some(dest_obj) = rt
        .cp
        .get(&builtin(crate::api::Builtin::Destination), None, &dest_name)
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
    let Some(store_ref) = dest.spec.state_store_ref.clone() else {
        return Ok(Next::Done);
    };
    if deleting && deletion::goes_without_store(seen_deleting(rt, &wp, &dest, &store_ref).await?) {
        status::remove_finalizer(rt.cp.as_ref(), &wp_kind, &wp, finalizers::WORK_PLACEMENT).await?;
        return Ok(Next::Done);
    }
    if !deleting {
        let all = rt.destinations.all(rt).await?;
        if let Some(refused) = destination_paths::refusals(&all).remove(&dest_name) {
            mark_failed(
                rt,
                std::slice::from_ref(&wp),
                refused.reason(),
                &refused.message(),
            )
            .await?;
            // Its Destination's change (admitted, or its path given up by another, which
            // changes its status) wakes it again.
            return Ok(Next::Done);
        }
    }
    let work_name = label(&wp, labels::WORK).unwrap_or_default().to_string();
    let placements = rt
        .cp
        .list(
            &wp_kind,
            Some(&namespace),
            &Selector::from_labels([
                (labels::WORK, work_name.as_str()),
                (labels::TARGET_DESTINATION, dest_name.as_str()),
            ]),
        )
        .await?;
    let batch: Vec<Object> = placements
        .iter()
        .filter(|p| drift_check || p.metadata.deletion_timestamp.is_some() || !written_current(p))
        .cloned()
        .collect();
    if batch.is_empty() {
        return Ok(Next::Done);
    }
    let work = rt
        .cp
        .get(
            &builtin(crate::api::Builtin::Work),
            Some(&namespace),
            &work_name,
        )
        .await?;
    if batch::decide(work.as_ref(), &placements) == batch::Batch::Wait {
        return Ok(Next::After(WAIT_FOR_WORK));
    }
    let handle = match rt
        .state_stores
        .get(rt, &store_ref.kind, &store_ref.name)
        .await?
    {
        Ok(h) => h,
        Err(not_ready) => {
            mark_failed(
                rt,
                &batch,
                reasons::STATE_STORE_NOT_READY,
                &not_ready.message,
            )
            .await?;
            return Ok(Next::After(RETRY_WRITE));
        }
    };
    match write_batch(rt, &handle, &dest, &dest_obj, work.as_ref(), &batch).await {
        Ok(()) => {
            let keys: Vec<ObjectKey> = batch.iter().map(ObjectKey::of).collect();
            rt.drift.checked(&keys, crate::controllers::now_ms());
            if drift_check {
                tracing::debug!(placement = %ObjectKey::of(&wp), "state store checked for drift");
            }
            Ok(rt.settings.drift_interval.map_or(Next::Done, Next::After))
        }
        Err(WriteError::Store(e)) => {
            let retry = retry::retry_after(
                &e,
                retry::failing_for(&wp, crate::controllers::now_ms()),
                rt.settings.write_retry_max,
            );
            let message = ErrorChain(&e).to_string();
            mark_failed(rt, &batch, "WorkloadsFailedWrite", &message).await?;
            Ok(Next::After(retry))
        }
        Err(WriteError::Invalid(invalid)) => {
            mark_failed(rt, &batch, "InvalidWorkloads", &invalid.reason()).await?;
            Ok(Next::Done)
        }
        Err(WriteError::Controller(e)) => Err(e),
    }
}

/// What decides whether a placement being deleted can go without its state store.
async fn seen_deleting(
    rt: &Runtime,
    wp: &Object,
    dest: &Destination,
    store_ref: &StateStoreRef,
) -> Result<deletion::Seen, Error> {
    let own = status::status_or_default::<WorkPlacementStatus>(wp);
    let mode = dest.spec.filepath_mode();
    let shared_file_written = mode == FilepathMode::AggregatedYaml && {
        let dest_name = dest.metadata.name.as_deref().unwrap_or_default();
        rt.cp
            .list(
                &builtin(crate::api::Builtin::WorkPlacement),
                None,
                &Selector::from_labels([(labels::TARGET_DESTINATION, dest_name)]),
            )
            .await?
            .iter()
            .any(|other| {
                status::status_or_default::<WorkPlacementStatus>(other)
                    .files
                    .is_some()
            })
    };
    let store_ready = match crate::api::Builtin::state_store(&store_ref.kind) {
        Some(kind) => rt
            .cp
            .get(&builtin(kind), None, &store_ref.name)
            .await?
            .map(|store| status::status_or_default::<StateStoreStatus>(&store))
            .is_some_and(|s| condition::is_true(&s.conditions, types::READY)),
        None => false,
    };
    let failed = condition::find(&own.conditions, types::WRITE_SUCCEEDED)
        .is_some_and(|c| c.status == ConditionStatus::False);
    Ok(deletion::Seen {
        owns_nothing: own.owned_paths().is_empty(),
        ever_written: own.files.is_some(),
        mode,
        shared_file_written,
        store_ready,
        last_write_failed: failed,
    })
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
