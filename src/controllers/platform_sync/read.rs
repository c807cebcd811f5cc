//! What a platform Destination's folder holds at one revision of its store: every YAML
//! document of `dependencies/`, then of `resources/` (each in path order), read through the
//! same bounded parser `apply` uses.

use serde_json::Value;
use statestores::{Key, Snapshot};

use super::decide::Unreadable;
use crate::admission::documents::{self, Document, Limits};

/// The documents of one revision, in the order they apply.
#[derive(Debug, Default)]
pub(super) struct Folder {
    pub(super) revision: String,
    pub(super) documents: Vec<Document>,
    pub(super) unreadable: Vec<Unreadable>,
}

/// The folders a GitOps agent applies from a Destination, in the order it applies them.
const FOLDERS: [&str; 2] = ["dependencies", "resources"];

/// Splits `snapshot` (every file under the Destination's `root`) into documents: with
/// `nested` (filepath mode `nestedByMetadata`) those of `dependencies/` then `resources/`;
/// otherwise every file of the root (Kratix's `.kratix/` records excepted).
pub(super) fn documents(snapshot: Snapshot, root: &Key, nested: bool, limits: &Limits) -> Folder {
    let mut folder = Folder {
        revision: snapshot.version.map(|v| v.0).unwrap_or_default(),
        ..Folder::default()
    };
    let relative = |key: &Key| -> String {
        let path = key.as_str();
        match root.as_str() {
            "" => path.to_string(),
            prefix => path
                .strip_prefix(prefix)
                .map_or(path, |rest| rest.trim_start_matches('/'))
                .to_string(),
        }
    };
    let rank = |key: &Key| -> Option<usize> {
        let path = relative(key);
        if !(path.ends_with(".yaml") || path.ends_with(".yml")) {
            return None;
        }
        if !nested {
            return (!path.starts_with(".kratix/")).then_some(0);
        }
        FOLDERS
            .iter()
            .position(|f| path.starts_with(&format!("{f}/")))
    };
    let mut files: Vec<(usize, Key, bytes::Bytes)> = snapshot
        .files
        .into_iter()
        .filter_map(|(key, bytes)| rank(&key).map(|r| (r, key, bytes)))
        .collect();
    files.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    for (_, key, bytes) in files {
        let file = key.as_str().to_string();
        let Ok(text) = std::str::from_utf8(&bytes) else {
            folder.unreadable.push(Unreadable {
                reason: format!("{file}: not UTF-8 text"),
                file,
            });
            continue;
        };
        match documents::parse(&file, text, limits) {
            Err(e) => folder.unreadable.push(Unreadable {
                file,
                reason: e.to_string(),
            }),
            Ok(docs) => {
                for doc in docs {
                    match missing_identity(&doc) {
                        Some(field) => folder.unreadable.push(Unreadable {
                            file: file.clone(),
                            reason: format!("{doc}: {field}: required"),
                        }),
                        None => folder.documents.push(doc),
                    }
                }
            }
        }
    }
    folder
}

/// The first of `apiVersion`, `kind` and `metadata.name` a document lacks: without them it
/// names no object, so it can be neither applied nor told apart from one that left.
fn missing_identity(doc: &Document) -> Option<&'static str> {
    let has = |v: Option<&Value>| v.and_then(Value::as_str).is_some_and(|s| !s.is_empty());
    if !has(doc.value.get("apiVersion")) {
        Some("apiVersion")
    } else if !has(doc.value.get("kind")) {
        Some("kind")
    } else if !has(doc.value.pointer("/metadata/name")) {
        Some("metadata.name")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn key(path: &str) -> Key {
        Key::parse(path).expect("a valid key")
    }

    fn file(path: &str, text: &str) -> (Key, Bytes) {
        (key(path), Bytes::from(text.to_string()))
    }

    const CHILD: &str = "apiVersion: example.com/v1\nkind: Child\nmetadata: {name: c}\n";

    #[test]
    fn dependencies_come_first_and_other_files_are_left() {
        let snapshot = Snapshot::hashed(vec![
            file("s/platform/resources/a.yaml", CHILD),
            file("s/platform/dependencies/z.yaml", CHILD),
            file("s/platform/resources/notes.txt", "hello"),
            file("s/platform/elsewhere/x.yaml", CHILD),
        ]);
        let folder = documents(snapshot, &key("s/platform"), true, &Limits::default());
        let sources: Vec<&str> = folder.documents.iter().map(|d| d.source.as_str()).collect();
        assert_eq!(
            sources,
            [
                "s/platform/dependencies/z.yaml",
                "s/platform/resources/a.yaml"
            ]
        );
        assert!(folder.unreadable.is_empty());
        assert_eq!(folder.revision.len(), 64);
    }

    #[test]
    fn broken_files_and_documents_are_named() {
        let snapshot = Snapshot::hashed(vec![
            file("p/resources/bad.yaml", "a: [\n"),
            file(
                "p/resources/two.yaml",
                &format!("{CHILD}---\nkind: Child\nmetadata: {{name: d}}\n"),
            ),
        ]);
        let folder = documents(snapshot, &key("p"), true, &Limits::default());
        assert_eq!(folder.documents.len(), 1);
        let reasons: Vec<&str> = folder
            .unreadable
            .iter()
            .map(|u| u.reason.as_str())
            .collect();
        assert!(
            reasons[0].starts_with("p/resources/bad.yaml document 1: invalid YAML"),
            "{reasons:?}"
        );
        assert_eq!(
            reasons[1],
            "p/resources/two.yaml document 2 (Child d): apiVersion: required"
        );
    }

    #[test]
    fn flat_modes_read_the_whole_folder_but_kratix_records() {
        let snapshot = Snapshot::hashed(vec![
            file("p/a.yaml", CHILD),
            file("p/.kratix/default-x.yaml", "files: []\n"),
        ]);
        let folder = documents(snapshot, &key("p"), false, &Limits::default());
        assert_eq!(folder.documents.len(), 1);
        assert!(folder.unreadable.is_empty());
    }
}
