//! A work queue of object keys, each due at some instant, with per-key failure backoff. Adding,
//! taking and peeking cost a logarithm of the queue's length, however many keys wait.
//!
//! Several workers take keys from it at once, but never two the same key: a key taken is busy
//! until [`Queue::finish`]; one that comes due meanwhile waits and is due once more when it is
//! finished (what changed while it was being reconciled may not have been seen).

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

use crate::api::ObjectKey;

#[derive(Debug, Default)]
pub struct Queue {
    /// When each queued key is due.
    due: HashMap<ObjectKey, Instant>,
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
    /// Busy keys that came due meanwhile: due again once finished.
    again: HashSet<ObjectKey>,
}

impl Queue {
    /// Due now.
    pub fn add(&mut self, key: ObjectKey) {
        self.add_at(key, Instant::now());
    }

    /// Due once nothing else is.
    pub fn add_background(&mut self, key: ObjectKey) {
        if self.in_background.insert(key.clone()) {
            self.background.push_back(key);
        }
    }

    /// Due after `delay`, unless it is already due sooner.
    pub fn add_after(&mut self, key: ObjectKey, delay: Duration) {
        self.add_at(key, Instant::now() + delay);
    }

    /// Due at `at`, unless it is already due sooner.
    fn add_at(&mut self, key: ObjectKey, at: Instant) {
        if let Some(queued) = self.due.get(&key) {
            if *queued <= at {
                return;
            }
            self.order.remove(&(*queued, key.clone()));
        }
        self.order.insert((at, key.clone()));
        self.due.insert(key, at);
    }

    /// Takes the key that has been due the longest, else the oldest background key, and marks it
    /// busy until [`Queue::finish`]. A busy key is not taken again meanwhile.
    pub fn take(&mut self) -> Option<ObjectKey> {
        let key = self.pop_due().or_else(|| self.pop_background())?;
        self.busy.insert(key.clone());
        Some(key)
    }

    /// [`Queue::take`] of due keys only: background ones stay queued.
    pub fn take_due(&mut self) -> Option<ObjectKey> {
        let key = self.pop_due()?;
        self.busy.insert(key.clone());
        Some(key)
    }

    /// Marks a taken key as no longer busy; due again at once if it came due meanwhile.
    pub fn finish(&mut self, key: &ObjectKey) {
        self.busy.remove(key);
        if self.again.remove(key) {
            self.add(key.clone());
        }
    }

    /// The due key (background keys aside) due the longest that is not busy, if any; busy ones
    /// met on the way wait for their [`Queue::finish`].
    fn pop_due(&mut self) -> Option<ObjectKey> {
        loop {
            let (at, _) = self.order.first()?;
            if *at > Instant::now() {
                return None;
            }
            let (_, key) = self.order.pop_first()?;
            self.due.remove(&key);
            self.in_background.remove(&key);
            if !self.defer_if_busy(&key) {
                return Some(key);
            }
        }
    }

    /// The oldest background key that is not busy, if any.
    fn pop_background(&mut self) -> Option<ObjectKey> {
        while let Some(key) = self.background.pop_front() {
            // Skipped if it was taken in the foreground since.
            if self.in_background.remove(&key) && !self.defer_if_busy(&key) {
                return Some(key);
            }
        }
        None
    }

    /// True when `key` is busy; it is then due again once finished.
    fn defer_if_busy(&mut self, key: &ObjectKey) -> bool {
        let busy = self.busy.contains(key);
        if busy {
            self.again.insert(key.clone());
        }
        busy
    }

    pub fn time_to_next(&self) -> Option<Duration> {
        if !self.in_background.is_empty() {
            return Some(Duration::ZERO);
        }
        self.order
            .first()
            .map(|(at, _)| at.saturating_duration_since(Instant::now()))
    }

    /// How many keys are queued.
    pub fn len(&self) -> usize {
        self.due.len() + self.in_background.len()
    }

    /// Exponential backoff for a key whose reconcile failed: 1 s doubling to 2 min.
    pub fn failure_backoff(&mut self, key: &ObjectKey) -> Duration {
        let n = self.failures.entry(key.clone()).or_insert(0);
        *n = n.saturating_add(1);
        Duration::from_secs((1u64 << (*n - 1).min(7)).min(120))
    }

