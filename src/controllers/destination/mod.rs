//! Destinations: canary files at registration, `Ready` from the state store, and on
//! deregistration the removal of every placement's files before the Destination goes.

pub(crate) mod error;

use bytes::Bytes;
use statestores::{Change, Key, WriteInfo};

use crate::api::destination::StatusWithConditions;
use crate::api::destination_paths::{self, PathRefusal};
use crate::api::state_store::StateStoreStatus;
use crate::api::words::types;
use crate::api::{
    condition, finalizers, labels, Condition, ConditionStatus, Destination, Object, ObjectKey,
};
use crate::controllers::placement::layout;
use crate::events::{self, Reason};
use crate::platform::builtin;
use crate::store::Selector;

use crate::controllers::placement::commit_message::canary_message;
use crate::controllers::state_store::readiness::destination_ready;
use crate::controllers::state_store::readiness::destination_settled;
use crate::controllers::state_store::readiness::mirrored_store_failure;
use crate::controllers::state_store::readiness::CanaryWrite;
use crate::controllers::state_store::readiness::DestinationSeen;
use crate::controllers::status;
use crate::controllers::work;
use crate::controllers::Error;
use crate::controllers::ErrorChain;
use crate::controllers::Next;
use crate::controllers::Runtime;

/// Destinations writing to a state store.
pub(crate) async fn using_store(
    rt: &Runtime,
    kind: &str,
    name: &str,
) -> Result<Vec<ObjectKey>, Error> {
    Ok(rt
        .cp
        .list(
            &builtin(crate::api::Builtin::Destination),
            None,
            &Selector::everything(),
        )
        .await?
        .iter()
        .filter(|d| {
            crate::api::object::to_typed::<Destination>(d).is_ok_and(|d| {
                d.spec
                    .state_store_ref
                    .is_some_and(|r| r.kind == kind && r.name == name)
            })
        })
        .map(ObjectKey::of)
        .collect())
}

fn typed(obj: &Object) -> Result<Destination, Error> {
    crate::api::object::to_typed(obj).map_err(|source| Error::malformed(obj, "Destination", source))
}

fn canary_changes(
    dest: &Destination,
    store_path: Option<&str>,
    put: bool,
) -> Result<Vec<Change>, Error> {
    layout::canary_files(&dest.spec.path, store_path, dest.spec.filepath_mode())
        .into_iter()
        .map(|(path, bytes)| {
            let key = Key::parse(&path).map_err(|source| error::Error::InvalidPath {
                key: ObjectKey::new(
                    crate::api::GROUP,
                    "Destination",
                    None,
                    dest.metadata.name.as_deref().unwrap_or_default(),
                ),
                source,
            })?;
            Ok(if put {
                Change::Put(key, Bytes::from(bytes))
            } else {
                Change::Delete(key)
            })
        })
        .collect()
}

fn canary_info(dest_name: &str, subject: &str, author: (&str, &str)) -> WriteInfo {
    WriteInfo {
        message: canary_message(dest_name, subject),
        author_name: author.0.to_string(),
        author_email: author.1.to_string(),
    }
}

pub(crate) async fn reconcile(rt: &Runtime, obj: Object) -> Result<Next, Error> {
    let kind = builtin(crate::api::Builtin::Destination);
    let dest = typed(&obj)?;
    let key = ObjectKey::of(&obj);
    let name = key.name.clone();
    let Some(store_ref) = dest.spec.state_store_ref.clone() else {
        return Ok(Next::Done);
    };
    if obj.metadata.deletion_timestamp.is_some() {
        return deregister(rt, &obj, &dest).await;
    }
    // No webhook may have checked it (on Kubernetes): one without a path, or on a path another
    // holds, gets no canary and no placement (the scheduler and the writer skip it too).
    let all = rt.destinations.all(rt).await?;
    if let Some(refused) = destination_paths::refusals(&all).remove(&name) {
        refuse(rt, &obj, &refused).await?;
        // A change of any Destination (the holder going, this one's path) wakes it again.
        return Ok(Next::Done);
    }
    // A Destination is only as ready as its store: mirror a store that stopped being ready.
    let store_ready = match crate::api::Builtin::state_store(&store_ref.kind) {
        Some(store_kind) => rt
            .cp
            .get(&builtin(store_kind), None, &store_ref.name)
            .await?
            .map(|store| status::status_or_default::<StateStoreStatus>(&store))
            .and_then(|s| condition::find(&s.conditions, types::READY).cloned()),
        None => None,
    };
    if let Some(ready) = mirrored_store_failure(&store_ref, store_ready.as_ref()) {
        set_ready(rt, &obj, ready).await?;
        // The store's recovery wakes this Destination again.
        return Ok(Next::Done);
    }
    let own: StatusWithConditions = status::status_or_default(&obj);
    if destination_settled(DestinationSeen {
        store_ready: store_ready.as_ref().is_some_and(Condition::is_true),
        destination_ready: condition::is_true(&own.conditions, types::READY),
        observed_current: own.observed_generation == obj.metadata.generation,
        has_finalizer: status::has_finalizer(&obj, finalizers::DESTINATION),
    }) {
        return Ok(Next::Done);
    }
    let Some(obj) =
        status::add_finalizer(rt.cp.as_ref(), &kind, &obj, finalizers::DESTINATION).await?
    else {
        return Ok(Next::Done);
    };
    let ready = match rt
        .state_stores
        .get(rt, &store_ref.kind, &store_ref.name)
        .await?
    {
        Err(not_ready) => destination_ready(CanaryWrite::StoreUnavailable {
            reason: not_ready.reason,
            message: &not_ready.message,
        }),
        Ok(handle) => {
            let enabled = dest.spec.init_workloads_enabled();
            let changes = canary_changes(&dest, handle.path.as_deref(), enabled)?;
            let info = canary_info(
                &name,
                if enabled {
                    "Update from"
                } else {
                    "Delete from"
                },
                (&handle.author_name, &handle.author_email),
            );
            match handle.store.write(&changes, &info).await {
                Ok(_) => destination_ready(CanaryWrite::Done { enabled }),
                Err(e) => destination_ready(CanaryWrite::Failed {
                    error: &ErrorChain(&e).to_string(),
                }),
            }
        }
    };
    let next = if ready.status == ConditionStatus::True {
        Next::Done
    } else {
        Next::After(RETRY_NOT_READY)
    };
    set_ready(rt, &obj, ready).await?;
    Ok(next)
}

