//! What one write changed for one placement — files added, changed and deleted — kept in the
//! placement's status as `lastWrite` (for `describe`) and said in its `WorkWritten` event.

use std::collections::BTreeSet;

use serde::Serialize;

/// The files one write added, changed and deleted for one placement, and the version (Git
/// commit) holding them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub(crate) struct LastWrite {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) version: Option<String>,
    pub(crate) added: Vec<String>,
    pub(crate) changed: Vec<String>,
    pub(crate) deleted: Vec<String>,
}

impl LastWrite {
    /// What the write did for a placement that had `before` and wants `desired`, given what the
    /// store reports it `written` (created or replaced) and `deleted` for the whole batch.
    pub(crate) fn of(
        before: &[String],
        desired: &[String],
        written: &BTreeSet<String>,
        deleted: &BTreeSet<String>,
        version: Option<String>,
    ) -> Self {
        let before: BTreeSet<&String> = before.iter().collect();
        let desired_set: BTreeSet<&String> = desired.iter().collect();
        let (mut added, mut changed) = (Vec::new(), Vec::new());
        for path in desired_set.iter().filter(|p| written.contains(p.as_str())) {
            if before.contains(path) {
                changed.push((*path).clone());
            } else {
                added.push((*path).clone());
            }
        }
        let deleted = before
            .iter()
            .filter(|p| !desired_set.contains(*p) && deleted.contains(p.as_str()))
            .map(|p| (*p).clone())
            .collect();
        LastWrite {
            version,
            added,
            changed,
            deleted,
        }
    }

    /// Whether the write changed anything of this placement.
    pub(crate) fn is_empty(&self) -> bool {
        self.added.is_empty() && self.changed.is_empty() && self.deleted.is_empty()
    }

    /// `2 added, 1 changed, 0 deleted`.
    pub(crate) fn counts(&self) -> String {
        format!(
            "{} added, {} changed, {} deleted",
            self.added.len(),
            self.changed.len(),
            self.deleted.len()
        )
    }

    /// `WorkWritten`'s message: where, which commit, and how many files changed.
    pub(crate) fn message(&self, destination: &str) -> String {
        let commit = self
            .version
            .as_deref()
            .map(|v| format!(" at {}", crate::api::work_placement::short_version(v)))
            .unwrap_or_default();
        format!(
            "written to Destination {destination}{commit}: {}",
            self.counts()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(items: &[&str]) -> BTreeSet<String> {
        items.iter().map(std::string::ToString::to_string).collect()
    }

    fn list(items: &[&str]) -> Vec<String> {
        items.iter().map(std::string::ToString::to_string).collect()
    }

    #[test]
    fn sorts_the_written_files_of_one_placement() {
        let cases = [
            (
                "first write",
                list(&[]),
                list(&["a", "b"]),
                set(&["a", "b"]),
                set(&[]),
                (vec!["a", "b"], vec![], vec![]),
            ),
            (
                "one changed, one kept",
                list(&["a", "b"]),
                list(&["a", "b"]),
                set(&["b"]),
                set(&[]),
                (vec![], vec!["b"], vec![]),
            ),
            (
                "one gone",
                list(&["a", "b"]),
                list(&["a"]),
                set(&[]),
                set(&["b"]),
                (vec![], vec![], vec!["b"]),
            ),
            (
                "other placements' files are not ours",
                list(&["a"]),
                list(&["a"]),
                set(&["x"]),
                set(&["y"]),
                (vec![], vec![], vec![]),
            ),
            (
                "deleted but not ours before",
                list(&[]),
                list(&[]),
                set(&[]),
                set(&["a"]),
                (vec![], vec![], vec![]),
            ),
        ];
        for (name, before, desired, written, deleted, (added, changed, gone)) in cases {
            let got = LastWrite::of(&before, &desired, &written, &deleted, None);
            assert_eq!(got.added, added, "{name}");
            assert_eq!(got.changed, changed, "{name}");
            assert_eq!(got.deleted, gone, "{name}");
        }
    }

    #[test]
    fn the_written_message_names_the_destination_and_the_short_version() {
        let write = |version: Option<&str>| LastWrite {
            version: version.map(str::to_string),
            added: list(&["a"]),
            ..LastWrite::default()
        };
        let cases = [
            (
                None,
                "written to Destination d: 1 added, 0 changed, 0 deleted",
            ),
            (
                Some("557ce7f2cef3a1b2c3d4"),
                "written to Destination d at 557ce7f2cef3: 1 added, 0 changed, 0 deleted",
            ),
            // A store's version may be any text: it is cut between characters.
            (
                Some("versión-é-ümlaut"),
                "written to Destination d at versión-é-üm: 1 added, 0 changed, 0 deleted",
            ),
        ];
        for (version, message) in cases {
            assert_eq!(write(version).message("d"), message, "{version:?}");
        }
    }
}
