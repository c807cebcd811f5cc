//! A store in memory: the backend of unit tests, with deterministic listings and versions.

use crate::{Change, Key, Result, StateStore, Version, WriteInfo, WriteOutcome};
use bytes::Bytes;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// Files in a `BTreeMap`; each changing write bumps a counter that becomes the version (`"1"`,
/// `"2"`, …).
///
/// Clones share the same files, like several handles on one repository.
#[derive(Debug, Clone, Default)]
pub struct InMemory {
    state: Arc<Mutex<State>>,
}

#[derive(Debug, Default)]
struct State {
    files: BTreeMap<Key, Bytes>,
    writes: u64,
}

impl InMemory {
    pub fn new() -> Self {
        Self::default()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // NB: a panic while holding the lock cannot leave the map half-edited (each write builds
        // its outcome before touching the map), so a poisoned lock is still consistent.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Applies `changes` to `files`, returning what changed; pure so that it can be tested alone.
fn apply(files: &mut BTreeMap<Key, Bytes>, changes: &[Change]) -> (Vec<Key>, Vec<Key>) {
    let mut written = Vec::new();
    let mut deleted = Vec::new();
    for change in changes {
        match change {
            Change::Put(key, content) => {
                if files.get(key) != Some(content) {
                    files.insert(key.clone(), content.clone());
                    written.push(key.clone());
                }
            }
            Change::Delete(key) => {
                if files.remove(key).is_some() {
                    deleted.push(key.clone());
                }
            }
        }
    }
    (written, deleted)
}

#[async_trait::async_trait]
impl StateStore for InMemory {
    fn kind(&self) -> &'static str {
        "memory"
    }

    async fn write(&self, changes: &[Change], _info: &WriteInfo) -> Result<WriteOutcome> {
        let mut state = self.state();
        let (written, deleted) = apply(&mut state.files, changes);
        let mut outcome = WriteOutcome {
            version: None,
            written,
            deleted,
        };
        if outcome.changed() {
            state.writes += 1;
            outcome.version = Some(Version(state.writes.to_string()));
        }
        Ok(outcome)
    }

    async fn read(&self, key: &Key) -> Result<Option<Bytes>> {
        Ok(self.state().files.get(key).cloned())
    }

    async fn list(&self, prefix: &Key) -> Result<Vec<Key>> {
        Ok(self
            .state()
            .files
            .keys()
            .filter(|k| k.starts_with(prefix))
            .cloned()
            .collect())
    }

    async fn check_access(&self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(s: &str) -> Key {
        Key::parse(s).expect("valid key")
    }

    #[test]
    fn apply_reports_only_what_differs() {
        let mut files = BTreeMap::from([
            (key("same"), Bytes::from_static(b"1")),
            (key("changed"), Bytes::from_static(b"1")),
            (key("gone"), Bytes::from_static(b"1")),
        ]);
        let (written, deleted) = apply(
            &mut files,
            &[
                Change::Put(key("same"), Bytes::from_static(b"1")),
                Change::Put(key("changed"), Bytes::from_static(b"2")),
                Change::Put(key("new"), Bytes::from_static(b"3")),
                Change::Delete(key("gone")),
                Change::Delete(key("never-there")),
            ],
        );
        assert_eq!(written, vec![key("changed"), key("new")]);
        assert_eq!(deleted, vec![key("gone")]);
        assert_eq!(files.len(), 3);
    }

    mod conformance {
        use crate::InMemory;
        crate::conformance_suite!(async { InMemory::new() }, |store: &InMemory| {
            let second = store.clone();
            async move { second }
        });
    }
}