/// How soon a Destination that is not ready is looked at again.
const RETRY_NOT_READY: std::time::Duration = std::time::Duration::from_secs(5);

/// Records why the Destination may not write, on its `Ready` condition and, when that changes,
/// in a Warning event.
async fn refuse(rt: &Runtime, obj: &Object, refused: &PathRefusal) -> Result<(), Error> {
    let ready = not_admitted(refused);
    let own: StatusWithConditions = status::status_or_default(obj);
    let recorded = condition::find(&own.conditions, types::READY).is_some_and(|c| {
        c.status == ready.status && c.reason == ready.reason && c.message == ready.message
    });
    if recorded && own.observed_generation == obj.metadata.generation {
        return Ok(());
    }
    set_ready(rt, obj, ready).await?;
    if !recorded {
        let reason = match refused {
            PathRefusal::Required => Reason::PathRequired,
            PathRefusal::InUse { .. } => Reason::PathInUse,
        };
        events::record(&rt.cp, obj, reason, &refused.message()).await;
    }
    Ok(())
}

/// The `Ready` condition of a Destination that may not write.
fn not_admitted(refused: &PathRefusal) -> Condition {
    Condition::new(
        types::READY,
        ConditionStatus::False,
        refused.reason(),
        &format!(
            "{}; nothing is written for this Destination",
            refused.message()
        ),
    )
}

/// Records the Destination's `Ready` condition for its current generation.
async fn set_ready(rt: &Runtime, obj: &Object, ready: Condition) -> Result<(), Error> {
    let kind = builtin(crate::api::Builtin::Destination);
    let generation = obj.metadata.generation;
    status::update_typed_status(
        rt.cp.as_ref(),
        &kind,
        &ObjectKey::of(obj),
        "Destination",
        |s: &mut StatusWithConditions| {
            status::merge_conditions(&mut s.conditions, [ready.clone()]);
            s.observed_generation = generation;
        },
    )
    .await?;
    Ok(())
}

/// Removes every placement on the Destination (their finalizers delete their files), then the
/// canary files, then lets the Destination go. Unless `cleanup: all`, files are left in place.
async fn deregister(rt: &Runtime, obj: &Object, dest: &Destination) -> Result<Next, Error> {
    let kind = builtin(crate::api::Builtin::Destination);
    let name = obj.metadata.name.clone().unwrap_or_default();
    let keep_files = !dest.spec.cleanup_all();
    let wp_kind = builtin(crate::api::Builtin::WorkPlacement);
    let placements = rt
        .cp
        .list(
            &wp_kind,
            None,
            &Selector::from_labels([(labels::TARGET_DESTINATION, name.as_str())]),
        )
        .await?;
    if !placements.is_empty() {
        for wp in &placements {
            if keep_files {
                status::remove_finalizer(rt.cp.as_ref(), &wp_kind, wp, finalizers::WORK_PLACEMENT)
                    .await?;
            }
            work::remove_with_reason(rt, &wp_kind, wp, "delete").await?;
        }
        // Each placement's deletion wakes this Destination again.
        return Ok(Next::Done);
    }
    // Canary files are removed through a store that works: a Destination that is not `Ready`
    // (its store unreachable or refusing it, its path refused) goes without waiting for it.
    let own: StatusWithConditions = status::status_or_default(obj);
    let ready = condition::is_true(&own.conditions, types::READY);
    if !keep_files && dest.spec.init_workloads_enabled() && !ready {
        tracing::warn!(destination = %name, "not ready: its canary files, if any, are left in the state store");
    }
    if !keep_files && dest.spec.init_workloads_enabled() && ready {
        if let Some(store_ref) = &dest.spec.state_store_ref {
            if let Ok(handle) = rt
                .state_stores
                .get(rt, &store_ref.kind, &store_ref.name)
                .await?
            {
                let changes = canary_changes(dest, handle.path.as_deref(), false)?;
                let info = canary_info(
                    &name,
                    "Delete from",
                    (&handle.author_name, &handle.author_email),
                );
                if let Err(e) = handle.store.write(&changes, &info).await {
                    tracing::warn!(destination = %name, error = %ErrorChain(&e), "removing canary files failed; retrying");
                    return Ok(Next::After(RETRY_NOT_READY));
                }
            }
        }
    }
    status::remove_finalizer(rt.cp.as_ref(), &kind, obj, finalizers::DESTINATION).await?;
    Ok(Next::Done)
}
