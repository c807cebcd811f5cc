//! Carrying out a sync's plan: documents admitted and stored as `apply` stores them, objects
//! whose documents left the store deleted (their delete workflows run as for any delete), and
//! the outcome recorded on the Destination (condition, counts, inventory), in events and in
//! the metrics.

use crate::admission::{self, Known};
use crate::api::words::{reasons, types};
use crate::api::{labels, ConditionStatus, Object};
use crate::controllers::{Error, Runtime};
use crate::events::Reason;
use crate::metrics::SyncOutcome;

use super::budget::{self, Churn};
use super::decide::{self, Counts, Entry, Live, Observed, Outcome, Plan, Refusal, Verdict};
use super::deletion;
use super::read::Folder;
use super::{key_of, labelled, write_status, SyncStatus};

/// What a sync did.
#[derive(Debug, Default)]
pub(super) struct Done {
    /// Each document and how it ended, in order.
    pub(super) outcomes: Vec<(String, Outcome)>,
    pub(super) counts: Counts,
    /// What the sync applied and keeps: the next sync's inventory.
    pub(super) inventory: Vec<Entry>,
    /// Objects that could not be pruned, and why.
    pub(super) prune_failures: Vec<String>,
    /// Objects created or changed, and objects pruned, for the events.
    pub(super) changed: Vec<String>,
    pub(super) pruned: Vec<String>,
    /// The objects changed in their current window: the next sync's churn.
    pub(super) churn: Vec<Churn>,
}

/// Applies what the plan applies, in order, then prunes.
pub(super) async fn carry_out(
    rt: &Runtime,
    destination: &str,
    folder: &Folder,
    observed: &Observed,
    plan: &Plan,
) -> Result<Done, Error> {
    let known = Known::load(&rt.platform, rt.settings.intervals.minimum).await?;
    let mut done = Done::default();
    let mut counted: Vec<&Entry> = Vec::new();
    let documents = folder.documents.iter().zip(&observed.documents);
    for ((doc, seen), verdict) in documents.zip(&plan.verdicts) {
        let outcome = match verdict {
            Verdict::Wait(why) => Outcome::Waiting(why.clone()),
            Verdict::Refuse(refusal, why) => Outcome::Failed(*refusal, why.clone()),
            Verdict::Apply => admit(rt, &known, &labelled(doc, destination)).await?,
        };
        let keep = match &outcome {
            Outcome::Applied | Outcome::Unchanged => true,
            // Still in the store: what it applied before stays until the document goes.
            Outcome::Waiting(_) | Outcome::Failed(..) => seen.live == Live::Ours,
        };
        if keep {
            done.inventory.push(seen.entry.clone());
        }
        // A second document of one object is refused: the first tells whether it changed.
        if !counted.contains(&&seen.entry) {
            counted.push(&seen.entry);
            let churn = observed.churn.iter().find(|c| c.entry == seen.entry);
            done.churn.extend(budget::after(
                churn,
                &seen.entry,
                outcome == Outcome::Applied,
                observed.now_ms,
                observed.budget,
            ));
        }
        match &outcome {
            Outcome::Applied => {
                done.counts.applied += 1;
                done.changed.push(seen.entry.to_string());
            }
            Outcome::Unchanged => done.counts.applied += 1,
            Outcome::Waiting(_) => done.counts.waiting += 1,
            Outcome::Failed(..) => done.counts.failed += 1,
        }
        done.outcomes.push((seen.document.clone(), outcome));
    }
    done.counts.failed += folder.unreadable.len();
    let pruned = prune_all(rt, destination, &plan.prune).await;
    done.counts.pruned += pruned.pruned.len();
    done.pruned = pruned.pruned;
    done.prune_failures = pruned.failures;
    done.inventory.extend(pruned.kept);
    // Entries kept while pruning is held.
    if plan.prune_held.is_some() {
        for entry in &observed.inventory {
            if !done.inventory.contains(entry) {
                done.inventory.push(entry.clone());
            }
        }
    }
    done.inventory.sort();
    done.inventory.dedup();
    Ok(done)
}

