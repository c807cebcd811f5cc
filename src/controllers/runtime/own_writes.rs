//! The status writes a reconcile made of its own object, so that their changes do not wake the
//! object again: the reconcile decided from everything else, and anything else that changes
//! wakes the object by its own change. Only the change that is exactly that write (the same
//! `resourceVersion`, the only change of the object in its batch) is passed over.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use crate::api::ObjectKey;

/// Writes remembered at most; beyond, the oldest are forgotten (their objects are then only
/// looked at once more).
const REMEMBERED: usize = 10_000;

#[derive(Debug, Default)]
pub(crate) struct OwnWrites {
    written: Mutex<HashMap<ObjectKey, String>>,
}

impl OwnWrites {
    /// Remembers that a reconcile wrote `key`'s status, which now has `resource_version`.
    pub(crate) fn wrote(&self, key: ObjectKey, resource_version: String) {
        let mut written = self.written.lock().unwrap_or_else(PoisonError::into_inner);
        if written.len() >= REMEMBERED {
            written.clear();
        }
        written.insert(key, resource_version);
    }

    /// Whether the change of `key` to `resource_version` is a remembered write (forgotten then).
    pub(crate) fn was_own(&self, key: &ObjectKey, resource_version: &str) -> bool {
        let mut written = self.written.lock().unwrap_or_else(PoisonError::into_inner);
        match written.get(key) {
            Some(rv) if rv == resource_version => {
                written.remove(key);
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_very_write_is_passed_over_once() {
        let key = ObjectKey::new("example.com", "Thing", Some("default"), "r1");
        let other = ObjectKey::new("example.com", "Thing", Some("default"), "r2");
        let own = OwnWrites::default();
        own.wrote(key.clone(), "7".into());
        let cases = [
            (&other, "7", false),
            (&key, "8", false),
            (&key, "7", true),
            // Once only.
            (&key, "7", false),
        ];
        for (k, rv, want) in cases {
            assert_eq!(own.was_own(k, rv), want, "{k} at {rv}");
        }
    }
}
