//! The three-way merge `kubectl apply` makes for custom resources (and for any kind it has no
//! strategic-merge schema for): a JSON merge patch (RFC 7386) computed from the configuration
//! applied last time, the live object and the file, then applied to the live object.
//!
//! - What the file sets and the live object lacks or holds differently is set (additions and
//!   changes, from live to file; nothing is deleted by this part).
//! - What the last-applied configuration set and the file no longer sets is deleted.
//! - What neither set (labels of `kubectl label`, controllers' fields, defaults) is kept.
//!
//! Maps merge key by key; lists and scalars are replaced whole; an empty map the file sets is a
//! value, not "no change". The steps follow `CreateThreeWayJSONMergePatch` of
//! k8s.io/apimachinery/pkg/util/jsonmergepatch (kubernetes v1.30,
//! https://github.com/kubernetes/apimachinery/blob/v0.30.0/pkg/util/jsonmergepatch/patch.go).

use serde_json::{Map, Value};

/// The live object with the file's changes merged in (see the module documentation).
pub(crate) fn merge(last_applied: &Value, file: &Value, live: &Value) -> Value {
    apply_patch(live, &three_way_patch(last_applied, file, live))
}

/// The merge patch `kubectl apply` would send: deletions of what `last_applied` set and `file`
/// does not, merged with the additions and changes from `live` to `file`.
pub(crate) fn three_way_patch(last_applied: &Value, file: &Value, live: &Value) -> Value {
    let changes = keep(&diff(live, file), Keep::Values);
    let deletions = keep(&diff(last_applied, file), Keep::Nulls);
    combine(deletions, changes)
}

/// RFC 7386: `patch` applied to `target`. A `null` in the patch deletes; maps merge key by key;
/// anything else replaces.
pub(crate) fn apply_patch(target: &Value, patch: &Value) -> Value {
    let Value::Object(patch) = patch else {
        return patch.clone();
    };
    let mut out = match target {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    for (key, value) in patch {
        if value.is_null() {
            out.remove(key);
        } else {
            let merged = apply_patch(out.get(key).unwrap_or(&Value::Null), value);
            out.insert(key.clone(), merged);
        }
    }
    Value::Object(out)
}

/// The merge patch taking `from` to `to` (`null` for each key `to` lacks). Values that are not
/// both maps are replaced whole when they differ.
fn diff(from: &Value, to: &Value) -> Value {
    let (Value::Object(from), Value::Object(to)) = (from, to) else {
        return to.clone();
    };
    let mut patch = Map::new();
    for (key, new) in to {
        match from.get(key) {
            None => {
                patch.insert(key.clone(), new.clone());
            }
            Some(old @ Value::Object(_)) if new.is_object() => {
                let inner = diff(old, new);
                if inner.as_object().is_some_and(|m| !m.is_empty()) {
                    patch.insert(key.clone(), inner);
                }
            }
            Some(old) if !same(old, new) => {
                patch.insert(key.clone(), new.clone());
            }
            Some(_) => {}
        }
    }
    for key in from.keys() {
        if !to.contains_key(key) {
            patch.insert(key.clone(), Value::Null);
        }
    }
    Value::Object(patch)
}

/// Equal as kubectl compares decoded JSON: every number is a float64 there, so `1` and `1.0`
/// are the same value.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, a)| y.get(k).is_some_and(|b| same(a, b)))
        }
        _ => a == b,
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Keep {
    /// Only deletions (`null`s), and the maps leading to them.
    Nulls,
    /// Everything but deletions.
    Values,
}

/// The part of a patch that deletes, or the part that sets. An empty map is a value the file
/// sets (it is kept with the values); a map left empty by the filter is no change at all.
fn keep(patch: &Value, which: Keep) -> Value {
    let Value::Object(map) = patch else {
        return patch.clone();
    };
    let mut out = Map::new();
    for (key, value) in map {
        match value {
            Value::Null if which == Keep::Nulls => {
                out.insert(key.clone(), Value::Null);
            }
            Value::Null => {}
            // An empty map is a value the file sets; among deletions it is no change (the arm
            // below filters it out).
            Value::Object(inner) if inner.is_empty() && which == Keep::Values => {
                out.insert(key.clone(), value.clone());
            }
            Value::Object(_) => {
                let inner = keep(value, which);
                if inner.as_object().is_some_and(|m| !m.is_empty()) {
                    out.insert(key.clone(), inner);
                }
            }
            _ if which == Keep::Values => {
                out.insert(key.clone(), value.clone());
            }
            _ => {}
        }
    }
    Value::Object(out)
}

