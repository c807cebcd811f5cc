//! A work queue of object keys, each due at some instant, with per-key failure backoff. Adding,
//! taking and peeking cost a logarithm of the queue's length, however many keys wait.
//!
//! Several workers take keys from it at once, but never two the same key: a key taken is busy
//! until [`Queue::finish`]; one that comes due meanwhile waits and is due once more when it is
//! finished (what changed while it was being reconciled may not have been seen).
//!
//! Each key is queued with a [`Reason`], kept (merged, see [`Reason::merge`]) until it is taken,
//! so that the reconcile can say why it runs.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

use crate::api::ObjectKey;

/// Why a key is queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Reason {
    /// The object itself changed.
    Change,
    /// Something it waits on changed (one of its dependants: a request's PipelineRun or Work,
    /// a Work's placement, a Promise it requires, ...).
    Owner,
    /// Its last reconcile failed: the retry after the backoff.
    Retry,
    /// Its last reconcile asked to be looked at again after a while (`Next::After`).
    Requeue,
    /// Everything is looked at: at start-up, on each periodic resync, after the change feed
    /// was lost.
    Resync,
}

impl Reason {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Reason::Change => "change",
            Reason::Owner => "owner",
            Reason::Retry => "retry",
            Reason::Requeue => "requeue",
            Reason::Resync => "resync",
        }
    }

    /// The reason of a key queued for `self` and again for `other` before it is taken: the more
    /// specific of the two, the one that says most about what the reconcile will find.
    ///
    /// | rank | reason  | why it wins over those below |
    /// |------|---------|------------------------------|
    /// | 1    | change  | the object's own change is what the reconcile acts on |
    /// | 2    | owner   | a dependant changed: new facts, where a retry or requeue brings none |
    /// | 3    | retry   | says the last reconcile failed, which a requeue does not |
    /// | 4    | requeue | the reconcile itself asked for this one |
    /// | 5    | resync  | everything is queued: says nothing of this object |
    ///
    /// The due time is merged on its own (the sooner wins); the sooner is always the change
    /// or the owner's change when one of those meets a delayed retry or requeue.
    pub(crate) fn merge(self, other: Reason) -> Reason {
        if other.rank() < self.rank() {
            other
        } else {
            self
        }
    }

    fn rank(self) -> u8 {
        match self {
            Reason::Change => 1,
            Reason::Owner => 2,
            Reason::Retry => 3,
            Reason::Requeue => 4,
            Reason::Resync => 5,
        }
    }
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Default)]
pub(crate) struct Queue {
    /// When each queued key is due, and why it is queued.
    due: HashMap<ObjectKey, (Instant, Reason)>,
    /// The same entries ordered by when they are due (then by key, so that every entry is
    /// distinct).
    order: BTreeSet<(Instant, ObjectKey)>,
    /// Keys looked at only when nothing else is due (everything, at start-up and on each
    /// resync), so that a change made meanwhile is not queued behind the whole home.
    background: VecDeque<ObjectKey>,
    in_background: HashSet<ObjectKey>,
    failures: HashMap<ObjectKey, u32>,
    /// Keys taken and not finished yet.
    busy: HashSet<ObjectKey>,
    /// Busy keys that came due meanwhile, and why: due again once finished.
    again: HashMap<ObjectKey, Reason>,
}

impl Queue {
    /// Due now.
    pub(crate) fn add(&mut self, key: ObjectKey, reason: Reason) {
        self.add_at(key, Instant::now(), reason);
    }

    /// Due once nothing else is; for a [`Reason::Resync`].
    pub(crate) fn add_background(&mut self, key: ObjectKey) {
        if self.in_background.insert(key.clone()) {
            self.background.push_back(key);
        }
    }

    /// Due after `delay`, unless it is already due sooner.
    pub(crate) fn add_after(&mut self, key: ObjectKey, delay: Duration, reason: Reason) {
        self.add_at(key, Instant::now() + delay, reason);
    }

    /// Due at `at`, unless it is already due sooner; the reasons merge either way.
    fn add_at(&mut self, key: ObjectKey, at: Instant, reason: Reason) {
        let (at, reason) = match self.due.get(&key) {
            Some(&(queued, was)) => {
                self.order.remove(&(queued, key.clone()));
                (queued.min(at), was.merge(reason))
            }
            None => (at, reason),
        };
        self.order.insert((at, key.clone()));
        self.due.insert(key, (at, reason));
    }

    /// Takes the key that has been due the longest, else the oldest background key, and marks it
    /// busy until [`Queue::finish`]. A busy key is not taken again meanwhile.
    pub(crate) fn take(&mut self) -> Option<(ObjectKey, Reason)> {
        let (key, reason) = self.pop_due().or_else(|| self.pop_background())?;
        self.busy.insert(key.clone());
        Some((key, reason))
    }

