//! Writes: each caller's changes become one commit; the writes queued while another operation
//! held the handle are chained one commit each on the tip and published with one push.
//!
//! A write starts from the tip the cache last saw instead of fetching first: the push checks
//! that the remote is still there (see [`super::network::push`]), and only a refusal, or a
//! write that would change nothing, costs a fetch.

use super::error::GitError;
use super::{local, network, tree, Inner, Location, Publish};
use crate::error_chain::ErrorChain;
use crate::{Change, Version, WriteInfo, WriteOutcome};
use gix::ObjectId;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::Duration;
use tokio::sync::oneshot;

/// Bytes of decoded objects a write keeps at hand while it builds its trees.
const WRITE_OBJECT_CACHE: usize = 8 << 20;

/// A write waiting for the next push.
#[derive(Debug)]
pub(super) struct Queued {
    id: u64,
    changes: Vec<Change>,
    info: WriteInfo,
    reply: oneshot::Sender<Result<WriteOutcome, GitError>>,
}

/// Takes a write back out of the queue when dropped, unless an operation took it already.
pub(super) struct Unqueue<'a> {
    inner: &'a Inner,
    id: u64,
}

impl<'a> Unqueue<'a> {
    pub(super) fn new(inner: &'a Inner, id: u64) -> Self {
        Self { inner, id }
    }
}

impl Drop for Unqueue<'_> {
    fn drop(&mut self) {
        self.inner.dequeue(self.id);
    }
}

/// What one write came to on the tip it was built on: a commit, nothing to change, or its own
/// failure (which fails no other write of the batch).
enum Built {
    Commit { id: ObjectId, edited: tree::Edited },
    Unchanged,
    Failed(GitError),
}

/// The writes of a batch built on one tip: `head` is the last commit of the chain.
struct Chain {
    head: Option<ObjectId>,
    built: Vec<Built>,
}

impl Chain {
    /// Whether every write made a commit: then the push alone checks them against the remote.
    fn all_committed(&self) -> bool {
        self.built.iter().all(|b| matches!(b, Built::Commit { .. }))
    }

    /// How many commits the chain adds.
    fn commits(&self) -> usize {
        self.built
            .iter()
            .filter(|b| matches!(b, Built::Commit { .. }))
            .count()
    }
}

/// The tip a batch builds on, and whether it was just read from the remote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Base {
    tip: Option<ObjectId>,
    fresh: bool,
}

