//! Structural defaulting, as kube-apiserver applies a CRD's `default`s to every object it stores:
//! a property with a `default` that is missing (or `null` where the schema does not allow `null`)
//! gets a copy of the default; then every present value is walked with its own schema, so
//! defaults nested inside a default that was just set apply too, and so do defaults of list items
//! and of `additionalProperties` values. Values of the wrong type are left alone (validation
//! reports them).
//!
//! Same algorithm as `structuraldefaulting.Default` in
//! <https://github.com/kubernetes/apiextensions-apiserver/blob/v0.31.0/pkg/apiserver/schema/defaulting/algorithm.go>.

use serde_json::Value;

/// Applies the defaults `schema` (an `openAPIV3Schema`) declares to `value`, in place.
pub fn apply(schema: &Value, value: &mut Value) {
    match value {
        Value::Object(map) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            for (key, property) in properties.into_iter().flatten() {
                let Some(default) = property.get("default") else {
                    continue;
                };
                let missing = match map.get(key) {
                    None => true,
                    Some(Value::Null) => !nullable(property),
                    Some(_) => false,
                };
                if missing {
                    map.insert(key.clone(), default.clone());
                }
            }
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
            for (key, child) in map.iter_mut() {
                match (properties.and_then(|p| p.get(key)), additional) {
                    (Some(property), _) => apply(property, child),
                    (None, Some(additional)) => apply(additional, child),
                    (None, None) => {}
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for item in items {
                    apply(item_schema, item);
                }
            }
        }
        _ => {}
    }
}

fn nullable(schema: &Value) -> bool {
    schema.get("nullable").and_then(Value::as_bool) == Some(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "cleanup": {"type": "string", "default": "none"},
                "maybe": {"type": "string", "nullable": true, "default": "d"},
                "filepath": {"type": "object", "default": {"mode": "nestedByMetadata"},
                             "properties": {
                                 "mode": {"type": "string"},
                                 "filename": {"type": "string"}}},
                "init": {"type": "object", "default": {},
                         "properties": {"enabled": {"type": "boolean", "default": true}}},
                "list": {"type": "array", "items": {"type": "object", "properties": {
                    "role": {"type": "string", "default": "reader"}}}},
                "map": {"type": "object", "additionalProperties": {"type": "object", "properties": {
                    "size": {"type": "integer", "default": 1}}}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
            }}
        }})
    }

    #[test]
    fn defaults_apply_as_the_api_server_applies_them() {
        let spec_defaults = json!({
            "cleanup": "none",
            "maybe": "d",
            "filepath": {"mode": "nestedByMetadata"},
            "init": {"enabled": true}
        });
        // (case, spec given, spec stored)
        let cases: Vec<(&str, Value, Value)> = vec![
            ("everything missing", json!({}), spec_defaults.clone()),
            (
                "given values win",
                json!({"cleanup": "all", "filepath": {"mode": "none"}, "init": {"enabled": false}}),
                json!({"cleanup": "all", "maybe": "d", "filepath": {"mode": "none"},
                       "init": {"enabled": false}}),
            ),
            (
                "a present object is not replaced by its default, only walked",
                json!({"filepath": {"filename": "a.yaml"}, "init": {}}),
                json!({"cleanup": "none", "maybe": "d", "filepath": {"filename": "a.yaml"},
                       "init": {"enabled": true}}),
            ),
            (
                "null of a non-nullable field is defaulted",
                json!({"cleanup": null}),
                spec_defaults.clone(),
            ),
            (
                "null of a nullable field is kept",
                json!({"maybe": null}),
                json!({"cleanup": "none", "maybe": null, "filepath": {"mode": "nestedByMetadata"},
                       "init": {"enabled": true}}),
            ),
            (
                "list items and map values are walked",
                json!({"list": [{}, {"role": "admin"}], "map": {"a": {}, "b": {"size": 3}}}),
                json!({"cleanup": "none", "maybe": "d", "filepath": {"mode": "nestedByMetadata"},
                       "init": {"enabled": true},
                       "list": [{"role": "reader"}, {"role": "admin"}],
                       "map": {"a": {"size": 1}, "b": {"size": 3}}}),
            ),
            (
                "unknown and free-form fields are left alone",
                json!({"other": {}, "free": {"x": null}}),
                json!({"cleanup": "none", "maybe": "d", "filepath": {"mode": "nestedByMetadata"},
                       "init": {"enabled": true}, "other": {}, "free": {"x": null}}),
            ),
            (
                "a value of the wrong type is left for validation",
                json!({"init": "yes", "list": "no"}),
                json!({"cleanup": "none", "maybe": "d", "filepath": {"mode": "nestedByMetadata"},
                       "init": "yes", "list": "no"}),
            ),
        ];
        for (case, given, want) in cases {
            let mut object = json!({"kind": "X", "spec": given});
            apply(&schema(), &mut object);
            assert_eq!(object, json!({"kind": "X", "spec": want}), "{case}");
        }
    }

    #[test]
    fn defaulting_is_idempotent() {
        let mut once = json!({"spec": {"list": [{}], "map": {"a": {}}}});
        apply(&schema(), &mut once);
        let mut twice = once.clone();
        apply(&schema(), &mut twice);
        assert_eq!(once, twice);
    }

    #[test]
    fn a_missing_parent_without_a_default_stays_missing() {
        let mut object = json!({"kind": "X"});
        apply(&schema(), &mut object);
        assert_eq!(object, json!({"kind": "X"}));
    }
}