    /// [`Queue::take`] of due keys only: background ones stay queued.
    pub(crate) fn take_due(&mut self) -> Option<(ObjectKey, Reason)> {
        let (key, reason) = self.pop_due()?;
        self.busy.insert(key.clone());
        Some((key, reason))
    }

    /// Marks a taken key as no longer busy; due again at once if it came due meanwhile.
    pub(crate) fn finish(&mut self, key: &ObjectKey) {
        self.busy.remove(key);
        if let Some(reason) = self.again.remove(key) {
            self.add(key.clone(), reason);
        }
    }

    /// The due key (background keys aside) due the longest that is not busy, if any; busy ones
    /// met on the way wait for their [`Queue::finish`].
    fn pop_due(&mut self) -> Option<(ObjectKey, Reason)> {
        loop {
            let (at, _) = self.order.first()?;
            if *at > Instant::now() {
                return None;
            }
            let (_, key) = self.order.pop_first()?;
            let Some((_, reason)) = self.due.remove(&key) else {
                continue;
            };
            self.in_background.remove(&key);
            if !self.defer_if_busy(&key, reason) {
                return Some((key, reason));
            }
        }
    }

    /// The oldest background key that is not busy, if any.
    fn pop_background(&mut self) -> Option<(ObjectKey, Reason)> {
        while let Some(key) = self.background.pop_front() {
            // Skipped if it was taken in the foreground since.
            if self.in_background.remove(&key) && !self.defer_if_busy(&key, Reason::Resync) {
                return Some((key, Reason::Resync));
            }
        }
        None
    }

    /// True when `key` is busy; it is then due again once finished, for `reason` merged with
    /// any it already waits for.
    fn defer_if_busy(&mut self, key: &ObjectKey, reason: Reason) -> bool {
        let busy = self.busy.contains(key);
        if busy {
            self.again
                .entry(key.clone())
                .and_modify(|was| *was = was.merge(reason))
                .or_insert(reason);
        }
        busy
    }

    pub(crate) fn time_to_next(&self) -> Option<Duration> {
        if !self.in_background.is_empty() {
            return Some(Duration::ZERO);
        }
        self.order
            .first()
            .map(|(at, _)| at.saturating_duration_since(Instant::now()))
    }

    /// How many keys are queued.
    pub(crate) fn len(&self) -> usize {
        self.due.len() + self.in_background.len()
    }

    /// Exponential backoff for a key whose reconcile failed: 1 s doubling to 2 min.
    pub(crate) fn failure_backoff(&mut self, key: &ObjectKey) -> Duration {
        let n = self.failures.entry(key.clone()).or_insert(0);
        *n = n.saturating_add(1);
        Duration::from_secs((1u64 << (*n - 1).min(7)).min(120))
    }

