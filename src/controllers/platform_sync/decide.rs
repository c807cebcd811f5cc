//! What one sync of a platform Destination does, decided from what was observed: which
//! documents to apply, which wait for their kind, which are refused and why, which inventory
//! entries to prune, and the `PlatformSynced` condition that tells the outcome.

use serde::{Deserialize, Serialize};

use super::budget::{self, Allowance, Budget, Churn};
pub(crate) use super::entry::Entry;
use crate::api::words::{reasons, types};
use crate::api::{Condition, ConditionStatus};

/// Whether this platform serves a document's kind now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Served {
    Yes,
    /// Not yet: its Promise is missing or not Available (the reason says which).
    Waiting(String),
    /// A kind that needs a cluster to mean anything (a Deployment, …).
    NotHere,
}

/// What the control plane holds under a document's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Live {
    Absent,
    /// An object this Destination's sync applied (it carries its label).
    Ours,
    /// An object made by someone else (or another Destination, named).
    Foreign(Option<String>),
}

/// One document of the store, as observed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Seen {
    /// Names the file and the document, for conditions and events.
    pub(crate) document: String,
    pub(crate) entry: Entry,
    pub(crate) served: Served,
    pub(crate) live: Live,
}

/// A file or document that could not be read as a Kubernetes object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unreadable {
    /// The file.
    pub(crate) file: String,
    /// Why, naming the file and the document.
    pub(crate) reason: String,
}

/// Everything one sync decides from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Observed {
    /// The documents, `dependencies/` first, each folder in path order.
    pub(crate) documents: Vec<Seen>,
    pub(crate) unreadable: Vec<Unreadable>,
    /// What earlier syncs applied.
    pub(crate) inventory: Vec<Entry>,
    /// At most this many objects are applied for one Destination: a Promise whose pipeline
    /// writes its own kind again cannot grow the platform without end.
    pub(crate) max_objects: usize,
    /// How often one object may be changed, what earlier syncs changed, and when this one runs:
    /// a loop between Promises is held rather than spun for ever.
    pub(crate) budget: Budget,
    pub(crate) churn: Vec<Churn>,
    pub(crate) now_ms: i64,
}

/// Why a document is not applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    Invalid,
    Duplicate,
    Conflict,
    NotServedHere,
    TooManyObjects,
    TooManyChanges,
    /// The controller may not write it (Kubernetes' 403).
    Forbidden,
}

impl Refusal {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Refusal::Invalid => "Invalid",
            Refusal::Duplicate => "Duplicate",
            Refusal::Conflict => "Conflict",
            Refusal::NotServedHere => "NotServedHere",
            Refusal::TooManyObjects => "TooManyObjects",
            Refusal::TooManyChanges => "TooManyChanges",
            Refusal::Forbidden => "Forbidden",
        }
    }
}

/// What to do with one document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    Apply,
    Wait(String),
    Refuse(Refusal, String),
}

/// What one sync does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plan {
    /// One per observed document, in order.
    pub(crate) verdicts: Vec<Verdict>,
    /// Inventory entries whose documents left the store.
    pub(crate) prune: Vec<Entry>,
    /// Why nothing is pruned this time, if so.
    pub(crate) prune_held: Option<String>,
}

