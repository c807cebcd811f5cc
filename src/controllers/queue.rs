//! A work queue of object keys, each due at some instant, with per-key failure backoff.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use crate::api::ObjectKey;

#[derive(Debug, Default)]
pub struct Queue {
    due: BTreeMap<ObjectKey, Instant>,
    failures: HashMap<ObjectKey, u32>,
}

impl Queue {
    /// Due now.
    pub fn add(&mut self, key: ObjectKey) {
        self.due.insert(key, Instant::now());
    }

    /// Due after `delay`, unless it is already due sooner.
    pub fn add_after(&mut self, key: ObjectKey, delay: Duration) {
        let at = Instant::now() + delay;
        let entry = self.due.entry(key).or_insert(at);
        if at < *entry {
            *entry = at;
        }
    }

    /// Takes the key that has been due the longest, if any is due.
    pub fn pop_due(&mut self) -> Option<ObjectKey> {
        let now = Instant::now();
        let key = self
            .due
            .iter()
            .filter(|(_, at)| **at <= now)
            .min_by_key(|(_, at)| **at)
            .map(|(k, _)| k.clone())?;
        self.due.remove(&key);
        Some(key)
    }

    pub fn time_to_next(&self) -> Option<Duration> {
        let now = Instant::now();
        self.due
            .values()
            .min()
            .map(|at| at.saturating_duration_since(now))
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
        assert_eq!(q.pop_due(), Some(key("a")));
        assert_eq!(q.pop_due(), None);
        assert!(q
            .time_to_next()
            .is_some_and(|d| d > Duration::from_secs(3000)));
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