impl Inner {
    /// Adds a write to the queue; its outcome arrives on the receiver.
    pub(super) fn enqueue(
        &self,
        changes: Vec<Change>,
        info: WriteInfo,
    ) -> (u64, oneshot::Receiver<Result<WriteOutcome, GitError>>) {
        let (reply, answer) = oneshot::channel();
        let id = self.next_write.fetch_add(1, Ordering::Relaxed);
        self.queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Queued {
                id,
                changes,
                info,
                reply,
            });
        (id, answer)
    }

    /// Takes the write `id` back if no operation has taken it yet.
    fn dequeue(&self, id: u64) {
        self.queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|queued| queued.id != id);
    }

    /// Writes everything queued so far, in order, and answers each write.
    pub(super) fn write_queued(&self) {
        let batch = std::mem::take(&mut *self.queue.lock().unwrap_or_else(PoisonError::into_inner));
        if batch.is_empty() {
            return;
        }
        let writes: Vec<(&[Change], &WriteInfo)> = batch
            .iter()
            .map(|q| (q.changes.as_slice(), &q.info))
            .collect();
        match self.write_batch(&writes) {
            Ok(outcomes) => {
                for (queued, outcome) in batch.into_iter().zip(outcomes) {
                    // NB: a caller that stopped waiting has nobody to tell.
                    let _ = queued.reply.send(outcome);
                }
            }
            Err(err) => {
                let shared = Arc::new(err);
                for queued in batch {
                    let _ = queued
                        .reply
                        .send(Err(GitError::Shared(Arc::clone(&shared))));
                }
            }
        }
    }

    /// The tip to build on without asking the remote: the local branch itself, or the tip the
    /// cache last fetched or pushed; asks the remote when the cache has never seen the branch.
    fn base(&self) -> Result<Base, GitError> {
        let seen = match &self.location {
            Location::Local(_) => return self.fresh_base(),
            Location::Remote(_) => local::reference_tip(
                &local::open(&self.objects)?,
                &network::tracking_ref(self.branch()),
            )?,
        };
        match seen {
            Some(tip) => Ok(Base {
                tip: Some(tip),
                fresh: false,
            }),
            None => self.fresh_base(),
        }
    }

    fn fresh_base(&self) -> Result<Base, GitError> {
        Ok(Base {
            tip: self.sync()?,
            fresh: true,
        })
    }

    /// Commits every write on the branch and publishes them at once. The outer error fails the
    /// whole batch; a write's own failure (say, a path conflict) is its outcome alone.
    fn write_batch(
        &self,
        writes: &[(&[Change], &WriteInfo)],
    ) -> Result<Vec<Result<WriteOutcome, GitError>>, GitError> {
        let retries = self.options.push_retries;
        let mut base = self.base()?;
        let mut attempts = 0;
        let mut refusals_on_unmoved_tip = 0;
        loop {
            let mut repo = local::open(&self.objects)?;
            // NB: every changed path is looked up from the root, several times; without a cache
            // each look-up decodes (and for a packed tree, re-applies the deltas of) its trees.
            repo.object_cache_size_if_unset(WRITE_OBJECT_CACHE);
            // Re-built on every attempt: on a moved tip, some changes may be no-ops now.
            let chain = build(&repo, base.tip, writes);
            // NB: on a tip that may be stale, only a commit is checked by the push; a write that
            // changes nothing (or fails) there must be judged on the remote's real tip.
            if !base.fresh && !chain.all_committed() {
                base = self.fresh_base()?;
                continue;
            }
            let Some(head) = chain.head.filter(|head| Some(*head) != base.tip) else {
                return Ok(outcomes(chain.built));
            };
            crate::crash::crash_point("git-after-commit");
            let reason = match self.publish(&repo, base.tip, head)? {
                Publish::Done => {
                    self.tell(|e| e.pushed(chain.commits()));
                    return Ok(outcomes(chain.built));
                }
                Publish::Rejected(reason) => reason,
            };
            self.tell(|e| e.conflict());
            tracing::debug!(store = %self.label, attempts, reason = %ErrorChain(&*reason), "branch moved; re-applying");
            // A guess from the cache that turned out stale is not contention: no wait, no count.
            if base.fresh {
                attempts += 1;
                if attempts > retries {
                    return Err(GitError::Contended { attempts });
                }
                std::thread::sleep(backoff(attempts - 1, fastrand::f64()));
                self.tell(|e| e.retry());
            }
            let previous = base.tip;
            base = self.fresh_base()?;
            refusals_on_unmoved_tip = refused_again(refusals_on_unmoved_tip, previous, base.tip);
            // NB: once may be a lock held by a writer that has not finished; twice in a row on a
            // branch that never moved is a refusal, not contention.
            if refusals_on_unmoved_tip >= 2 {
                return Err(GitError::PushRefused(reason));
            }
        }
    }

    fn tell(&self, event: impl FnOnce(&dyn crate::PushEvents)) {
        if let Some(events) = &self.events {
            event(events.as_ref());
        }
    }

    fn publish(
        &self,
        repo: &gix::Repository,
        base: Option<ObjectId>,
        commit: ObjectId,
    ) -> Result<Publish, GitError> {
        match &self.location {
            Location::Local(_) => local::compare_and_swap(repo, self.branch(), base, commit),
            Location::Remote(remote) => network::push(
                &self.objects,
                remote,
                self.branch(),
                &self.options,
                base.map(super::to_git2),
                super::to_git2(commit),
            ),
        }
    }
}

/// Builds each write as one commit on top of the previous one, starting at `tip`.
fn build(
    repo: &gix::Repository,
    tip: Option<ObjectId>,
    writes: &[(&[Change], &WriteInfo)],
) -> Chain {
    let mut head = tip;
    let mut built = Vec::with_capacity(writes.len());
    for (changes, info) in writes {
        let one = match tree::edit(repo, head, changes) {
            Ok(None) => Built::Unchanged,
            Ok(Some(edited)) => match tree::commit(repo, edited.tree, head, info) {
                Ok(id) => {
                    head = Some(id);
                    Built::Commit { id, edited }
                }
                Err(err) => Built::Failed(err),
            },
            Err(err) => Built::Failed(err),
        };
        built.push(one);
    }
    Chain { head, built }
}

fn outcomes(built: Vec<Built>) -> Vec<Result<WriteOutcome, GitError>> {
    built
        .into_iter()
        .map(|b| match b {
            Built::Commit { id, edited } => Ok(WriteOutcome {
                version: Some(Version(id.to_string())),
                written: edited.written,
                deleted: edited.deleted,
            }),
            Built::Unchanged => Ok(WriteOutcome::default()),
            Built::Failed(err) => Err(err),
        })
        .collect()
}

/// How many refusals in a row came on a branch that did not move in between.
fn refused_again(so_far: u32, before: Option<ObjectId>, after: Option<ObjectId>) -> u32 {
    if before == after {
        so_far + 1
    } else {
        0
    }
}

