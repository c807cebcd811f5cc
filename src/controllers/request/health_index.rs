//! Which HealthRecords name which request, kept in memory from what the controllers see of
//! HealthRecords (everything at start-up and resync, then each change), so that a request's
//! reconcile reads the records about it rather than every record of the home. A record names
//! its request in `data`, which no label selector reaches; Kratix's controller finds them the
//! same way, in its informer's cache.
//!
//! The index may name a record that is gone (deleted while the change feed was lost, or a
//! moment ago): readers get each record and skip those not found. They leave the index to the
//! change feed: forgetting a key on a read could undo a newer sighting of a record made again.
//! Whether a record counts is still decided from the record read (`health::counts`).

use std::collections::{BTreeSet, HashMap};
use std::sync::{Mutex, PoisonError};

use crate::api::{HealthRecord, Object, ObjectKey, GROUP};

/// The request a record names: its Promise, namespace and name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Named {
    pub(crate) promise: String,
    pub(crate) namespace: String,
    pub(crate) name: String,
}

impl Named {
    /// The request a stored HealthRecord names, if it parses and names one.
    pub(crate) fn of(obj: &Object) -> Option<Self> {
        let record = crate::api::object::to_typed::<HealthRecord>(obj).ok()?;
        let resource = record.data.resource_ref?;
        Some(Self {
            promise: record.data.promise_ref.name,
            namespace: resource.namespace,
            name: resource.name,
        })
    }
}

#[derive(Debug, Default)]
struct Maps {
    by_record: HashMap<ObjectKey, Named>,
    by_request: HashMap<Named, BTreeSet<ObjectKey>>,
}

#[derive(Debug, Default)]
pub(crate) struct HealthIndex {
    maps: Mutex<Maps>,
}

impl HealthIndex {
    /// Takes in what `key` now is (`None`: gone). Keys of other kinds are ignored.
    pub(crate) fn saw(&self, key: &ObjectKey, obj: Option<&Object>) {
        if key.group != GROUP || key.kind != "HealthRecord" {
            return;
        }
        self.set(key, obj.and_then(Named::of));
    }

    /// Records `key` as naming `named` (`None`: nothing, or gone).
    fn set(&self, key: &ObjectKey, named: Option<Named>) {
        let mut maps = self.maps.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(before) = maps.by_record.remove(key) {
            if let Some(keys) = maps.by_request.get_mut(&before) {
                keys.remove(key);
                if keys.is_empty() {
                    maps.by_request.remove(&before);
                }
            }
        }
        if let Some(named) = named {
            maps.by_request
                .entry(named.clone())
                .or_default()
                .insert(key.clone());
            maps.by_record.insert(key.clone(), named);
        }
    }

    /// The records last seen naming the request, sorted.
    pub(crate) fn records_of(&self, request: &Named) -> Vec<ObjectKey> {
        self.maps
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .by_request
            .get(request)
            .map(|keys| keys.iter().cloned().collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record(name: &str, request: Option<&str>) -> (ObjectKey, Object) {
        let mut data = json!({"promiseRef": {"name": "redis"}, "state": "ready"});
        if let Some(r) = request {
            data["resourceRef"] = json!({"name": r, "namespace": "default"});
        }
        let obj: Object = serde_json::from_value(json!({
            "apiVersion": "platform.kratix.io/v1alpha1",
            "kind": "HealthRecord",
            "metadata": {"name": name, "namespace": "checks"},
            "data": data,
        }))
        .expect("a HealthRecord object");
        (ObjectKey::of(&obj), obj)
    }

    fn request(name: &str) -> Named {
        Named {
            promise: "redis".into(),
            namespace: "default".into(),
            name: name.into(),
        }
    }

    fn names(keys: Vec<ObjectKey>) -> Vec<String> {
        keys.into_iter().map(|k| k.name).collect()
    }

    #[test]
    fn records_are_found_by_the_request_they_name_as_they_change() {
        let index = HealthIndex::default();
        let (a, a_cache) = record("a", Some("cache"));
        let (b, b_cache) = record("b", Some("cache"));
        let (_, a_db) = record("a", Some("db"));
        let (_, a_none) = record("a", None);
        index.saw(&a, Some(&a_cache));
        index.saw(&b, Some(&b_cache));
        index.saw(&b, Some(&b_cache));
        assert_eq!(names(index.records_of(&request("cache"))), ["a", "b"]);
        assert!(index.records_of(&request("db")).is_empty());

        // A record that names another request moves with it.
        index.saw(&a, Some(&a_db));
        assert_eq!(names(index.records_of(&request("cache"))), ["b"]);
        assert_eq!(names(index.records_of(&request("db"))), ["a"]);

        // One that names none, or is gone, is found for none.
        index.saw(&a, Some(&a_none));
        assert!(index.records_of(&request("db")).is_empty());
        index.saw(&b, None);
        assert!(index.records_of(&request("cache")).is_empty());
    }

    #[test]
    fn other_kinds_are_ignored() {
        let index = HealthIndex::default();
        let (_, obj) = record("a", Some("cache"));
        let work = ObjectKey::new(GROUP, "Work", Some("checks"), "a");
        index.saw(&work, Some(&obj));
        assert!(index.records_of(&request("cache")).is_empty());
    }
}
