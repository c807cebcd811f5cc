//! Repositories on this machine, written in place.
//!
//! NB: libgit2's push over `file://` overwrites the branch without comparing its old value, so
//! two writers could lose each other's commits. Instead we write objects straight into the
//! repository and move the branch with a locked compare-and-swap, which is what `git push` to a
//! local repository amounts to, and interoperates with git's own lock files.

use super::error::GitError;
use super::Publish;
use gix::refs::transaction::{Change, LogChange, PreviousValue, RefEdit, RefLog};
use gix::refs::Target;
use gix::ObjectId;
use std::path::Path;

pub(crate) fn open(path: &Path) -> Result<gix::Repository, GitError> {
    // Isolated: the user's and system's git configuration must not change what we write.
    gix::open_opts(path, gix::open::Options::isolated()).map_err(|e| GitError::OpenRepository {
        path: path.to_path_buf(),
        source: Box::new(e),
    })
}

/// Creates a bare repository whose HEAD names `branch`, unless one is there already.
pub(crate) fn ensure_bare(path: &Path, branch: &str) -> Result<(), GitError> {
    let is_empty_or_missing = match std::fs::read_dir(path) {
        Ok(mut entries) => entries.next().is_none(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
        Err(e) => {
            return Err(GitError::OpenRepository {
                path: path.to_path_buf(),
                source: Box::new(e),
            })
        }
    };
    if !is_empty_or_missing {
        return open(path).map(drop);
    }
    let mut options = git2::RepositoryInitOptions::new();
    options
        .bare(true)
        .mkpath(true)
        .initial_head(&format!("refs/heads/{branch}"));
    git2::Repository::init_opts(path, &options)
        .map(drop)
        .map_err(|source| GitError::InitRepository {
            path: path.to_path_buf(),
            source,
        })
}

pub(crate) fn branch_ref(branch: &str) -> String {
    format!("refs/heads/{branch}")
}

/// The branch's tip, `None` while it does not exist.
pub(crate) fn tip(repo: &gix::Repository, branch: &str) -> Result<Option<ObjectId>, GitError> {
    reference_tip(repo, &branch_ref(branch))
}

/// Where the reference `name` points, `None` while it does not exist.
pub(crate) fn reference_tip(
    repo: &gix::Repository,
    name: &str,
) -> Result<Option<ObjectId>, GitError> {
    let read = |e: gix::Error| GitError::ReadBranch(Box::new(e));
    let Some(mut reference) = repo.try_find_reference(name).map_err(read)? else {
        return Ok(None);
    };
    Ok(Some(reference.peel_to_id().map_err(read)?.detach()))
}

/// Moves `branch` from `expected` to `commit` only if it still points at `expected`.
pub(crate) fn compare_and_swap(
    repo: &gix::Repository,
    branch: &str,
    expected: Option<ObjectId>,
    commit: ObjectId,
) -> Result<Publish, GitError> {
    let name = gix::refs::FullName::try_from(branch_ref(branch))
        .map_err(|e| GitError::UpdateBranch(Box::new(e)))?;
    let edit = RefEdit {
        change: Change::Update {
            log: LogChange {
                mode: RefLog::AndReference,
                force_create_reflog: false,
                message: "kratix-rs: write".into(),
            },
            expected: match expected {
                Some(previous) => PreviousValue::MustExistAndMatch(Target::Object(previous)),
                None => PreviousValue::MustNotExist,
            },
            new: Target::Object(commit),
        },
        name,
        deref: false,
    };
    let committer = gix::actor::Signature {
        name: "kratix-rs".into(),
        email: "".into(),
        time: gix::date::Time::now_local_or_utc(),
    };
    let mut time = gix::date::parse::TimeBuf::default();
    match repo.edit_references_as(Some(edit), Some(committer.to_ref(&mut time))) {
        Ok(_) => Ok(Publish::Done),
        Err(err) => {
            // Either someone moved the branch (or holds its lock), which a retry resolves, or the
            // repository refuses us, which the retry loop reports once it sees the tip unchanged.
            Ok(Publish::Rejected(Box::new(err)))
        }
    }
}

/// Proves we may write to the repository: refs are what a write changes. Leaves nothing behind.
pub(crate) fn check_write(path: &Path) -> Result<(), GitError> {
    let repo = open(path)?;
    tempfile::Builder::new()
        .prefix(".kratix-access-check-")
        .tempfile_in(repo.path().join("refs"))
        .map(drop)
        .map_err(GitError::CheckAccess)
}
