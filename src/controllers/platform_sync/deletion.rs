//! What deleting a platform Destination does to what its syncs applied. With `cleanup: all` the
//! Destination's files leave the store, so what they applied goes too, as Flux garbage-collects
//! the inventory of a deleted Kustomization with `prune: true`; without it the files stay in the
//! store and so do their objects (a Destination made again on the same path takes them back, as
//! they carry its label). The inventory is what is pruned, not the store: an unreadable store
//! does not hold the deletion up.

use super::entry::Entry;
use crate::api::words::types;
use crate::api::{Condition, ConditionStatus, GROUP};

/// The inventory entries deleting the Destination prunes, in the order they are deleted:
/// requests and other objects first, so that a sub-request's delete workflow runs while its
/// Promise is still there, then Promises, then Namespaces, which may hold the others.
pub(crate) fn to_prune(cleanup_all: bool, inventory: &[Entry]) -> Vec<Entry> {
    if !cleanup_all {
        return Vec::new();
    }
    let mut entries = inventory.to_vec();
    entries.sort_by(|a, b| (rank(a), a).cmp(&(rank(b), b)));
    entries
}

fn rank(entry: &Entry) -> u8 {
    match (entry.group(), entry.kind.as_str()) {
        (GROUP, "Promise") => 1,
        ("", "Namespace") => 2,
        _ => 0,
    }
}

/// `PlatformSynced` while the Destination is deleted: which objects are being pruned, or the
/// first that could not be.
pub(crate) fn condition(pruned: usize, failures: &[String]) -> Condition {
    match failures.first() {
        None => Condition::new(
            types::PLATFORM_SYNCED,
            ConditionStatus::True,
            "Deleted",
            &format!("the Destination is deleted with cleanup: all: {pruned} applied objects pruned"),
        ),
        Some(first) => Condition::new(
            types::PLATFORM_SYNCED,
            ConditionStatus::False,
            "PruneFailed",
            &format!(
                "the Destination is deleted with cleanup: all: {first} ({} of its objects not pruned yet)",
                failures.len()
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(api_version: &str, kind: &str, name: &str) -> Entry {
        Entry {
            api_version: api_version.into(),
            kind: kind.into(),
            namespace: None,
            name: name.into(),
        }
    }

    #[test]
    fn only_cleanup_all_prunes_and_promises_and_namespaces_go_last() {
        let ns = entry("v1", "Namespace", "kratix-worker-system");
        let promise = entry("platform.kratix.io/v1alpha1", "Promise", "child");
        let request = entry("test.kratix.io/v1alpha1", "Child", "p1");
        let cm = entry("v1", "ConfigMap", "settings");
        let other_promise = entry("example.com/v1", "Promise", "not-kratix");
        let inventory = vec![
            ns.clone(),
            promise.clone(),
            request.clone(),
            cm.clone(),
            other_promise.clone(),
        ];
        let cases = [
            (false, inventory.clone(), vec![]),
            (true, vec![], vec![]),
            (
                true,
                inventory,
                // The rest as the inventory sorts them (by apiVersion first).
                vec![other_promise, request, cm, promise, ns],
            ),
        ];
        for (cleanup_all, inventory, expected) in cases {
            assert_eq!(
                to_prune(cleanup_all, &inventory),
                expected,
                "cleanup_all={cleanup_all} {inventory:?}"
            );
        }
    }

    #[test]
    fn the_condition_names_the_first_failure() {
        let cases = [
            (
                3,
                vec![],
                ConditionStatus::True,
                "Deleted",
                "3 applied objects pruned",
            ),
            (
                1,
                vec![
                    "deleting Child default/p1: forbidden".to_string(),
                    "x".into(),
                ],
                ConditionStatus::False,
                "PruneFailed",
                "deleting Child default/p1: forbidden (2 of its objects",
            ),
        ];
        for (pruned, failures, status, reason, message) in cases {
            let c = condition(pruned, &failures);
            assert_eq!((c.status, c.reason.as_str()), (status, reason), "{c:?}");
            assert!(c.message.contains(message), "{}", c.message);
        }
    }
}
