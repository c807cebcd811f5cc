//! What `diff` prints: each state store's pending changes, attributed to the Destination whose
//! files they are, as unified diffs.

use std::fmt::Write;

use statestores::{Key, Pending};

/// A state store, by kind and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct StoreRef {
    pub kind: String,
    pub name: String,
}

/// Where a Destination's files lie: under `root` in `store`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct DestinationRoot {
    pub destination: String,
    pub store: StoreRef,
    pub root: Key,
}

/// The changes one Destination (`None`: keys of the store under no Destination) would get.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Section {
    pub destination: Option<String>,
    pub store: StoreRef,
    pub files: Vec<Pending>,
}

/// Per store, its pending changes; each key goes to the Destination of that store with the
/// longest root holding it. Sections are sorted by Destination, then store; keys stay sorted.
pub(super) fn sections(
    pending: Vec<(StoreRef, Vec<Pending>)>,
    roots: &[DestinationRoot],
) -> Vec<Section> {
    let mut out: Vec<Section> = Vec::new();
    for (store, files) in pending {
        for file in files {
            let destination = roots
                .iter()
                .filter(|r| r.store == store && file.key.starts_with(&r.root))
                .max_by(|a, b| {
                    let depth = |r: &DestinationRoot| r.root.segments().count();
                    // Equal roots: the first name wins, whatever order they came in.
                    depth(a)
                        .cmp(&depth(b))
                        .then_with(|| b.destination.cmp(&a.destination))
                })
                .map(|r| r.destination.clone());
            match out
                .iter_mut()
                .find(|s| s.destination == destination && s.store == store)
            {
                Some(section) => section.files.push(file),
                None => out.push(Section {
                    destination,
                    store: store.clone(),
                    files: vec![file],
                }),
            }
        }
    }
    out.sort_by(|a, b| (&a.destination, &a.store).cmp(&(&b.destination, &b.store)));
    for section in &mut out {
        section.files.sort_by(|a, b| a.key.cmp(&b.key));
    }
    out
}

/// How many files a section adds, changes and deletes.
fn counts(files: &[Pending]) -> (usize, usize, usize) {
    files
        .iter()
        .fold((0, 0, 0), |(a, c, d), f| match (&f.before, &f.after) {
            (None, _) => (a + 1, c, d),
            (Some(_), Some(_)) => (a, c + 1, d),
            (Some(_), None) => (a, c, d + 1),
        })
}

/// Every section: a `#` line naming the Destination, its store and the counts, then one
/// unified diff per file (`--- a/KEY` `+++ b/KEY`, `/dev/null` for an added or deleted side).
pub(crate) fn render(sections: &[Section]) -> String {
    let mut out = String::new();
    for section in sections {
        let (added, changed, deleted) = counts(&section.files);
        let place = match &section.destination {
            Some(d) => format!("Destination {d}"),
            None => "outside every Destination".to_string(),
        };
        let _ = writeln!(
            out,
            "# {place} ({} {}): {added} added, {changed} changed, {deleted} deleted",
            section.store.kind, section.store.name
        );
        for file in &section.files {
            out.push_str(&unified(
                file.key.as_str(),
                file.before.as_deref(),
                file.after.as_deref(),
            ));
        }
    }
    out
}

/// One file's unified diff, with three lines of context; `Binary files … differ` when either
/// side is not UTF-8.
pub(super) fn unified(path: &str, before: Option<&[u8]>, after: Option<&[u8]>) -> String {
    let name = |side: Option<&[u8]>, prefix: &str| match side {
        Some(_) => format!("{prefix}/{path}"),
        None => "/dev/null".to_string(),
    };
    let (old_name, new_name) = (name(before, "a"), name(after, "b"));
    let (Some(old), Some(new)) = (as_text(before), as_text(after)) else {
        return format!("Binary files {old_name} and {new_name} differ\n");
    };
    let diff = similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&old_name, &new_name)
        .to_string();
    if diff.is_empty() {
        // An empty file added or deleted: no line changes, only the headers say so.
        return format!("--- {old_name}\n+++ {new_name}\n");
    }
    diff
}