/// Decides a sync: each document is applied unless its kind is not served yet (it waits), it
/// names an object someone else made (a conflict), it repeats an earlier document, its object
/// was changed as often as the budget allows within the window, or the Destination already
/// holds `max_objects`. What the inventory holds and no document names any
/// more is pruned — unless a file did not parse, since its objects cannot be told apart from
/// those that left.
pub(crate) fn plan(observed: &Observed) -> Plan {
    let mut verdicts = Vec::with_capacity(observed.documents.len());
    let mut seen: Vec<(&Entry, &str)> = Vec::new();
    let mut applying = 0;
    for doc in &observed.documents {
        let first = seen.iter().find(|(e, _)| **e == doc.entry).map(|(_, d)| *d);
        let verdict = if let Some(first) = first {
            Verdict::Refuse(
                Refusal::Duplicate,
                format!("{} is also defined by {first}", doc.entry),
            )
        } else if doc.served == Served::NotHere {
            Verdict::Refuse(
                Refusal::NotServedHere,
                format!(
                    "kind {} ({}) needs a cluster; it is not served here",
                    doc.entry.kind, doc.entry.api_version
                ),
            )
        } else if let Live::Foreign(owner) = &doc.live {
            Verdict::Refuse(
                Refusal::Conflict,
                match owner {
                    Some(other) => format!(
                        "{} exists and was applied for Destination {other:?}",
                        doc.entry
                    ),
                    None => format!("{} exists and was not made by this sync", doc.entry),
                },
            )
        } else if let Served::Waiting(why) = &doc.served {
            Verdict::Wait(why.clone())
        } else if let Some(why) = held(observed, &doc.entry) {
            Verdict::Refuse(Refusal::TooManyChanges, why)
        } else if applying >= observed.max_objects {
            Verdict::Refuse(
                Refusal::TooManyObjects,
                format!(
                    "more than {} objects for one platform Destination (a Promise that writes itself?)",
                    observed.max_objects
                ),
            )
        } else {
            applying += 1;
            Verdict::Apply
        };
        seen.push((&doc.entry, &doc.document));
        verdicts.push(verdict);
    }
    let (prune, prune_held) = match observed.unreadable.first() {
        Some(bad) => (
            Vec::new(),
            Some(format!(
                "{} does not parse: nothing is pruned until it does",
                bad.file
            )),
        ),
        None => (
            observed
                .inventory
                .iter()
                .filter(|e| !observed.documents.iter().any(|d| &d.entry == *e))
                .cloned()
                .collect(),
            None,
        ),
    };
    Plan {
        verdicts,
        prune,
        prune_held,
    }
}

/// Why the object of `entry` may not be changed now, if its budget is spent.
fn held(observed: &Observed, entry: &Entry) -> Option<String> {
    let churn = observed.churn.iter().find(|c| &c.entry == entry);
    match budget::allowance(churn, observed.now_ms, observed.budget) {
        Allowance::Apply => None,
        Allowance::Held { changes, until_ms } => Some(format!(
            "{entry} was changed {changes} times within {}s (a loop between Promises?): \
             its document is held until {}",
            observed.budget.window_ms / 1000,
            crate::api::formats::rfc3339_secs(until_ms).unwrap_or_default()
        )),
    }
}

/// How one document's sync ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    Applied,
    Unchanged,
    Waiting(String),
    Failed(Refusal, String),
}

/// The counts a sync reports on the Destination.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Counts {
    pub(crate) applied: usize,
    pub(crate) pruned: usize,
    pub(crate) waiting: usize,
    pub(crate) failed: usize,
}

/// The `PlatformSynced` condition of a sync of `revision`: `True` when every document is in
/// place; otherwise `False` naming the first document (and file) that is not and why.
pub(crate) fn condition(
    revision: &str,
    documents: &[(String, Outcome)],
    unreadable: &[Unreadable],
    prune_failures: &[String],
    counts: Counts,
) -> Condition {
    let short = crate::api::work_placement::short_version(revision);
    let failed = unreadable
        .iter()
        .map(|u| ("Unparseable", u.reason.clone()))
        .chain(documents.iter().filter_map(|(doc, o)| match o {
            Outcome::Failed(refusal, why) => Some((refusal.as_str(), format!("{doc}: {why}"))),
            _ => None,
        }))
        .chain(
            prune_failures
                .iter()
                .map(|why| ("PruneFailed", why.clone())),
        )
        .chain(documents.iter().filter_map(|(doc, o)| match o {
            Outcome::Waiting(why) => Some((reasons::KIND_NOT_SERVED, format!("{doc}: {why}"))),
            _ => None,
        }))
        .next();
    let tally = format!(
        "{} applied, {} pruned, {} waiting, {} failed",
        counts.applied, counts.pruned, counts.waiting, counts.failed
    );
    match failed {
        None => Condition::new(
            types::PLATFORM_SYNCED,
            ConditionStatus::True,
            "Applied",
            &format!("revision {short}: every document applied ({tally})"),
        ),
        Some((reason, message)) => Condition::new(
            types::PLATFORM_SYNCED,
            ConditionStatus::False,
            reason,
            &format!("revision {short}: {message} ({tally})"),
        ),
    }
}

/// Kubernetes' own API groups (and the core group): kinds of theirs that this platform does not
/// hold need a cluster, where a kind of any other group is a Promise's not applied yet.
pub(crate) fn is_cluster_group(group: &str) -> bool {
    group.is_empty()
        || group.ends_with(".k8s.io")
        || matches!(
            group,
            "apps" | "batch" | "autoscaling" | "policy" | "extensions"
        )
}

#[cfg(test)]
mod tests;
