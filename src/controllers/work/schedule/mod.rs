//! Work -> WorkPlacements: which Destinations each workload group of a Work goes to.
//!
//! Pure: the caller lists the Destinations and the Work's existing placements, and acts on the
//! [`Schedule`] (create or update a placement per target, label the misplaced ones, delete the
//! dangling ones, surface unscheduled groups). Kratix's rules (scheduler.go:157-599):
//!
//! - A dependency Work's group goes to **every** matching Destination.
//! - A resource Work's group goes to **one** matching Destination. Kratix picks it at random; we
//!   pick it by rendezvous hashing of (work, group, destination), so the same inputs always give
//!   the same answer and adding or removing an unrelated Destination doesn't change it.
//! - A resource group that already has a placement is **sticky**: it is never moved, only flagged
//!   misplaced when its Destination stops matching, and it keeps receiving updates there.
//! - An existing placement whose Destination no longer matches is kept, flagged misplaced, and
//!   kept up to date, for dependency Works too. We deliberately do NOT remove it, as Kratix
//!   doesn't: removing it would delete its files from the store, and the GitOps agent would then
//!   prune live resources on that cluster because someone edited a label. Misplaced is a signal
//!   for a human (the Work's `Ready` says `Misplaced`); deleting the placement by hand removes it.
//! - A group with no target and no existing placement is unscheduled; the caller reports it and
//!   retries when Destinations change.
//! - Existing placements whose group is no longer in the Work are deleted.
//!
//! Not modelled: dry-run Works and `kratix.io/dry-run` Destinations.

mod selectors;

use std::collections::{BTreeMap, BTreeSet};

use sha2::{Digest, Sha256};

use crate::api::work::WorkloadGroup;

pub(crate) use selectors::{matching_destinations, merged_selectors};

/// What the scheduler needs to know about a Destination.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct DestinationInfo {
    pub(crate) name: String,
    pub(crate) labels: BTreeMap<String, String>,
    pub(crate) strict_match_labels: bool,
    /// The Destination has a deletion timestamp: it takes no new work.
    pub(crate) deleting: bool,
    /// The Destination has no path, or one another Destination of its store holds: it takes
    /// no new work.
    pub(crate) refused: bool,
}

/// A WorkPlacement of the Work being scheduled, as it exists now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ExistingPlacement {
    pub(crate) name: String,
    /// `spec.id`, the workload group id.
    pub(crate) group_id: String,
    /// `spec.targetDestinationName`.
    pub(crate) destination: String,
}

/// A dependency Work (promise workflow or static dependencies, no `resourceName`) goes
/// everywhere it matches; a resource Work's group goes to one place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WorkKind {
    Dependency,
    Resource,
}

/// The decision for one workload group.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct GroupDecision {
    pub(crate) group_id: String,
    /// Destinations (sorted) that must each hold an up-to-date placement of this group, named
    /// [`placement_name`]: create it, or update its workloads. Includes the Destinations of
    /// misplaced placements, which Kratix keeps updating.
    pub(crate) targets: Vec<String>,
    /// Names (sorted) of existing placements whose Destination no longer matches the group's
    /// selectors: label them `kratix.io/misplaced=true` and mark them not Ready.
    pub(crate) misplaced: Vec<String>,
    /// No Destination matches and nothing was placed before: nothing to create, the Work reports
    /// `UnscheduledWorkloads` and is retried when Destinations change.
    pub(crate) unscheduled: bool,
}

/// The decision for a whole Work.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Schedule {
    /// One per workload group, in the Work's order.
    pub(crate) groups: Vec<GroupDecision>,
    /// Names (sorted) of existing placements whose group is gone from the Work: delete them (their
    /// finalizer removes their files).
    pub(crate) delete: Vec<String>,
}

impl Schedule {
    /// Groups that could not be placed anywhere, for the Work's `ScheduleSucceeded` message.
    pub(crate) fn unscheduled_group_ids(&self) -> Vec<&str> {
        self.groups
            .iter()
            .filter(|g| g.unscheduled)
            .map(|g| g.group_id.as_str())
            .collect()
    }

