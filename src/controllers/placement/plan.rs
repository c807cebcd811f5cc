//! What to put and delete in a state store, given what we want there and what we wrote before.
//!
//! The writer records, per placement (or per Work and Destination when several placements share
//! one commit), the paths it wrote, and only ever deletes those: files written by anybody else
//! are never touched, even inside a directory we write to. Kratix instead empties a placement's
//! whole directory before writing (nested mode) and keeps a state file only in mode `none`.

use std::collections::{BTreeMap, BTreeSet};

use crate::controllers::placement::layout::FileBytes;

/// Errors in what placements ask for.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum Error {
    /// Two placements on one Destination would write the same path (possible in mode `none`,
    /// where every placement writes flat under the Destination's path). Kratix lets them
    /// overwrite and delete each other's file; we refuse to write either.
    #[error("placements {first:?} and {second:?} both write {path:?} on one destination")]
    PathCollision {
        path: String,
        first: String,
        second: String,
    },
}

/// The changes to hand to a state store.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Plan {
    /// Every desired file, in the order given. The store skips content that is unchanged, so a
    /// re-run that produces the same files changes nothing.
    pub(crate) puts: Vec<FileBytes>,
    /// Paths we wrote before and want no more, sorted.
    pub(crate) deletes: Vec<String>,
}

/// Puts everything desired; deletes what we owned before that is not desired any more, and
/// nothing else.
pub(crate) fn plan(desired: &[FileBytes], previously_owned: &[String]) -> Plan {
    let desired_paths: BTreeSet<&str> = desired.iter().map(|(path, _)| path.as_str()).collect();
    let deletes: BTreeSet<String> = previously_owned
        .iter()
        .filter(|path| !desired_paths.contains(path.as_str()))
        .cloned()
        .collect();
    Plan {
        puts: desired.to_vec(),
        deletes: deletes.into_iter().collect(),
    }
}

/// Checks that no path is claimed by two placements of one Destination. `claims` holds, per
/// placement name, the paths it would write. The first collision in path order is reported, so
/// the error is the same whatever order placements are listed in.
pub(crate) fn check_collisions(claims: &[(String, Vec<String>)]) -> Result<(), Error> {
    let mut claimants: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (placement, paths) in claims {
        for path in paths {
            claimants
                .entry(path.as_str())
                .or_default()
                .insert(placement.as_str());
        }
    }
    for (path, placements) in claimants {
        let mut placements = placements.into_iter();
        if let (Some(first), Some(second)) = (placements.next(), placements.next()) {
            return Err(Error::PathCollision {
                path: path.to_string(),
                first: first.to_string(),
                second: second.to_string(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn desired(paths: &[&str]) -> Vec<FileBytes> {
        paths
            .iter()
            .map(|p| (p.to_string(), p.as_bytes().to_vec()))
            .collect()
    }

    fn strings(paths: &[&str]) -> Vec<String> {
        paths.iter().map(std::string::ToString::to_string).collect()
    }

    #[test]
    fn plan_deletes_only_files_we_owned_and_no_longer_want() {
        let dir = "worker-1/resources/default/bash/rr-test/first-configure/5058f";
        type Case<'a> = (&'a str, Vec<&'a str>, Vec<&'a str>, Vec<&'a str>);
        let cases: Vec<Case> = vec![
            ("first write deletes nothing", vec!["a", "b"], vec![], vec![]),
            ("same files again deletes nothing", vec!["a", "b"], vec!["a", "b"], vec![]),
            ("a dropped file is deleted", vec!["a"], vec!["a", "b"], vec!["b"]),
            ("a renamed file: new put, old deleted", vec!["c"], vec!["a"], vec!["a"]),
            ("no output deletes everything owned", vec![], vec!["b", "a"], vec!["a", "b"]),
            (
                "foo/example.json dropped, namespace.yaml kept",
                vec!["worker-1/resources/default/bash/rr-test/first-configure/5058f/namespace.yaml"],
                vec![
                    "worker-1/resources/default/bash/rr-test/first-configure/5058f/namespace.yaml",
                    "worker-1/resources/default/bash/rr-test/first-configure/5058f/foo/example.json",
                ],
                vec!["worker-1/resources/default/bash/rr-test/first-configure/5058f/foo/example.json"],
            ),
            ("duplicates in the record are deleted once", vec![], vec!["a", "a"], vec!["a"]),
        ];
        for (name, want, owned, expected_deletes) in cases {
            let got = plan(&desired(&want), &strings(&owned));
            assert_eq!(got.puts, desired(&want), "{name}");
            assert_eq!(got.deletes, strings(&expected_deletes), "{name}");
        }
        // Files in our directory that someone else wrote are not in our record: never deleted.
        let foreign = format!("{dir}/written-by-hand.yaml");
        let got = plan(&[], &[format!("{dir}/namespace.yaml")]);
        assert!(!got.deletes.contains(&foreign));
        assert_eq!(plan(&[], &[]), Plan::default());
        assert!(!plan(&desired(&["a"]), &[]).puts.is_empty());
    }

    #[test]
    fn collisions_name_both_placements() {
        let claim = |name: &str, paths: &[&str]| (name.to_string(), strings(paths));
        type Case<'a> = (&'a str, Vec<(String, Vec<String>)>, Result<(), Error>);
        let cases: Vec<Case> = vec![
            ("no placements", vec![], Ok(())),
            (
                "distinct paths",
                vec![claim("t-1", &["d/t-1.yaml"]), claim("t-2", &["d/t-2.yaml"])],
                Ok(()),
            ),
            (
                "one placement listing a path twice is not a collision",
                vec![claim("t-1", &["d/a.yaml", "d/a.yaml"])],
                Ok(()),
            ),
            (
                "two placements writing one flat path",
                vec![
                    claim("wp-b", &["d/x.yaml", "d/shared.yaml"]),
                    claim("wp-a", &["d/shared.yaml"]),
                ],
                Err(Error::PathCollision {
                    path: "d/shared.yaml".into(),
                    first: "wp-a".into(),
                    second: "wp-b".into(),
                }),
            ),
            (
                "the first colliding path is reported",
                vec![
                    claim("p", &["d/z.yaml", "d/b.yaml"]),
                    claim("q", &["d/z.yaml", "d/b.yaml"]),
                ],
                Err(Error::PathCollision {
                    path: "d/b.yaml".into(),
                    first: "p".into(),
                    second: "q".into(),
                }),
            ),
        ];
        for (name, claims, expected) in cases {
            assert_eq!(check_collisions(&claims), expected, "{name}");
        }
        let message = Error::PathCollision {
            path: "d/shared.yaml".into(),
            first: "wp-a".into(),
            second: "wp-b".into(),
        }
        .to_string();
        assert_eq!(
            message,
            "placements \"wp-a\" and \"wp-b\" both write \"d/shared.yaml\" on one destination"
        );
    }
}
