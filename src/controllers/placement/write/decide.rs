//! What one write of a batch of placements does, with no I/O: from each placement's files and
//! what it owns, the records to store first, the changes the commit carries; from what the
//! store did, each placement's new status and event.

use std::collections::BTreeSet;

use bytes::Bytes;
use statestores::{Change, Key};

use crate::api::WorkPlacementStatus;
use crate::controllers::placement::conditions::written_conditions;
use crate::controllers::placement::invalid::Invalid;
use crate::controllers::placement::layout::FileBytes;
use crate::controllers::placement::plan;
use crate::controllers::placement::summary::LastWrite;
use crate::controllers::status_value as status;

/// One placement of the batch, as observed.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Member {
    pub(super) name: String,
    /// The paths its status owns or is about to own.
    pub(super) owned: BTreeSet<String>,
    /// The files it should have (none when it is being deleted).
    pub(super) desired: Vec<FileBytes>,
}

/// What the write observed besides its placements.
#[derive(Debug, Default)]
pub(super) struct Observed<'a> {
    pub(super) members: &'a [Member],
    /// Mode `aggregatedYAML`: the Destination's one file, and its content (`None` when no
    /// placement is left, and it goes).
    pub(super) aggregated: Option<(String, Option<Vec<u8>>)>,
    /// Mode `none`: the paths each other live placement on the Destination owns (they all
    /// write flat, so no two may claim one path).
    pub(super) others: &'a [(String, Vec<String>)],
}

/// What the write does before and in its commit.
#[derive(Debug, PartialEq)]
pub(super) struct Planned {
    /// Per member (in order): the owned paths to record before the commit, when it is about to
    /// write a path it does not own yet — so that a crash never leaves a file of ours that no
    /// record claims.
    pub(super) pending: Vec<Option<Vec<String>>>,
    pub(super) changes: Vec<Change>,
    /// Whether the commit puts files (else it only deletes).
    pub(super) puts: bool,
}

/// Plans the write, or says why the placements cannot be written as they are.
pub(super) fn plan_write(o: &Observed) -> Result<Planned, Invalid> {
    let mut desired_all: Vec<FileBytes> = Vec::new();
    let mut owned_all: BTreeSet<String> = BTreeSet::new();
    for m in o.members {
        owned_all.extend(m.owned.iter().cloned());
        desired_all.extend(m.desired.iter().cloned());
    }
    match &o.aggregated {
        Some((path, Some(bytes))) => desired_all.push((path.clone(), bytes.clone())),
        Some((path, None)) => {
            owned_all.insert(path.clone());
        }
        None => {}
    }
    let mut claims: Vec<(String, Vec<String>)> = o
        .members
        .iter()
        .map(|m| (m.name.clone(), paths(&m.desired)))
        .collect();
    let in_batch: BTreeSet<&str> = o.members.iter().map(|m| m.name.as_str()).collect();
    claims.extend(
        o.others
            .iter()
            .filter(|(name, _)| !in_batch.contains(name.as_str()))
            .cloned(),
    );
    plan::check_collisions(&claims)?;
    let owned_list: Vec<String> = owned_all.into_iter().collect();
    let planned = plan::plan(&desired_all, &owned_list);
    let pending = o
        .members
        .iter()
        .map(|m| {
            m.desired
                .iter()
                .any(|(p, _)| !m.owned.contains(p))
                .then(|| {
                    let all: BTreeSet<String> =
                        m.owned.iter().cloned().chain(paths(&m.desired)).collect();
                    all.into_iter().collect()
                })
        })
        .collect();
    let mut changes = Vec::with_capacity(planned.puts.len() + planned.deletes.len());
    for (path, bytes) in &planned.puts {
        changes.push(Change::Put(Key::parse(path)?, Bytes::from(bytes.clone())));
    }
    for path in &planned.deletes {
        changes.push(Change::Delete(Key::parse(path)?));
    }
    Ok(Planned {
        pending,
        changes,
        puts: !planned.puts.is_empty(),
    })
}

fn paths(files: &[FileBytes]) -> Vec<String> {
    files.iter().map(|(p, _)| p.clone()).collect()
}

/// What the store did in the commit.
#[derive(Debug, Default)]
pub(super) struct Written {
    pub(super) written: BTreeSet<String>,
    pub(super) deleted: BTreeSet<String>,
    pub(super) version: Option<String>,
}

/// What one placement records once the commit is in.
#[derive(Debug, PartialEq)]
pub(super) enum After {
    /// It was being deleted and its files are gone: its finalizer goes.
    Release,
    /// Its status records the files written, and its event says what changed.
    Record(Record),
}

/// A written placement's new status fields.
#[derive(Debug, PartialEq)]
pub(super) struct Record {
    pub(super) files: Vec<String>,
    pub(super) last: LastWrite,
    pub(super) generation: Option<i64>,
    pub(super) misplaced: bool,
}

/// Decides what `member` records after the commit; `before` is the files its status listed.
pub(super) fn after_write(
    member: &Member,
    deleting: bool,
    before: &[String],
    generation: Option<i64>,
    misplaced: bool,
    written: &Written,
) -> After {
    if deleting {
        return After::Release;
    }
    let files = paths(&member.desired);
    let last = LastWrite::of(
        before,
        &files,
        &written.written,
        &written.deleted,
        written.version.clone(),
    );
    After::Record(Record {
        files,
        last,
        generation,
        misplaced,
    })
}

impl Record {
    /// Sets the record on the placement's status; its pending files are written now.
    pub(super) fn apply(&self, s: &mut WorkPlacementStatus) {
        if !self.last.is_empty() {
            s.extra.insert(
                "lastWrite".into(),
                serde_json::to_value(&self.last).unwrap_or_default(),
            );
        }
        s.files = Some(self.files.clone());
        s.pending_files = None;
        if let Some(v) = &self.last.version {
            s.version_id = Some(v.clone());
        }
        s.observed_generation = self.generation;
        status::merge_conditions(&mut s.conditions, written_conditions(self.misplaced));
    }

    /// The `WorkWritten` event's message, when the write changed any of its files.
    pub(super) fn event(&self, destination: &str) -> Option<String> {
        (!self.last.is_empty()).then(|| self.last.message(destination))
    }
}

#[cfg(test)]
mod tests;