    pub fn forget_failures(&mut self, key: &ObjectKey) {
        self.failures.remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> ObjectKey {
        ObjectKey::new("g", "K", None, name)
    }

    #[test]
    fn due_keys_come_out_once_and_later_ones_wait() {
        let mut q = Queue::default();
        q.add(key("a"));
        q.add(key("a"));
        q.add_after(key("b"), Duration::from_secs(3600));
        assert_eq!(q.len(), 2);
        assert_eq!(q.pop_due(), Some(key("a")));
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
        q.add_at(key("late"), start + Duration::from_millis(2));
        q.add_at(key("early"), start + Duration::from_millis(1));
        q.add_at(key("moved"), start + Duration::from_secs(3600));
        // Sooner wins; later is ignored.
        q.add_at(key("moved"), start);
        q.add_at(key("early"), start + Duration::from_secs(3600));
        std::thread::sleep(Duration::from_millis(3));
        let order: Vec<ObjectKey> = std::iter::from_fn(|| q.pop_due()).collect();
        assert_eq!(order, vec![key("moved"), key("early"), key("late")]);
        assert_eq!(q.len(), 0);
        assert_eq!(q.time_to_next(), None);
    }

    #[test]
    fn background_keys_wait_for_due_ones_and_come_out_once() {
        let mut q = Queue::default();
        q.add_background(key("old-1"));
        q.add_background(key("old-2"));
        q.add_background(key("old-1"));
        q.add(key("new"));
        q.add_after(key("later"), Duration::from_secs(3600));
        assert_eq!(q.time_to_next(), Some(Duration::ZERO));
        assert_eq!(q.pop_due(), Some(key("new")));
        assert_eq!(q.pop_due(), None);
        assert_eq!(q.pop_background(), Some(key("old-1")));
        // Taken in the foreground: not again in the background.
        q.add(key("old-2"));
        assert_eq!(q.pop_due(), Some(key("old-2")));
        assert_eq!(q.pop_background(), None);
        assert_eq!(q.len(), 1);
    }

    /// What a step of the workers does to the queue.
    #[derive(Debug, Clone, Copy)]
    enum Step {
        Add(&'static str),
        Background(&'static str),
        /// Takes a key and expects this one (or nothing).
        Take(Option<&'static str>),
        Finish(&'static str),
    }

    #[test]
    fn a_busy_key_is_never_taken_twice_and_runs_once_more_when_finished() {
        use Step::*;
        let cases: &[(&str, &[Step])] = &[
            (
                "added while busy: waits, then due once",
                &[
                    Add("a"),
                    Take(Some("a")),
                    Add("a"),
                    Add("a"),
                    Take(None),
                    Finish("a"),
                    Take(Some("a")),
                    Take(None),
                ],
            ),
            (
                "other keys pass a busy one",
                &[
                    Add("a"),
                    Take(Some("a")),
                    Add("a"),
                    Add("b"),
                    Take(Some("b")),
                    Finish("a"),
                    Take(Some("a")),
                ],
            ),
            (
                "not added while busy: not again",
                &[Add("a"), Take(Some("a")), Finish("a"), Take(None)],
            ),
            (
                "a background key that is busy waits too",
                &[
                    Add("a"),
                    Take(Some("a")),
                    Background("a"),
                    Background("b"),
                    Take(Some("b")),
                    Take(None),
                    Finish("a"),
                    Take(Some("a")),
                ],
            ),
            (
                "due keys before background ones",
                &[
                    Background("old"),
                    Add("new"),
                    Take(Some("new")),
                    Take(Some("old")),
                ],
            ),
        ];
        for (name, steps) in cases {
            let mut q = Queue::default();
            for (i, step) in steps.iter().enumerate() {
                match *step {
                    Add(k) => q.add(key(k)),
                    Background(k) => q.add_background(key(k)),
                    Take(want) => assert_eq!(q.take(), want.map(key), "{name}: step {i}"),
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