/// How long to wait before re-applying after the `attempt`-th rejection (0-based), given a
/// random `jitter` in `[0, 1)`: exponential from 50 ms, capped at 2 s, then scaled into
/// `[50%, 100%)` so that writers who collided do not collide again in step.
fn backoff(attempt: u32, jitter: f64) -> Duration {
    let base = Duration::from_millis(50)
        .saturating_mul(1u32 << attempt.min(6))
        .min(Duration::from_secs(2));
    base.mul_f64(0.5 + jitter.clamp(0.0, 1.0) * 0.5)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_is_capped_and_jittered() {
        let cases = [
            (0, 0.0, 25),
            (0, 0.999_999, 49),
            (1, 0.0, 50),
            (3, 0.0, 200),
            (6, 0.0, 1000),
            (9, 0.0, 1000),
            (40, 0.5, 1500),
        ];
        for (attempt, jitter, want_ms) in cases {
            assert_eq!(
                backoff(attempt, jitter).as_millis(),
                want_ms,
                "{attempt} {jitter}"
            );
        }
    }

    #[test]
    fn refusals_count_only_while_the_branch_stands_still() {
        let a = Some(ObjectId::empty_tree(gix::hash::Kind::Sha1));
        let b = Some(ObjectId::empty_blob(gix::hash::Kind::Sha1));
        let cases = [
            (0, a, a, 1),
            (1, a, a, 2),
            (1, a, b, 0),
            (0, None, None, 1),
            (3, None, a, 0),
        ];
        for (so_far, before, after, want) in cases {
            assert_eq!(
                refused_again(so_far, before, after),
                want,
                "{so_far} {before:?} {after:?}"
            );
        }
    }

    /// What a store told its listener.
    #[derive(Debug, Default)]
    struct Heard(std::sync::Mutex<Vec<String>>);

    impl crate::PushEvents for Heard {
        fn pushed(&self, commits: usize) {
            self.0
                .lock()
                .expect("events")
                .push(format!("pushed {commits}"));
        }
        fn conflict(&self) {
            self.0.lock().expect("events").push("conflict".into());
        }
        fn retry(&self) {
            self.0.lock().expect("events").push("retry".into());
        }
    }

    /// Writes queued together: one commit each, in order, on top of each other, published as
    /// one chain; a write that fails or changes nothing costs the others nothing.
    #[test]
    fn queued_writes_chain_one_commit_each() {
        use crate::conformance::{info, key, put};
        let dir = tempfile::tempdir().expect("tempdir");
        let events = Arc::new(Heard::default());
        let git = super::super::Git::open_with_events(
            super::super::GitOptions::new(dir.path().display().to_string(), "main"),
            Some(events.clone()),
        )
        .expect("open");
        let inner = &git.inner;
        let mut answers = [
            inner.enqueue(vec![put("a/one.yaml", "1")], info("first")).1,
            // `a/one.yaml` is a file: nothing can go below it.
            inner
                .enqueue(vec![put("a/one.yaml/x", "x")], info("conflict"))
                .1,
            inner
                .enqueue(vec![put("a/one.yaml", "1")], info("same again"))
                .1,
            inner
                .enqueue(vec![put("b/two.yaml", "2")], info("second"))
                .1,
        ];
        inner.write_queued();
        let mut outcomes: Vec<_> = answers
            .iter_mut()
            .map(|a| a.try_recv().expect("answered"))
            .collect();
        let second = outcomes.pop().expect("4").expect("second lands");
        let same = outcomes.pop().expect("3").expect("no-op");
        let conflict = outcomes.pop().expect("2").expect_err("conflict fails");
        let first = outcomes.pop().expect("1").expect("first lands");
        assert!(
            matches!(conflict, GitError::PathConflict { .. }),
            "{conflict:?}"
        );
        // One push carried both commits; nothing was refused.
        assert_eq!(*events.0.lock().expect("events"), ["pushed 2"]);
        assert_eq!(same, WriteOutcome::default());
        assert_eq!(first.written, [key("a/one.yaml")]);
        assert_eq!(second.written, [key("b/two.yaml")]);

        let repo = local::open(dir.path()).expect("repo");
        let tip = local::tip(&repo, "main").expect("tip").expect("a branch");
        let tip_commit = repo.find_commit(tip).expect("commit");
        assert_eq!(Some(Version(tip.to_string())), second.version);
        let parent = tip_commit.parent_ids().next().expect("a parent").detach();
        assert_eq!(Some(Version(parent.to_string())), first.version);
        assert_eq!(
            repo.find_commit(parent)
                .expect("first")
                .parent_ids()
                .count(),
            0,
            "the first commit starts the branch"
        );
        assert!(tip_commit.message_raw_sloppy().starts_with(b"second"));
    }
}