/// An absent side is empty text; bytes that are not UTF-8 are no text.
fn as_text(side: Option<&[u8]>) -> Option<&str> {
    std::str::from_utf8(side.unwrap_or_default()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn key(s: &str) -> Key {
        Key::parse(s).expect("valid key")
    }

    fn store(name: &str) -> StoreRef {
        StoreRef {
            kind: "GitStateStore".into(),
            name: name.into(),
        }
    }

    fn pending(path: &str, before: Option<&str>, after: Option<&str>) -> Pending {
        let bytes = |s: Option<&str>| s.map(|s| Bytes::from(s.to_string()));
        Pending {
            key: key(path),
            before: bytes(before),
            after: bytes(after),
        }
    }

    fn root(destination: &str, store_name: &str, path: &str) -> DestinationRoot {
        DestinationRoot {
            destination: destination.into(),
            store: store(store_name),
            root: key(path),
        }
    }

    #[test]
    fn keys_go_to_the_destination_with_the_longest_root_on_their_store() {
        type Case<'a> = (
            &'a str,
            Vec<(&'a str, &'a str)>,
            Vec<(Option<&'a str>, &'a str, Vec<&'a str>)>,
        );
        let roots = vec![
            root("w1", "s", "w1"),
            root("w1-sub", "s", "w1/sub"),
            root("other-store", "t", "w1"),
            root("b-root", "s", ""),
            root("a-root", "s", ""),
        ];
        let no_root_dests = vec![root("w1", "s", "w1")];
        let cases: Vec<Case> = vec![
            (
                "nested roots: the deepest wins",
                vec![("s", "w1/x"), ("s", "w1/sub/y"), ("s", "w1sub/z")],
                vec![
                    (Some("a-root"), "s", vec!["w1sub/z"]),
                    (Some("w1"), "s", vec!["w1/x"]),
                    (Some("w1-sub"), "s", vec!["w1/sub/y"]),
                ],
            ),
            (
                "another store's Destination never claims a key",
                vec![("t", "w1/x"), ("t", "elsewhere")],
                vec![
                    (None, "t", vec!["elsewhere"]),
                    (Some("other-store"), "t", vec!["w1/x"]),
                ],
            ),
        ];
        for (name, keys, want) in cases {
            let mut by_store: Vec<(StoreRef, Vec<Pending>)> = Vec::new();
            for (s, path) in keys {
                match by_store.iter_mut().find(|(st, _)| st.name == s) {
                    Some((_, files)) => files.push(pending(path, None, Some("x"))),
                    None => by_store.push((store(s), vec![pending(path, None, Some("x"))])),
                }
            }
            let got: Vec<(Option<String>, String, Vec<String>)> = sections(by_store, &roots)
                .into_iter()
                .map(|s| {
                    let keys = s.files.iter().map(|f| f.key.to_string()).collect();
                    (s.destination, s.store.name, keys)
                })
                .collect();
            let want: Vec<(Option<String>, String, Vec<String>)> = want
                .into_iter()
                .map(|(d, s, k)| {
                    (
                        d.map(String::from),
                        s.to_string(),
                        k.into_iter().map(String::from).collect(),
                    )
                })
                .collect();
            assert_eq!(got, want, "{name}");
        }
        let got = sections(
            vec![(store("s"), vec![pending("top", None, Some("x"))])],
            &no_root_dests,
        );
        assert_eq!(got[0].destination, None, "a key under no root");
    }

    #[test]
    fn unified_diffs_of_added_changed_deleted_and_binary_files() {
        type Case<'a> = (&'a str, Option<&'a [u8]>, Option<&'a [u8]>, &'a str);
        let cases: Vec<Case> = vec![
            (
                "changed",
                Some(b"a\nb\nc\n"),
                Some(b"a\nB\nc\n"),
                "--- a/d/f.yaml\n+++ b/d/f.yaml\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n",
            ),
            (
                "added",
                None,
                Some(b"x: 1\n"),
                "--- /dev/null\n+++ b/d/f.yaml\n@@ -0,0 +1 @@\n+x: 1\n",
            ),
            (
                "deleted",
                Some(b"x: 1\n"),
                None,
                "--- a/d/f.yaml\n+++ /dev/null\n@@ -1 +0,0 @@\n-x: 1\n",
            ),
            (
                "empty file added",
                None,
                Some(b""),
                "--- /dev/null\n+++ b/d/f.yaml\n",
            ),
            (
                "binary",
                Some(b"\xff\xfe"),
                Some(b"text\n"),
                "Binary files a/d/f.yaml and b/d/f.yaml differ\n",
            ),
        ];
        for (name, before, after, want) in cases {
            assert_eq!(unified("d/f.yaml", before, after), want, "{name}");
        }
    }

    #[test]
    fn sections_are_headed_by_destination_store_and_counts() {
        let section = Section {
            destination: Some("worker-1".into()),
            store: store("default"),
            files: vec![
                pending("w/a", Some("1\n"), Some("2\n")),
                pending("w/b", None, Some("n\n")),
                pending("w/c", Some("o\n"), None),
            ],
        };
        let text = render(&[section]);
        assert!(
            text.starts_with(
                "# Destination worker-1 (GitStateStore default): 1 added, 1 changed, 1 deleted\n--- a/w/a\n"
            ),
            "{text}"
        );
        assert!(text.contains("+++ b/w/b\n") && text.contains("--- a/w/c\n+++ /dev/null\n"));
        assert_eq!(render(&[]), "");
    }
}