/// Both patches in one: maps present in both merge; elsewhere `changes` wins (the two never set
/// the same key to different things: deletions are of keys the file lacks, changes of keys it
/// has).
fn combine(deletions: Value, changes: Value) -> Value {
    match (deletions, changes) {
        (Value::Object(mut out), Value::Object(changes)) => {
            for (key, change) in changes {
                let merged = match out.remove(&key) {
                    Some(deletion @ Value::Object(_)) if change.is_object() => {
                        combine(deletion, change)
                    }
                    _ => change,
                };
                out.insert(key, merged);
            }
            Value::Object(out)
        }
        (_, changes) => changes,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The cases of kubectl's documentation ("Merging changes to primitive fields, map fields,
    /// list fields", in "Declarative Management of Kubernetes Objects Using Configuration
    /// Files"), and what JSON merge patch does with the rest.
    #[test]
    fn merges_like_kubectl_apply_for_custom_resources() {
        // (case, last applied, file, live, merged)
        let cases = [
            (
                "a field in the file, last-applied and live: the file's value wins",
                json!({"spec": {"color": "red"}}),
                json!({"spec": {"color": "blue"}}),
                json!({"spec": {"color": "green"}}),
                json!({"spec": {"color": "blue"}}),
            ),
            (
                "a field in the file only: it is set",
                json!({}),
                json!({"spec": {"color": "blue"}}),
                json!({"spec": {}}),
                json!({"spec": {"color": "blue"}}),
            ),
            (
                "a field in last-applied only: it is deleted from live",
                json!({"spec": {"color": "red", "size": 1}}),
                json!({"spec": {"size": 1}}),
                json!({"spec": {"color": "red", "size": 1}}),
                json!({"spec": {"size": 1}}),
            ),
            (
                "a field in live only: it is kept",
                json!({"spec": {"size": 1}}),
                json!({"spec": {"size": 2}}),
                json!({"spec": {"size": 1, "replicas": 3}}),
                json!({"spec": {"size": 2, "replicas": 3}}),
            ),
            (
                "maps merge key by key",
                json!({"metadata": {"labels": {"a": "1", "gone": "x"}}}),
                json!({"metadata": {"labels": {"a": "2", "new": "y"}}}),
                json!({"metadata": {"labels": {"a": "1", "gone": "x", "kubectl": "z"}}}),
                json!({"metadata": {"labels": {"a": "2", "new": "y", "kubectl": "z"}}}),
            ),
            (
                "lists are replaced whole, items someone else added included",
                json!({"spec": {"ports": [1, 2]}}),
                json!({"spec": {"ports": [3]}}),
                json!({"spec": {"ports": [1, 2, 9]}}),
                json!({"spec": {"ports": [3]}}),
            ),
            (
                "a list of maps is replaced, not merged by item",
                json!({"spec": {"items": [{"name": "a", "x": 1}]}}),
                json!({"spec": {"items": [{"name": "a"}]}}),
                json!({"spec": {"items": [{"name": "a", "x": 1, "y": 2}]}}),
                json!({"spec": {"items": [{"name": "a"}]}}),
            ),
            (
                "a list someone else extended is set back to the file's (changes are taken against live)",
                json!({"spec": {"ports": [1]}}),
                json!({"spec": {"ports": [1]}}),
                json!({"spec": {"ports": [1, 2]}}),
                json!({"spec": {"ports": [1]}}),
            ),
            (
                "a list the file dropped is deleted",
                json!({"spec": {"ports": [1], "size": 1}}),
                json!({"spec": {"size": 1}}),
                json!({"spec": {"ports": [1], "size": 1}}),
                json!({"spec": {"size": 1}}),
            ),
            (
                "a null in the file deletes the field",
                json!({}),
                json!({"spec": {"color": null}}),
                json!({"spec": {"color": "red", "size": 1}}),
                json!({"spec": {"size": 1}}),
            ),
            (
                "a whole map the file dropped goes, keys others added to it included",
                json!({"spec": {"extra": {"a": 1}}}),
                json!({"spec": {}}),
                json!({"spec": {"extra": {"a": 1, "b": 2}}}),
                json!({"spec": {}}),
            ),
            (
                "a map turned into a scalar is replaced",
                json!({"spec": {"x": {"a": 1}}}),
                json!({"spec": {"x": "flat"}}),
                json!({"spec": {"x": {"a": 1}}}),
                json!({"spec": {"x": "flat"}}),
            ),
            (
                "a scalar turned into a map is replaced",
                json!({"spec": {"x": "flat"}}),
                json!({"spec": {"x": {"a": 1}}}),
                json!({"spec": {"x": "flat"}}),
                json!({"spec": {"x": {"a": 1}}}),
            ),
            (
                "an empty map in the file is set where live has none",
                json!({}),
                json!({"spec": {"x": {}}}),
                json!({"spec": {}}),
                json!({"spec": {"x": {}}}),
            ),
            (
                "an empty map in the file empties nothing live holds",
                json!({"spec": {"x": {}}}),
                json!({"spec": {"x": {}}}),
                json!({"spec": {"x": {"a": 1}}}),
                json!({"spec": {"x": {"a": 1}}}),
            ),
            (
                "no last-applied configuration: nothing is deleted",
                json!({}),
                json!({"spec": {"size": 2}}),
                json!({"spec": {"size": 1, "color": "red"}, "status": {"ok": true}}),
                json!({"spec": {"size": 2, "color": "red"}, "status": {"ok": true}}),
            ),
            (
                "1 and 1.0 are one number, as in kubectl (float64 throughout)",
                json!({"spec": {"size": 1}}),
                json!({"spec": {"size": 1.0}}),
                json!({"spec": {"size": 1}}),
                json!({"spec": {"size": 1}}),
            ),
            (
                "the same file again changes nothing, defaults and others' fields included",
                json!({"spec": {"size": 1}}),
                json!({"spec": {"size": 1}}),
                json!({"spec": {"size": 1, "mode": "default"}, "status": {"a": 1}}),
                json!({"spec": {"size": 1, "mode": "default"}, "status": {"a": 1}}),
            ),
        ];
        for (case, last, file, live, want) in cases {
            assert_eq!(merge(&last, &file, &live), want, "{case}");
        }
    }

    #[test]
    fn the_patch_is_empty_when_nothing_changes() {
        let last = json!({"metadata": {"labels": {"a": "1"}}, "spec": {"l": [1]}});
        let live =
            json!({"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"l": [1], "d": 0}});
        assert_eq!(three_way_patch(&last, &last, &live), json!({}));
    }

    #[test]
    fn json_merge_patch_follows_rfc_7386() {
        // The examples of RFC 7386, appendix A: (target, patch, result).
        let cases = [
            (json!({"a": "b"}), json!({"a": "c"}), json!({"a": "c"})),
            (
                json!({"a": "b"}),
                json!({"b": "c"}),
                json!({"a": "b", "b": "c"}),
            ),
            (json!({"a": "b"}), json!({"a": null}), json!({})),
            (
                json!({"a": "b", "b": "c"}),
                json!({"a": null}),
                json!({"b": "c"}),
            ),
            (json!({"a": ["b"]}), json!({"a": "c"}), json!({"a": "c"})),
            (json!({"a": "c"}), json!({"a": ["b"]}), json!({"a": ["b"]})),
            (
                json!({"a": {"b": "c"}}),
                json!({"a": {"b": "d", "c": null}}),
                json!({"a": {"b": "d"}}),
            ),
            (
                json!({"a": [{"b": "c"}]}),
                json!({"a": [1]}),
                json!({"a": [1]}),
            ),
            (json!(["a", "b"]), json!(["c", "d"]), json!(["c", "d"])),
            (json!({"a": "b"}), json!(["c"]), json!(["c"])),
            (json!({"a": "foo"}), json!(null), json!(null)),
            (json!({"a": "foo"}), json!("bar"), json!("bar")),
            (
                json!({"e": null}),
                json!({"a": 1}),
                json!({"e": null, "a": 1}),
            ),
            (
                json!([1, 2]),
                json!({"a": "b", "c": null}),
                json!({"a": "b"}),
            ),
            (
                json!({}),
                json!({"a": {"bb": {"ccc": null}}}),
                json!({"a": {"bb": {}}}),
            ),
        ];
        for (target, patch, want) in cases {
            assert_eq!(apply_patch(&target, &patch), want, "{target} + {patch}");
        }
    }
}
