//! Git objects: building a commit from the previous tip by editing only the changed paths, and
//! reading files and listings from a tip. No work tree, no index: a write costs in proportion to
//! the number of changes and the depth of their paths, not to the size of the repository.

use super::error::GitError;
use crate::{Change, Key, WriteInfo};
use gix::objs::tree::EntryKind;
use gix::ObjectId;

type Boxed = Box<dyn std::error::Error + Send + Sync>;

fn read_err(e: impl Into<Boxed>) -> GitError {
    GitError::ReadObjects(e.into())
}

fn write_err(e: impl Into<Boxed>) -> GitError {
    GitError::WriteObjects(e.into())
}

/// A new tree, and which keys it changed relative to its base.
#[derive(Debug)]
pub(crate) struct Edited {
    pub tree: ObjectId,
    pub written: Vec<Key>,
    pub deleted: Vec<Key>,
}

/// The tree of commit `tip`, or the empty tree for an unborn branch.
fn tree_of(repo: &gix::Repository, tip: Option<ObjectId>) -> Result<ObjectId, GitError> {
    match tip {
        None => Ok(ObjectId::empty_tree(repo.object_hash())),
        Some(commit) => Ok(repo
            .find_commit(commit)
            .map_err(read_err)?
            .tree_id()
            .map_err(read_err)?
            .detach()),
    }
}

/// What sits at a path of a tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AtPath {
    Nothing,
    File(ObjectId),
    Folder,
}

fn at_path(tree: &gix::Tree<'_>, path: &str) -> Result<AtPath, GitError> {
    Ok(
        match tree.lookup_entry(path.split('/')).map_err(read_err)? {
            None => AtPath::Nothing,
            Some(entry) if entry.mode().is_tree() => AtPath::Folder,
            Some(entry) => AtPath::File(entry.object_id()),
        },
    )
}

/// Applies `changes` to the tree of `tip`, skipping puts of identical content and deletes of
/// absent keys. Returns `None` when nothing differs. New blobs and trees are written to `repo`.
pub(crate) fn edit(
    repo: &gix::Repository,
    tip: Option<ObjectId>,
    changes: &[Change],
) -> Result<Option<Edited>, GitError> {
    let base_id = tree_of(repo, tip)?;
    let base = repo.find_tree(base_id).map_err(read_err)?;
    let mut editor = base.edit().map_err(write_err)?;
    let mut written = Vec::new();
    let mut deleted = Vec::new();
    for change in changes {
        let path = change.key().as_str();
        match change {
            Change::Put(key, content) => {
                refuse_file_above(&base, key)?;
                let id =
                    gix::objs::compute_hash(repo.object_hash(), gix::objs::Kind::Blob, content)
                        .map_err(write_err)?;
                match at_path(&base, path)? {
                    AtPath::File(existing) if existing == id => continue,
                    // NB: upserting over a folder would silently drop every file below it.
                    AtPath::Folder => {
                        return Err(GitError::PathConflict {
                            path: path.to_string(),
                        })
                    }
                    AtPath::File(_) | AtPath::Nothing => {}
                }
                let id = repo.write_blob(content).map_err(write_err)?.detach();
                editor
                    .upsert(path, EntryKind::Blob, id)
                    .map_err(write_err)?;
                written.push(key.clone());
            }
            Change::Delete(key) => {
                if let AtPath::File(_) = at_path(&base, path)? {
                    editor.remove(path).map_err(write_err)?;
                    deleted.push(key.clone());
                }
            }
        }
    }
    if written.is_empty() && deleted.is_empty() {
        return Ok(None);
    }
    let tree = editor.write().map_err(write_err)?.detach();
    Ok(Some(Edited {
        tree,
        written,
        deleted,
    }))
}

/// A put below an existing file (`a` is a file, put `a/b`) would replace that file by a folder.
fn refuse_file_above(base: &gix::Tree<'_>, key: &Key) -> Result<(), GitError> {
    let segments: Vec<&str> = key.segments().collect();
    for depth in 1..segments.len() {
        let above = segments[..depth].join("/");
        if let AtPath::File(_) = at_path(base, &above)? {
            return Err(GitError::PathConflict { path: above });
        }
    }
    Ok(())
}

/// Writes the commit object for `tree` on top of `parent` (no reference is touched).
pub(crate) fn commit(
    repo: &gix::Repository,
    tree: ObjectId,
    parent: Option<ObjectId>,
    info: &WriteInfo,
) -> Result<ObjectId, GitError> {
    let signature = gix::actor::Signature {
        name: info.author_name.as_str().into(),
        email: info.author_email.as_str().into(),
        time: gix::date::Time::now_local_or_utc(),
    };
    let mut message = info.message.clone();
    if !message.ends_with('\n') {
        message.push('\n');
    }
    let commit = gix::objs::Commit {
        tree,
        parents: parent.into_iter().collect(),
        author: signature.clone(),
        committer: signature,
        encoding: None,
        message: message.into(),
        extra_headers: Vec::new(),
    };
    Ok(repo.write_object(&commit).map_err(write_err)?.detach())
}

/// The content of `key` at `tip`; `None` when absent or a folder.
pub(crate) fn read(
    repo: &gix::Repository,
    tip: Option<ObjectId>,
    key: &Key,
) -> Result<Option<Vec<u8>>, GitError> {
    if key.is_root() {
        return Ok(None);
    }
    let tree = repo.find_tree(tree_of(repo, tip)?).map_err(read_err)?;
    match at_path(&tree, key.as_str())? {
        AtPath::File(id) => {
            let mut blob = repo.find_blob(id).map_err(read_err)?;
            Ok(Some(blob.take_data()))
        }
        AtPath::Nothing | AtPath::Folder => Ok(None),
    }
}

/// Every file at or under `prefix` at `tip`, sorted.
pub(crate) fn list(
    repo: &gix::Repository,
    tip: Option<ObjectId>,
    prefix: &Key,
) -> Result<Vec<Key>, GitError> {
    let root = repo.find_tree(tree_of(repo, tip)?).map_err(read_err)?;
    let start = if prefix.is_root() {
        root.id
    } else {
        match root.lookup_entry(prefix.segments()).map_err(read_err)? {
            None => return Ok(Vec::new()),
            Some(entry) if entry.mode().is_tree() => entry.object_id(),
            Some(entry) if entry.mode().is_commit() => return Ok(Vec::new()),
            Some(_) => return Ok(vec![prefix.clone()]),
        }
    };
    let mut found = Vec::new();
    walk(repo, start, prefix, &mut found)?;
    // Git orders `a.yaml` after `a/` in trees; callers want plain key order.
    found.sort();
    Ok(found)
}

fn walk(
    repo: &gix::Repository,
    tree: ObjectId,
    at: &Key,
    found: &mut Vec<Key>,
) -> Result<(), GitError> {
    let tree = repo.find_tree(tree).map_err(read_err)?;
    let decoded = tree.decode().map_err(read_err)?;
    for entry in &decoded.entries {
        let Ok(name) = std::str::from_utf8(entry.filename) else {
            // Keys are UTF-8; a file written by someone else with another name is not ours.
            continue;
        };
        let Ok(child) = at.join(name) else {
            continue;
        };
        if entry.mode.is_tree() {
            walk(repo, entry.oid.to_owned(), &child, found)?;
        } else if !entry.mode.is_commit() {
            found.push(child);
        }
    }
    Ok(())
}
