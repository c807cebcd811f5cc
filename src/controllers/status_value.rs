//! The shapes of statuses, with no I/O: the typed view of an object's status, its conditions
//! (merged keeping the transition times of those unchanged), and its top-level fields.

use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use crate::api::condition::{set_condition, Condition};
use crate::api::Object;

use crate::controllers::kube_time::now_rfc3339;

/// The object's status as its typed view; an object without a status has the default one.
pub(crate) fn typed_status<S: DeserializeOwned + Default>(
    obj: &Object,
) -> Result<S, serde_json::Error> {
    match obj.data.get("status") {
        None | Some(Value::Null) => Ok(S::default()),
        Some(status) => S::deserialize(status),
    }
}

/// The object's typed status for reading; a status that does not parse says nothing.
pub(crate) fn status_or_default<S: DeserializeOwned + Default>(obj: &Object) -> S {
    typed_status(obj).unwrap_or_default()
}

/// Sets conditions in a status value, keeping transition times of unchanged ones.
pub(crate) fn set_conditions(status: &mut Value, new: impl IntoIterator<Item = Condition>) {
    let mut conds = crate::api::condition::in_status(status);
    merge_conditions(&mut conds, new);
    if let (Some(map), Ok(value)) = (status.as_object_mut(), serde_json::to_value(conds)) {
        map.insert("conditions".into(), value);
    }
}

/// Sets conditions in a typed status, keeping transition times of unchanged ones.
pub(crate) fn merge_conditions(
    conditions: &mut Vec<Condition>,
    new: impl IntoIterator<Item = Condition>,
) {
    let now = now_rfc3339();
    for c in new {
        set_condition(conditions, c, &now);
    }
}

/// Sets one top-level status field.
pub(crate) fn set_field(status: &mut Value, field: &str, value: Value) {
    if let Some(map) = status.as_object_mut() {
        map.insert(field.to_string(), value);
    }
}

/// The object at `field` of `value`, made an empty object when it is missing or not an object.
pub(crate) fn object_at<'a>(
    value: &'a mut Value,
    field: &str,
) -> Option<&'a mut serde_json::Map<String, Value>> {
    let entry = value
        .as_object_mut()?
        .entry(field)
        .or_insert_with(|| json!({}));
    as_object(entry)
}

/// `value` as an object, replaced by an empty one when it is something else.
fn as_object(value: &mut Value) -> Option<&mut serde_json::Map<String, Value>> {
    if !value.is_object() {
        *value = json!({});
    }
    value.as_object_mut()
}
