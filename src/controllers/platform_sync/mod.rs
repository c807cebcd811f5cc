//! The platform Destination: a Destination annotated `kratix-rs.io/apply-to-platform: "true"`
//! is written as any other, and what is written for it is also applied back into this
//! platform's own control plane, as Flux's two Kustomizations (`dependencies`, then `resources`,
//! `prune: true`) do on Kratix's platform cluster. A sync reads the Destination's folder from
//! its store at one revision, through the same reader the writer uses, admits every document
//! as `apply` does (the same checks, defaults and three-way merge), waits for kinds not served
//! yet, prunes what left the store and never touches what it did not apply. Deleting the
//! Destination with `cleanup: all` prunes everything it applied (`deletion`).
//!
//! Observe (`read`, the inventory in the Destination's status, the control plane), decide
//! (`decide`, pure), act (`act`). It runs in the Destination's reconcile, woken by its
//! placements' writes and every `KRATIX_PLATFORM_SYNC_INTERVAL`; one Destination is never
//! reconciled twice at once, so nothing is applied twice concurrently, and the placements'
//! writer never waits for it.

mod act;
pub(crate) mod budget;
pub(crate) mod decide;
mod deletion;
mod entry;
mod read;

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use statestores::Key;

use crate::admission::documents::{Document, Limits};
use crate::api::destination::FilepathMode;
use crate::api::{labels, Destination, KindInfo, Object, ObjectKey, GROUP};
use crate::controllers::placement::layout;
use crate::controllers::{destination, status, Error, Next, Runtime};
use crate::platform::builtin;
use decide::{Counts, Entry, Live, Observed, Seen, Served};

/// How soon a sync with documents waiting for their kind looks again.
const WAITING_RETRY: Duration = Duration::from_secs(1);

/// Whether `obj` is a Destination applied back into this platform.
pub(crate) fn applies_to_platform(obj: &Object) -> bool {
    crate::api::object::annotation(obj, labels::APPLY_TO_PLATFORM)
        .is_some_and(|v| v.trim() == "true")
}

/// What the Destination's status records of its last sync (`status.platformSync`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SyncStatus {
    /// The store's version the sync read: a commit, or a hash of the bucket's objects.
    #[serde(default)]
    pub(crate) revision: String,
    #[serde(flatten)]
    pub(crate) counts: Counts,
    /// Every object this Destination's sync applied and has not pruned.
    #[serde(default)]
    pub(crate) inventory: Vec<Entry>,
    /// The objects the sync changed in their current window (see [`budget`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) churn: Vec<budget::Churn>,
}

/// The field of the Destination's status the sync owns.
const STATUS_FIELD: &str = "platformSync";

/// Reconciles a Destination: as any Destination, then, for a platform Destination, its sync, or
/// while it is deleted the prune of what it applied; it is looked at again as soon as either
/// asks.
pub(crate) async fn reconcile_destination(rt: &Runtime, obj: Object) -> Result<Next, Error> {
    if !applies_to_platform(&obj) {
        return destination::reconcile(rt, obj).await;
    }
    let dest: Destination = crate::api::object::to_typed(&obj)
        .map_err(|source| Error::malformed(&obj, "Destination", source))?;
    if obj.metadata.deletion_timestamp.is_some() {
        if !prune_on_deletion(rt, &obj, &dest).await? {
            return Ok(Next::After(rt.settings.platform_sync_interval));
        }
        return destination::reconcile(rt, obj).await;
    }
    let registered = destination::reconcile(rt, obj.clone()).await?;
    let synced = reconcile(rt, &obj, &dest).await?;
    Ok(match (registered, synced) {
        (Next::Done, next) | (next, Next::Done) => next,
        (Next::After(a), Next::After(b)) => Next::After(a.min(b)),
    })
}

/// Prunes what the syncs of a platform Destination being deleted applied, if it says
/// `cleanup: all` (see [`deletion`]); true once nothing is left to prune, so that it may go.
async fn prune_on_deletion(rt: &Runtime, obj: &Object, dest: &Destination) -> Result<bool, Error> {
    let previous = sync_status(obj).unwrap_or_default();
    let entries = deletion::to_prune(dest.spec.cleanup_all(), &previous.inventory);
    if entries.is_empty() {
        return Ok(true);
    }
    let name = obj.metadata.name.clone().unwrap_or_default();
    let pruned = act::prune_all(rt, &name, &entries).await;
    act::record_deletion(rt, obj, &previous, &pruned).await?;
    Ok(pruned.kept.is_empty())
}

