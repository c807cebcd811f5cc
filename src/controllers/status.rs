//! Read-modify-write helpers: re-read the object, change it, write it back, and retry when
//! someone else wrote in between (optimistic concurrency).

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

use crate::api::{KindInfo, Object, ObjectKey};
use crate::store::{self, ControlPlane};

use crate::controllers::Error;

pub(crate) use crate::controllers::status_value::{
    merge_conditions, set_conditions, set_field, status_or_default, typed_status,
};

const ATTEMPTS: usize = 20;

/// Which part of an object a read-modify-write writes.
#[derive(Debug, Clone, Copy)]
enum Part {
    /// Metadata and spec (`update`).
    Object,
    /// Only `status` (`update_status`).
    Status,
}

/// Re-reads the object, applies `change`, and writes `part` back if anything changed, retrying
/// when someone else wrote in between. Returns the object as stored afterwards, or `None` if it
/// is gone.
///
/// `known` is the object as the caller read it: the first attempt starts from it instead of
/// reading it again. When the change leaves it as it is, nothing is read or written; should
/// the stored object differ from it, that later write wakes its controller again anyway. When
/// it is stale, the write conflicts and the next attempt reads the stored object.
async fn read_modify_write(
    cp: &dyn ControlPlane,
    kind: &KindInfo,
    key: &ObjectKey,
    part: Part,
    mut known: Option<Object>,
    mut change: impl FnMut(&mut Object),
) -> Result<Option<Object>, Error> {
    for _ in 0..ATTEMPTS {
        let obj = match known.take() {
            Some(obj) => obj,
            None => match cp.get(kind, key.namespace.as_deref(), &key.name).await? {
                Some(obj) => obj,
                None => return Ok(None),
            },
        };
        let mut changed = obj.clone();
        change(&mut changed);
        if changed == obj {
            return Ok(Some(obj));
        }
        let written = match part {
            Part::Object => cp.update(kind, &changed).await,
            Part::Status => cp.update_status(kind, &changed).await,
        };
        match written {
            Ok(stored) => return Ok(Some(stored)),
            Err(store::Error::Conflict { .. }) => continue,
            Err(store::Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(e.into()),
        }
    }
    Err(store::Error::Conflict {
        key: key.clone(),
        expected: "latest".into(),
    }
    .into())
}

/// Applies `change` to the object's `status` (always a mapping) and writes it if anything
/// changed. Returns the object as stored afterwards, or `None` if it is gone.
pub(crate) async fn update_status(
    cp: &dyn ControlPlane,
    kind: &KindInfo,
    key: &ObjectKey,
    change: impl FnMut(&Object, &mut Value),
) -> Result<Option<Object>, Error> {
    change_status(cp, kind, key, None, change).await
}

/// [`update_status`] starting from the object as the caller read it (see
/// [`read_modify_write`]).
pub(crate) async fn update_status_of(
    cp: &dyn ControlPlane,
    kind: &KindInfo,
    obj: &Object,
    change: impl FnMut(&Object, &mut Value),
) -> Result<Option<Object>, Error> {
    change_status(cp, kind, &ObjectKey::of(obj), Some(obj.clone()), change).await
}

async fn change_status(
    cp: &dyn ControlPlane,
    kind: &KindInfo,
    key: &ObjectKey,
    known: Option<Object>,
    mut change: impl FnMut(&Object, &mut Value),
) -> Result<Option<Object>, Error> {
    read_modify_write(cp, kind, key, Part::Status, known, |obj| {
        let mut status = obj
            .data
            .get("status")
            .filter(|s| s.is_object())
            .cloned()
            .unwrap_or_else(|| json!({}));
        change(obj, &mut status);
        let untouched_absent = obj.data.get("status").is_none() && status == json!({});
        if let (false, Some(map)) = (untouched_absent, obj.data.as_object_mut()) {
            map.insert("status".into(), status);
        }
    })
    .await
}

/// Applies `change` to the object's typed status (`what` names the kind) and writes it if
/// anything changed. A status that does not parse is left alone and reported as malformed.
pub(crate) async fn update_typed_status<S>(
    cp: &dyn ControlPlane,
    kind: &KindInfo,
    key: &ObjectKey,
    what: &'static str,
    change: impl FnMut(&mut S),
) -> Result<Option<Object>, Error>
where
    S: Serialize + DeserializeOwned + Default + Clone + PartialEq,
{
    change_typed_status(cp, kind, key, None, what, change).await
}

/// [`update_typed_status`] starting from the object as the caller read it (see
/// [`read_modify_write`]).
pub(crate) async fn update_typed_status_of<S>(
    cp: &dyn ControlPlane,
    kind: &KindInfo,
    obj: &Object,
    what: &'static str,
    change: impl FnMut(&mut S),
) -> Result<Option<Object>, Error>
where
    S: Serialize + DeserializeOwned + Default + Clone + PartialEq,
{
    let key = ObjectKey::of(obj);
    change_typed_status(cp, kind, &key, Some(obj.clone()), what, change).await
}

async fn change_typed_status<S>(
    cp: &dyn ControlPlane,
    kind: &KindInfo,
    key: &ObjectKey,
    known: Option<Object>,
    what: &'static str,
    mut change: impl FnMut(&mut S),
) -> Result<Option<Object>, Error>
where
    S: Serialize + DeserializeOwned + Default + Clone + PartialEq,
{
    let mut failed = None;
    let stored = read_modify_write(cp, kind, key, Part::Status, known, |obj| {
        failed = None;
        let before: S = match typed_status(obj) {
            Ok(status) => status,
            Err(source) => {
                failed = Some(Error::malformed(obj, what, source));
                return;
            }
        };
        let mut after = before.clone();
        change(&mut after);
        if after == before {
            return;
        }
        match (serde_json::to_value(&after), obj.data.as_object_mut()) {
            (Ok(value), Some(map)) => {
                map.insert("status".into(), value);
            }
            (Err(source), _) => {
                failed = Some(Error::serialize(ObjectKey::of(obj), what, source));
            }
            (Ok(_), None) => {}
        }
    })
    .await?;
    match failed {
        Some(e) => Err(e),
        None => Ok(stored),
    }
}

/// Applies `change` to the object (metadata or spec) and writes it if anything changed.
pub(crate) async fn update_object(
    cp: &dyn ControlPlane,
    kind: &KindInfo,
    key: &ObjectKey,
    change: impl FnMut(&mut Object),
) -> Result<Option<Object>, Error> {
    read_modify_write(cp, kind, key, Part::Object, None, change).await
}

pub(crate) fn has_finalizer(obj: &Object, finalizer: &str) -> bool {
    obj.metadata
        .finalizers
        .as_ref()
        .is_some_and(|f| f.iter().any(|x| x == finalizer))
}

/// Adds a finalizer; returns the stored object.
pub(crate) async fn add_finalizer(
    cp: &dyn ControlPlane,
    kind: &KindInfo,
    obj: &Object,
    finalizer: &str,
) -> Result<Option<Object>, Error> {
    if has_finalizer(obj, finalizer) {
        return Ok(Some(obj.clone()));
    }
    update_object(cp, kind, &ObjectKey::of(obj), |o| {
        let f = o.metadata.finalizers.get_or_insert_with(Vec::new);
        if !f.iter().any(|x| x == finalizer) {
            f.push(finalizer.to_string());
        }
    })
    .await
}

/// Adds a finalizer and sets a label (unless both are there already) in one write; the object
/// as stored, `None` once it is gone.
pub(crate) async fn add_finalizer_and_label(
    cp: &dyn ControlPlane,
    kind: &KindInfo,
    obj: &Object,
    finalizer: &str,
    (key, value): (&str, &str),
) -> Result<Option<Object>, Error> {
    if has_finalizer(obj, finalizer) && crate::api::object::label(obj, key) == Some(value) {
        return Ok(Some(obj.clone()));
    }
    let known = Some(obj.clone());
    read_modify_write(cp, kind, &ObjectKey::of(obj), Part::Object, known, |o| {
        let f = o.metadata.finalizers.get_or_insert_with(Vec::new);
        if !f.iter().any(|x| x == finalizer) {
            f.push(finalizer.to_string());
        }
        o.metadata
            .labels
            .get_or_insert_with(Default::default)
            .insert(key.to_string(), value.to_string());
    })
    .await
}

/// Removes a finalizer; an object being deleted that has none left disappears.
pub(crate) async fn remove_finalizer(
    cp: &dyn ControlPlane,
    kind: &KindInfo,
    obj: &Object,
    finalizer: &str,
) -> Result<(), Error> {
    update_object(cp, kind, &ObjectKey::of(obj), |o| {
        if let Some(f) = o.metadata.finalizers.as_mut() {
            f.retain(|x| x != finalizer);
        }
    })
    .await?;
    Ok(())
}

/// Deletes an object (or marks it for deletion when it has finalizers); an object that is
/// already gone is fine.
pub(crate) async fn delete_if_present(
    cp: &dyn ControlPlane,
    kind: &KindInfo,
    obj: &Object,
) -> Result<(), Error> {
    let key = ObjectKey::of(obj);
    match cp.delete(kind, key.namespace.as_deref(), &key.name).await {
        Ok(_) | Err(store::Error::NotFound { .. }) => Ok(()),
        Err(e) => Err(e.into()),
    }
}
#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use serde::Deserialize;

    use super::*;
    use crate::api::Builtin;

    /// A status that parses from anything but cannot be written once it holds a key that is
    /// not text (JSON keys are strings).
    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
    struct Unwritable {
        #[serde(default, skip_deserializing)]
        by_bytes: HashMap<Vec<u8>, i32>,
    }

    #[tokio::test]
    async fn a_status_that_cannot_be_serialized_is_our_failure_not_the_objects() {
        let home = tempfile::tempdir().expect("temporary home");
        let platform = crate::platform::Platform::open(home.path()).expect("platform");
        let kind = crate::platform::builtin(Builtin::Destination);
        let obj: Object = serde_json::from_value(json!({
            "apiVersion": "platform.kratix.io/v1alpha1",
            "kind": "Destination",
            "metadata": {"name": "d"},
            "spec": {"stateStoreRef": {"kind": "GitStateStore", "name": "s"}},
        }))
        .expect("an object");
        let stored = platform.store.create(&kind, &obj).await.expect("stored");
        let err = update_typed_status_of(
            platform.store.as_ref(),
            &kind,
            &stored,
            "Destination",
            |s: &mut Unwritable| {
                s.by_bytes.insert(vec![1], 1);
            },
        )
        .await
        .expect_err("cannot be written");
        assert!(matches!(err, Error::Serialize { .. }), "{err:?}");
        assert_eq!(
            err.category(),
            crate::metrics::ErrorCategory::Internal,
            "{err}"
        );
        let after = platform
            .store
            .get(&kind, None, "d")
            .await
            .expect("readable")
            .expect("still there");
        assert_eq!(after.data.get("status"), stored.data.get("status"));
    }
}