    pub(crate) fn forget_failures(&mut self, key: &ObjectKey) {
        self.failures.remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Reason::*;

    fn key(name: &str) -> ObjectKey {
        ObjectKey::new("g", "K", None, name)
    }

    fn names(taken: Option<(ObjectKey, Reason)>) -> Option<(String, Reason)> {
        taken.map(|(k, r)| (k.name, r))
    }

    #[test]
    fn the_more_specific_reason_wins() {
        let cases = [
            (Change, Owner, Change),
            (Change, Resync, Change),
            (Owner, Change, Change),
            (Owner, Retry, Owner),
            (Owner, Requeue, Owner),
            (Owner, Resync, Owner),
            (Retry, Requeue, Retry),
            (Retry, Owner, Owner),
            (Requeue, Resync, Requeue),
            (Resync, Requeue, Requeue),
            (Resync, Resync, Resync),
        ];
        for (first, then, want) in cases {
            assert_eq!(first.merge(then), want, "{first} then {then}");
        }
        // Whatever the order the reasons come in.
        let all = [Change, Owner, Retry, Requeue, Resync];
        for a in all {
            for b in all {
                assert_eq!(a.merge(b), b.merge(a), "{a} {b}");
            }
        }
    }

    #[test]
    fn due_keys_come_out_once_and_later_ones_wait() {
        let mut q = Queue::default();
        q.add(key("a"), Owner);
        q.add(key("a"), Change);
        q.add_after(key("b"), Duration::from_secs(3600), Requeue);
        assert_eq!(q.len(), 2);
        assert_eq!(q.pop_due(), Some((key("a"), Change)));
        assert_eq!(q.pop_due(), None);
        assert_eq!(q.len(), 1);
        assert!(q
            .time_to_next()
            .is_some_and(|d| d > Duration::from_secs(3000)));
    }

    #[test]
    fn keys_come_out_in_due_order_and_a_sooner_add_wins() {
        let mut q = Queue::default();
        let start = Instant::now();
        q.add_at(key("late"), start + Duration::from_millis(2), Change);
        q.add_at(key("early"), start + Duration::from_millis(1), Change);
        q.add_at(key("moved"), start + Duration::from_secs(3600), Retry);
        // Sooner wins; later is ignored.
        q.add_at(key("moved"), start, Owner);
        q.add_at(key("early"), start + Duration::from_secs(3600), Requeue);
        std::thread::sleep(Duration::from_millis(3));
        let order: Vec<(ObjectKey, Reason)> = std::iter::from_fn(|| q.pop_due()).collect();
        assert_eq!(
            order,
            vec![
                (key("moved"), Owner),
                (key("early"), Change),
                (key("late"), Change)
            ]
        );
        assert_eq!(q.len(), 0);
        assert_eq!(q.time_to_next(), None);
    }

    #[test]
    fn background_keys_wait_for_due_ones_and_come_out_once() {
        let mut q = Queue::default();
        q.add_background(key("old-1"));
        q.add_background(key("old-2"));
        q.add_background(key("old-1"));
        q.add(key("new"), Change);
        q.add_after(key("later"), Duration::from_secs(3600), Requeue);
        assert_eq!(q.time_to_next(), Some(Duration::ZERO));
        assert_eq!(q.pop_due(), Some((key("new"), Change)));
        assert_eq!(q.pop_due(), None);
        assert_eq!(q.pop_background(), Some((key("old-1"), Resync)));
        // Taken in the foreground: not again in the background.
        q.add(key("old-2"), Owner);
        assert_eq!(q.pop_due(), Some((key("old-2"), Owner)));
        assert_eq!(q.pop_background(), None);
        assert_eq!(q.len(), 1);
    }

    /// What a step of the workers does to the queue.
    #[derive(Debug, Clone, Copy)]
    enum Step {
        Add(&'static str, Reason),
        Background(&'static str),
        /// Takes a key and expects this one, for this reason (or nothing).
        Take(Option<(&'static str, Reason)>),
        Finish(&'static str),
    }

    #[test]
    fn a_busy_key_is_never_taken_twice_and_runs_once_more_when_finished() {
        use Step::*;
        let cases: &[(&str, &[Step])] = &[
            (
                "added while busy: waits, then due once",
                &[
                    Add("a", Change),
                    Take(Some(("a", Change))),
                    Add("a", Owner),
                    Add("a", Owner),
                    Take(None),
                    Finish("a"),
                    Take(Some(("a", Owner))),
                    Take(None),
                ],
            ),
            (
                "added while busy for several reasons: the most specific",
                &[
                    Add("a", Owner),
                    Take(Some(("a", Owner))),
                    Add("a", Owner),
                    Take(None),
                    Add("a", Change),
                    Take(None),
                    Background("a"),
                    Take(None),
                    Finish("a"),
                    Take(Some(("a", Change))),
                ],
            ),
            (
                "other keys pass a busy one",
                &[
                    Add("a", Change),
                    Take(Some(("a", Change))),
                    Add("a", Change),
                    Add("b", Owner),
                    Take(Some(("b", Owner))),
                    Finish("a"),
                    Take(Some(("a", Change))),
                ],
            ),
            (
                "not added while busy: not again",
                &[
                    Add("a", Change),
                    Take(Some(("a", Change))),
                    Finish("a"),
                    Take(None),
                ],
            ),
            (
                "a background key that is busy waits too",
                &[
                    Add("a", Change),
                    Take(Some(("a", Change))),
                    Background("a"),
                    Background("b"),
                    Take(Some(("b", Resync))),
                    Take(None),
                    Finish("a"),
                    Take(Some(("a", Resync))),
                ],
            ),
            (
                "due keys before background ones",
                &[
                    Background("old"),
                    Add("new", Change),
                    Take(Some(("new", Change))),
                    Take(Some(("old", Resync))),
                ],
            ),
            (
                "a key queued again before it is taken keeps the most specific reason",
                &[
                    Add("a", Requeue),
                    Add("a", Owner),
                    Add("a", Resync),
                    Take(Some(("a", Owner))),
                    Take(None),
                ],
            ),
        ];
        for (name, steps) in cases {
            let mut q = Queue::default();
            for (i, step) in steps.iter().enumerate() {
                match *step {
                    Add(k, reason) => q.add(key(k), reason),
                    Background(k) => q.add_background(key(k)),
                    Take(want) => assert_eq!(
                        names(q.take()),
                        want.map(|(k, r)| (k.to_string(), r)),
                        "{name}: step {i}"
                    ),
                    Finish(k) => q.finish(&key(k)),
                }
            }
        }
    }

    #[test]
    fn failure_backoff_doubles_and_is_capped() {
        let mut q = Queue::default();
        let got: Vec<u64> = (0..10)
            .map(|_| q.failure_backoff(&key("a")).as_secs())
            .collect();
        assert_eq!(got, vec![1, 2, 4, 8, 16, 32, 64, 120, 120, 120]);
        q.forget_failures(&key("a"));
        assert_eq!(q.failure_backoff(&key("a")).as_secs(), 1);
    }
}