    /// Some placement sits on a Destination that no longer matches.
    pub(crate) fn has_misplaced(&self) -> bool {
        self.groups.iter().any(|g| !g.misplaced.is_empty())
    }
}

/// Decides where every workload group of the Work named `work_name` goes.
pub(crate) fn schedule(
    work_name: &str,
    kind: WorkKind,
    groups: &[WorkloadGroup],
    destinations: &[DestinationInfo],
    existing: &[ExistingPlacement],
) -> Schedule {
    let decisions = groups
        .iter()
        .map(|group| {
            let placed: Vec<&ExistingPlacement> =
                existing.iter().filter(|p| p.group_id == group.id).collect();
            schedule_group(work_name, kind, group, destinations, &placed)
        })
        .collect();

    let live_groups: BTreeSet<&str> = groups.iter().map(|g| g.id.as_str()).collect();
    let mut delete: Vec<String> = existing
        .iter()
        .filter(|p| !live_groups.contains(p.group_id.as_str()))
        .map(|p| p.name.clone())
        .collect();
    delete.sort();
    delete.dedup();

    Schedule {
        groups: decisions,
        delete,
    }
}

fn schedule_group(
    work_name: &str,
    kind: WorkKind,
    group: &WorkloadGroup,
    destinations: &[DestinationInfo],
    placed: &[&ExistingPlacement],
) -> GroupDecision {
    let selectors = merged_selectors(group);
    let matching = matching_destinations(&selectors, destinations);
    let matching_names: BTreeSet<&str> = matching.iter().map(|d| d.name.as_str()).collect();

    let mut targets: BTreeSet<String> = placed.iter().map(|p| p.destination.clone()).collect();
    let sticky = kind == WorkKind::Resource && !placed.is_empty();
    if !sticky {
        match kind {
            WorkKind::Dependency => targets.extend(matching.iter().map(|d| d.name.clone())),
            WorkKind::Resource => {
                targets.extend(choose_one(work_name, &group.id, &matching).map(|d| d.name.clone()));
            }
        }
    }

    let mut misplaced: Vec<String> = placed
        .iter()
        .filter(|p| !matching_names.contains(p.destination.as_str()))
        .map(|p| p.name.clone())
        .collect();
    misplaced.sort();
    misplaced.dedup();

    GroupDecision {
        group_id: group.id.clone(),
        unscheduled: targets.is_empty(),
        targets: targets.into_iter().collect(),
        misplaced,
    }
}

/// Rendezvous (highest random weight) choice: each candidate scores sha256(work, group,
/// destination) and the highest wins. Removing a Destination only moves the groups that would
/// have chosen it, and adding one only takes the groups it now wins.
fn choose_one<'a>(
    work_name: &str,
    group_id: &str,
    candidates: &[&'a DestinationInfo],
) -> Option<&'a DestinationInfo> {
    candidates.iter().copied().max_by(|a, b| {
        rendezvous_score(work_name, group_id, &a.name)
            .cmp(&rendezvous_score(work_name, group_id, &b.name))
            // A tie needs a sha256 collision; break it by name so the order can't matter.
            .then_with(|| b.name.cmp(&a.name))
    })
}

fn rendezvous_score(work_name: &str, group_id: &str, destination: &str) -> [u8; 32] {
    let mut hasher = Sha256::new();
    // NUL separators: names can't contain NUL, so ("ab", "c") and ("a", "bc") differ.
    for part in [work_name, group_id, destination] {
        hasher.update(part.as_bytes());
        hasher.update([0u8]);
    }
    hasher.finalize().into()
}

/// The WorkPlacement of `work_name`'s group `group_id` on `destination`:
/// `<work>.<destination>-<first five characters of the group id>` (scheduler.go:371).
pub(crate) fn placement_name(work_name: &str, destination: &str, group_id: &str) -> String {
    format!(
        "{work_name}.{destination}-{}",
        crate::api::work::short_group_id(group_id)
    )
}

#[cfg(test)]
mod tests;