/// Syncs a platform Destination `obj` (see the module's documentation).
async fn reconcile(rt: &Runtime, obj: &Object, dest: &Destination) -> Result<Next, Error> {
    let interval = rt.settings.platform_sync_interval;
    let Some(store_ref) = dest.spec.state_store_ref.as_ref() else {
        return Ok(Next::Done);
    };
    // A store that is not ready shows on the Destination's `Ready`; look again later.
    let Ok(handle) = rt
        .state_stores
        .get(rt, &store_ref.kind, &store_ref.name)
        .await?
    else {
        return Ok(Next::After(interval));
    };
    let root_path = layout::destination_root(handle.path.as_deref(), &dest.spec.path);
    let root = Key::parse(&root_path).map_err(|source| destination::error::Error::InvalidPath {
        key: ObjectKey::of(obj),
        source,
    })?;
    let snapshot = match handle.store.snapshot(&root).await {
        Ok(snapshot) => snapshot,
        Err(e) => {
            let message = format!(
                "reading {root_path}: {}",
                crate::controllers::ErrorChain(&e)
            );
            act::record_unreadable_store(rt, obj, &message).await?;
            return Ok(Next::After(interval));
        }
    };
    let nested = dest.spec.filepath_mode() == FilepathMode::NestedByMetadata;
    let limits = Limits::from_env().unwrap_or_default();
    let folder = read::documents(snapshot, &root, nested, &limits);
    let name = obj.metadata.name.clone().unwrap_or_default();
    let previous = sync_status(obj).unwrap_or_default();
    let promises = rt.platform.promises().await?;
    let kinds = crate::api::promise_api::all_kinds(&promises);
    let mut seen = Vec::with_capacity(folder.documents.len());
    for doc in &folder.documents {
        seen.push(observe(rt, &name, doc, &kinds, &promises).await?);
    }
    let observed = Observed {
        documents: seen,
        unreadable: folder.unreadable.clone(),
        inventory: previous.inventory.clone(),
        max_objects: rt.settings.platform_sync_max_objects,
        budget: rt.settings.platform_sync_budget,
        churn: previous.churn.clone(),
        now_ms: crate::controllers::kube_time::now_ms(),
    };
    let plan = decide::plan(&observed);
    let done = act::carry_out(rt, &name, &folder, &observed, &plan).await?;
    let waiting = done.counts.waiting > 0;
    act::record(rt, obj, &folder, &observed, &done, &previous).await?;
    Ok(Next::After(if waiting { WAITING_RETRY } else { interval }))
}

/// What the control plane says of one document: whether its kind is served, and who holds an
/// object of its name.
async fn observe(
    rt: &Runtime,
    destination: &str,
    doc: &Document,
    kinds: &[KindInfo],
    promises: &[Object],
) -> Result<Seen, Error> {
    let api_version = doc.api_version().to_string();
    let kind_name = doc.kind();
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    let kind = kinds
        .iter()
        .find(|k| k.kind == kind_name && k.api_version() == api_version);
    let given_ns = doc
        .value
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty());
    let namespace = match kind {
        Some(k) if !k.namespaced => None,
        _ => Some(given_ns.unwrap_or("default").to_string()),
    };
    let entry = Entry {
        api_version: api_version.clone(),
        kind: kind_name.to_string(),
        namespace,
        name: doc.name().to_string(),
    };
    let served = match kind {
        Some(k) if k.group == GROUP || k.group.is_empty() => Served::Yes,
        Some(k) => match crate::platform::promise_defining(promises, k) {
            Some(p) if crate::api::promise::is_available(p) => Served::Yes,
            Some(p) => Served::Waiting(format!(
                "kind {kind_name} waits for Promise {} to be Available",
                p.metadata.name.as_deref().unwrap_or_default()
            )),
            None => Served::Waiting(format!("no Promise defines kind {kind_name} yet")),
        },
        None if group == GROUP || decide::is_cluster_group(group) => Served::NotHere,
        None => Served::Waiting(format!(
            "no Promise defines kind {kind_name} ({api_version}) yet"
        )),
    };
    let live = match kind {
        None => Live::Absent,
        Some(k) => match rt
            .cp
            .get(k, entry.namespace.as_deref(), &entry.name)
            .await?
        {
            None => Live::Absent,
            Some(live) => match crate::api::object::label(&live, labels::PLATFORM_DESTINATION) {
                Some(d) if d == destination => Live::Ours,
                other => Live::Foreign(other.map(str::to_string)),
            },
        },
    };
    Ok(Seen {
        document: doc.to_string(),
        entry,
        served,
        live,
    })
}

/// `doc` as the sync applies it: labelled with the Destination it came from.
fn labelled(doc: &Document, destination: &str) -> Document {
    let mut doc = doc.clone();
    if let Some(metadata) = doc.value.get_mut("metadata").and_then(Value::as_object_mut) {
        let labels = metadata.entry("labels").or_insert_with(|| json!({}));
        if let Some(labels) = labels.as_object_mut() {
            labels.insert(labels::PLATFORM_DESTINATION.into(), json!(destination));
        }
    }
    doc
}

/// The inventory entry's object key, for the controllers' kind lookups.
fn key_of(entry: &Entry) -> ObjectKey {
    ObjectKey::new(
        entry.group(),
        &entry.kind,
        entry.namespace.as_deref(),
        &entry.name,
    )
}

/// The sync's part of a Destination's status, as the last sync wrote it.
fn sync_status(obj: &Object) -> Option<SyncStatus> {
    obj.data
        .pointer(&format!("/status/{STATUS_FIELD}"))
        .and_then(|v| serde_json::from_value(v.clone()).ok())
}

/// Writes the sync's part of the Destination's status.
async fn write_status(
    rt: &Runtime,
    obj: &Object,
    sync: Option<&SyncStatus>,
    condition: crate::api::Condition,
) -> Result<(), Error> {
    let kind = builtin(crate::api::Builtin::Destination);
    let sync = sync
        .map(serde_json::to_value)
        .transpose()
        .map_err(|source| Error::malformed(obj, "Destination (its platformSync status)", source))?;
    let stored = status::update_status(rt.cp.as_ref(), &kind, &ObjectKey::of(obj), |_, s| {
        status::set_conditions(s, [condition.clone()]);
        if let Some(sync) = &sync {
            status::set_field(s, STATUS_FIELD, sync.clone());
        }
    })
    .await?;
    if let Some(stored) = stored {
        rt.wrote_own_status(&stored);
    }
    Ok(())
}
