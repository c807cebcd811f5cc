//! How often the sync may change one object: a loop between Promises (a sub-Promise whose
//! pipeline writes its parent again, a document that is different at every revision) would
//! otherwise apply, rerun a pipeline, write and apply again for ever. Each object may be changed
//! at most `changes` times within a window; past that its document is held until the window
//! ends, and the Destination says which and why.

use serde::{Deserialize, Serialize};

use super::entry::Entry;

/// At most `changes` changes of one object within `window_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Budget {
    pub(crate) changes: u32,
    pub(crate) window_ms: i64,
}

/// The changes the sync made to one object in its current window, as the Destination's status
/// records them (`status.platformSync.churn`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Churn {
    #[serde(flatten)]
    pub(crate) entry: Entry,
    /// When the window began, in milliseconds since the epoch.
    pub(crate) since_ms: i64,
    pub(crate) changes: u32,
}

/// Whether the sync may apply a document now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Allowance {
    Apply,
    /// The object changed `changes` times since the window began; held until `until_ms`.
    Held {
        changes: u32,
        until_ms: i64,
    },
}

/// Whether an object with `churn` may be applied at `now_ms`.
pub(crate) fn allowance(churn: Option<&Churn>, now_ms: i64, budget: Budget) -> Allowance {
    match churn {
        Some(c) if now_ms < c.since_ms + budget.window_ms && c.changes >= budget.changes => {
            Allowance::Held {
                changes: c.changes,
                until_ms: c.since_ms + budget.window_ms,
            }
        }
        _ => Allowance::Apply,
    }
}

/// An object's churn after a sync that `changed` it (or not) at `now_ms`: counted in the open
/// window, or a new window begun; `None` once the window ended without a change.
pub(crate) fn after(
    churn: Option<&Churn>,
    entry: &Entry,
    changed: bool,
    now_ms: i64,
    budget: Budget,
) -> Option<Churn> {
    let open = churn.filter(|c| now_ms < c.since_ms + budget.window_ms);
    match (open, changed) {
        (Some(c), true) => Some(Churn {
            changes: c.changes.saturating_add(1),
            ..c.clone()
        }),
        (Some(c), false) => Some(c.clone()),
        (None, true) => Some(Churn {
            entry: entry.clone(),
            since_ms: now_ms,
            changes: 1,
        }),
        (None, false) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BUDGET: Budget = Budget {
        changes: 3,
        window_ms: 1_000,
    };

    fn entry() -> Entry {
        Entry {
            api_version: "example.com/v1".into(),
            kind: "Loop".into(),
            namespace: Some("default".into()),
            name: "echo".into(),
        }
    }

    fn churn(since_ms: i64, changes: u32) -> Churn {
        Churn {
            entry: entry(),
            since_ms,
            changes,
        }
    }

    #[test]
    fn an_object_changed_too_often_is_held_until_its_window_ends() {
        let cases = [
            ("never changed", None, 5_000, Allowance::Apply),
            (
                "under budget",
                Some(churn(5_000, 2)),
                5_500,
                Allowance::Apply,
            ),
            (
                "budget spent in the window",
                Some(churn(5_000, 3)),
                5_999,
                Allowance::Held {
                    changes: 3,
                    until_ms: 6_000,
                },
            ),
            (
                "the window over",
                Some(churn(5_000, 9)),
                6_000,
                Allowance::Apply,
            ),
        ];
        for (name, churn, now, want) in cases {
            assert_eq!(allowance(churn.as_ref(), now, BUDGET), want, "{name}");
        }
    }

    #[test]
    fn changes_are_counted_within_a_window() {
        let cases = [
            (
                "a first change opens a window",
                None,
                true,
                5_000,
                Some(churn(5_000, 1)),
            ),
            ("no change, no window", None, false, 5_000, None),
            (
                "a change in the window counts",
                Some(churn(5_000, 1)),
                true,
                5_900,
                Some(churn(5_000, 2)),
            ),
            (
                "no change keeps the window",
                Some(churn(5_000, 2)),
                false,
                5_900,
                Some(churn(5_000, 2)),
            ),
            (
                "a change after the window opens another",
                Some(churn(5_000, 3)),
                true,
                6_000,
                Some(churn(6_000, 1)),
            ),
            (
                "the window over without a change is forgotten",
                Some(churn(5_000, 3)),
                false,
                6_000,
                None,
            ),
        ];
        for (name, before, changed, now, want) in cases {
            assert_eq!(
                after(before.as_ref(), &entry(), changed, now, BUDGET),
                want,
                "{name}"
            );
        }
    }
}