/// Admits one document as `apply` does and stores it: `Waiting` when its kind is not known
/// yet, `Failed` naming the field when it is refused.
async fn admit(
    rt: &Runtime,
    known: &Known,
    doc: &crate::admission::documents::Document,
) -> Result<Outcome, Error> {
    let prepared = match admission::prepare(std::slice::from_ref(doc), known) {
        Ok(prepared) => prepared,
        Err(admission::Error::UnknownKind { kind, .. }) => {
            return Ok(Outcome::Waiting(format!(
                "no Promise defines kind {kind} yet"
            )))
        }
        Err(admission::Error::Invalid { reason, .. }) => {
            return Ok(Outcome::Failed(Refusal::Invalid, reason))
        }
        Err(e) => return Ok(Outcome::Failed(Refusal::Invalid, e.to_string())),
    };
    let Some(prepared) = prepared.into_iter().next() else {
        return Ok(Outcome::Unchanged);
    };
    match admission::store_one(rt.cp.as_ref(), &prepared).await {
        Ok(stored) if !stored.changed => Ok(Outcome::Unchanged),
        Ok(_) => Ok(Outcome::Applied),
        Err(admission::Error::Invalid { reason, .. }) => {
            Ok(Outcome::Failed(Refusal::Invalid, reason))
        }
        // The controller's rights do not reach this kind (on Kubernetes, without the
        // platform-sync rights of deploy/components/platform-sync): named, the rest applies.
        Err(admission::Error::Store {
            source: crate::store::Error::Forbidden { reason, .. },
            ..
        }) => Ok(Outcome::Failed(Refusal::Forbidden, reason)),
        // On Kubernetes a create answers 404 when the object's namespace (or its kind) is not
        // there yet: a Namespace of the same change may come first on the next sync.
        Err(admission::Error::Store {
            source: source @ crate::store::Error::NotFound { .. },
            ..
        }) => Ok(Outcome::Waiting(format!(
            "{source}: waiting for its namespace or kind to exist"
        ))),
        Err(admission::Error::Store { source, .. }) => Err(source.into()),
        Err(e) => Ok(Outcome::Failed(Refusal::Invalid, e.to_string())),
    }
}

/// What pruning a list of inventory entries did.
#[derive(Debug, Default)]
pub(super) struct Pruned {
    /// The objects deleted (or already being deleted).
    pub(super) pruned: Vec<String>,
    /// Why each object that could not be deleted was not.
    pub(super) failures: Vec<String>,
    /// The entries of those objects: still in the inventory.
    pub(super) kept: Vec<Entry>,
}

/// Prunes each of `entries` in order: an entry whose object is gone or someone else's now
/// leaves the inventory; one that could not be deleted stays in it, with why.
pub(super) async fn prune_all(rt: &Runtime, destination: &str, entries: &[Entry]) -> Pruned {
    let mut done = Pruned::default();
    for entry in entries {
        match prune(rt, destination, entry).await {
            Ok(true) => done.pruned.push(entry.to_string()),
            Ok(false) => {}
            Err(e) => {
                done.failures.push(format!(
                    "deleting {entry}: {}",
                    crate::controllers::ErrorChain(&e)
                ));
                done.kept.push(entry.clone());
            }
        }
    }
    done
}

/// Records on a Destination being deleted what pruning its inventory did: the condition, the
/// inventory left, a `PlatformPruned` event.
pub(super) async fn record_deletion(
    rt: &Runtime,
    obj: &Object,
    previous: &SyncStatus,
    pruned: &Pruned,
) -> Result<(), Error> {
    rt.metrics()
        .synced(SyncOutcome::Pruned, pruned.pruned.len());
    if !pruned.pruned.is_empty() {
        let message = format!(
            "the Destination is deleted with cleanup: all: pruned {}",
            listed(&pruned.pruned)
        );
        crate::events::record(&rt.cp, obj, Reason::PlatformPruned, &message).await;
    }
    let sync = SyncStatus {
        counts: Counts {
            pruned: pruned.pruned.len(),
            ..Counts::default()
        },
        inventory: pruned.kept.clone(),
        churn: Vec::new(),
        ..previous.clone()
    };
    let condition = deletion::condition(pruned.pruned.len(), &pruned.failures);
    write_status(rt, obj, Some(&sync), condition).await
}

/// Deletes the object of `entry` if it is still this Destination's; true when it was deleted
/// (or is being deleted). An object someone else holds now is left alone.
async fn prune(rt: &Runtime, destination: &str, entry: &Entry) -> Result<bool, Error> {
    let key = key_of(entry);
    let Some(kind) = rt.kind_of(&key).await? else {
        return Ok(false);
    };
    let Some(live) = rt
        .cp
        .get(&kind, entry.namespace.as_deref(), &entry.name)
        .await?
    else {
        return Ok(false);
    };
    if crate::api::object::label(&live, labels::PLATFORM_DESTINATION) != Some(destination) {
        return Ok(false);
    }
    if live.metadata.deletion_timestamp.is_none() {
        crate::controllers::status::delete_if_present(rt.cp.as_ref(), &kind, &live).await?;
    }
    Ok(true)
}

/// Records a sync on the Destination: `PlatformSynced`, `status.platformSync`, events for what
/// changed (and for a failure the first time it is seen), and the metrics.
pub(super) async fn record(
    rt: &Runtime,
    obj: &Object,
    folder: &Folder,
    observed: &Observed,
    done: &Done,
    previous: &SyncStatus,
) -> Result<(), Error> {
    let condition = decide::condition(
        &folder.revision,
        &done.outcomes,
        &observed.unreadable,
        &done.prune_failures,
        done.counts,
    );
    let sync = SyncStatus {
        revision: folder.revision.clone(),
        counts: done.counts,
        inventory: done.inventory.clone(),
        churn: done.churn.clone(),
    };
    let metrics = rt.metrics();
    metrics.synced(SyncOutcome::Applied, done.changed.len());
    metrics.synced(
        SyncOutcome::Unchanged,
        done.counts.applied - done.changed.len(),
    );
    metrics.synced(SyncOutcome::Pruned, done.counts.pruned);
    metrics.synced(SyncOutcome::Waiting, done.counts.waiting);
    metrics.synced(SyncOutcome::Failed, done.counts.failed);
    let short = crate::api::work_placement::short_version(&folder.revision);
    if !done.changed.is_empty() {
        let message = format!("revision {short}: applied {}", listed(&done.changed));
        crate::events::record(&rt.cp, obj, Reason::PlatformApplied, &message).await;
    }
    if !done.pruned.is_empty() {
        let message = format!("revision {short}: pruned {}", listed(&done.pruned));
        crate::events::record(&rt.cp, obj, Reason::PlatformPruned, &message).await;
    }
    let before = crate::api::condition::get(obj, types::PLATFORM_SYNCED);
    let new_failure = condition.status == ConditionStatus::False
        && condition.reason != reasons::KIND_NOT_SERVED
        && before.as_ref().map(|c| &c.message) != Some(&condition.message);
    if new_failure {
        crate::events::record(&rt.cp, obj, Reason::PlatformSyncFailed, &condition.message).await;
    }
    if &sync == previous && before.is_some_and(|c| c.message == condition.message) {
        return Ok(());
    }
    write_status(rt, obj, Some(&sync), condition).await
}

/// A store that could not be read: `PlatformSynced=False`, the last sync's record kept.
pub(super) async fn record_unreadable_store(
    rt: &Runtime,
    obj: &Object,
    message: &str,
) -> Result<(), Error> {
    let condition = crate::api::Condition::new(
        types::PLATFORM_SYNCED,
        ConditionStatus::False,
        "StoreUnreadable",
        message,
    );
    write_status(rt, obj, None, condition).await
}

/// At most a few names, then how many more.
fn listed(names: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut text = names
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > SHOWN {
        text.push_str(&format!(" and {} more", names.len() - SHOWN));
    }
    text
}
