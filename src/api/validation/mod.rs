//! Validation of a request against its Promise's structural `openAPIV3Schema`, as the Kubernetes
//! API server does it for a custom resource: unknown fields are pruned, defaults applied, then
//! every constraint checked.
//!
//! Only what the schema declares at the top level is looked at (normally `spec`); `apiVersion`,
//! `kind` and `metadata` are the API server's, and `status` is left alone because Kratix replaces
//! the status schema of every Promise API with `x-kubernetes-preserve-unknown-fields`. As Kratix
//! does, `metadata.name` may be at most 63 characters long.
//!
//! Supported: `type`, `properties`, `required`, `additionalProperties` (bool or schema),
//! `x-kubernetes-preserve-unknown-fields`, `x-kubernetes-embedded-resource`,
//! `x-kubernetes-int-or-string`, `items`, `enum`, `minimum`/`maximum` (and their exclusive forms),
//! `multipleOf`, `minLength`/`maxLength`, `pattern`, `minItems`/`maxItems`, `format` (`date-time`,
//! `date`, `byte`, `uuid`, `ipv4`, `ipv6`; others are ignored, as the API server ignores formats it
//! doesn't know), `nullable` and `default`. Not supported: `allOf`, `anyOf`, `oneOf`, `not` and
//! `x-kubernetes-validations` (CEL), which are ignored.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use scalars::type_mismatch;

/// Maximum length of a request's `metadata.name` (Kratix injects it into every Promise API).
pub const MAX_NAME_LENGTH: usize = 63;

/// Fields the API server owns: never pruned, never validated against the Promise's schema.
const API_SERVER_FIELDS: [&str; 4] = ["apiVersion", "kind", "metadata", "status"];

/// The request as the API server would store it.
#[derive(Debug, Clone, PartialEq)]
pub struct Validated {
    /// The request with unknown fields pruned and defaults applied.
    pub object: Value,
    /// Paths of the fields that were pruned (e.g. `spec.sise`), sorted, so callers can warn.
    pub pruned: Vec<String>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Error {
    /// The request is not a JSON object at all.
    #[error("the object must be a map, got {found}")]
    NotAnObject { found: String },
    /// The request breaks its schema; `violations` holds every one of them, sorted, each of the
    /// form `<path>: <reason>`.
    #[error("{}", violations.join("; "))]
    Invalid { violations: Vec<String> },
}

/// Prunes, defaults and validates `object` against `schema` (a CRD version's `openAPIV3Schema`).
pub fn validate(schema: &Value, object: &Value) -> Result<Validated, Error> {
    let Value::Object(map) = object else {
        return Err(Error::NotAnObject {
            found: show(object),
        });
    };
    let mut walk = Walk::default();
    walk.check_name(map);
    let object = Value::Object(walk.object(schema, map.clone(), "", &API_SERVER_FIELDS));
    if walk.violations.is_empty() {
        Ok(Validated {
            object,
            pruned: walk.pruned.into_iter().collect(),
        })
    } else {
        Err(Error::Invalid {
            violations: walk.violations.into_iter().collect(),
        })
    }
}

#[derive(Default)]
struct Walk {
    violations: BTreeSet<String>,
    pruned: BTreeSet<String>,
}

impl Walk {
    fn violation(&mut self, path: &str, reason: String) {
        self.violations.insert(format!("{path}: {reason}"));
    }

    fn check_name(&mut self, object: &Map<String, Value>) {
        let name = object
            .get("metadata")
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str);
        if let Some(name) = name {
            if name.chars().count() > MAX_NAME_LENGTH {
                self.violation(
                    "metadata.name",
                    format!(
                        "{} is longer than the maximum length {MAX_NAME_LENGTH}",
                        show_str(name)
                    ),
                );
            }
        }
    }

    /// Walks one value; returns it pruned and defaulted.
    fn node(&mut self, schema: &Value, value: Value, path: &str) -> Value {
        if value.is_null() && flag(schema, "nullable") {
            return value;
        }
        if let Some(expected) = type_mismatch(schema, &value) {
            self.violation(path, format!("{} is not of type {expected}", show(&value)));
            return value;
        }
        self.check_enum(schema, &value, path);
        match value {
            Value::Object(map) => {
                let keep: &[&str] = if flag(schema, "x-kubernetes-embedded-resource") {
                    &["apiVersion", "kind", "metadata"]
                } else {
                    &[]
                };
                Value::Object(self.object(schema, map, path, keep))
            }
            Value::Array(items) => Value::Array(self.array(schema, items, path)),
            Value::String(s) => {
                self.string(schema, &s, path);
                Value::String(s)
            }
            Value::Number(ref n) => {
                if let Some(f) = n.as_f64() {
                    self.number(schema, f, &value, path);
                }
                value
            }
            other => other,
        }
    }

    /// Prunes fields the schema doesn't know (except `keep`), applies defaults, walks the rest.
    fn object(
        &mut self,
        schema: &Value,
        map: Map<String, Value>,
        path: &str,
        keep: &[&str],
    ) -> Map<String, Value> {
        let properties = schema.get("properties").and_then(Value::as_object);
        let additional = schema.get("additionalProperties");
        let preserve = flag(schema, "x-kubernetes-preserve-unknown-fields")
            || matches!(additional, Some(Value::Bool(true)));
        let mut out = Map::new();
        for (key, value) in map {
            let field_path = join(path, &key);
            if keep.contains(&key.as_str()) {
                out.insert(key, value);
                continue;
            }
            match (properties.and_then(|p| p.get(&key)), additional) {
                (Some(property), _) => {
                    // The API server drops nulls of non-nullable fields before defaulting.
                    if value.is_null() && !flag(property, "nullable") {
                        continue;
                    }
                    let value = self.node(property, value, &field_path);
                    out.insert(key, value);
                }
                (None, Some(item_schema @ Value::Object(_))) => {
                    let value = self.node(item_schema, value, &field_path);
                    out.insert(key, value);
                }
                (None, _) if preserve => {
                    out.insert(key, value);
                }
                (None, _) => {
                    self.pruned.insert(field_path);
                }
            }
        }
        for (key, property) in properties.into_iter().flatten() {
            if out.contains_key(key) || keep.contains(&key.as_str()) {
                continue;
            }
            if let Some(default) = property.get("default") {
                let value = self.node(property, default.clone(), &join(path, key));
                out.insert(key.clone(), value);
            }
        }
        for name in strings(schema.get("required")) {
            if !out.contains_key(name) && !keep.contains(&name) {
                self.violation(&join(path, name), "required".into());
            }
        }
        out
    }

    fn array(&mut self, schema: &Value, items: Vec<Value>, path: &str) -> Vec<Value> {
        let count = items.len() as u64;
        if let Some(min) = schema.get("minItems").and_then(Value::as_u64) {
            if count < min {
                self.violation(
                    path,
                    format!("has {count} items, fewer than the minimum {min}"),
                );
            }
        }
        if let Some(max) = schema.get("maxItems").and_then(Value::as_u64) {
            if count > max {
                self.violation(
                    path,
                    format!("has {count} items, more than the maximum {max}"),
                );
            }
        }
        match schema.get("items") {
            Some(item_schema @ Value::Object(_)) => items
                .into_iter()
                .enumerate()
                .map(|(i, item)| self.node(item_schema, item, &format!("{path}[{i}]")))
                .collect(),
            _ => items,
        }
    }
}

fn flag(schema: &Value, key: &str) -> bool {
    schema.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn strings(value: Option<&Value>) -> impl Iterator<Item = &str> {
    value
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// A value as JSON, shortened so one huge field doesn't swamp the message.
fn show(value: &Value) -> String {
    const LIMIT: usize = 80;
    let text = value.to_string();
    if text.chars().count() <= LIMIT {
        text
    } else {
        let head: String = text.chars().take(LIMIT).collect();
        format!("{head}…")
    }
}

fn show_str(s: &str) -> String {
    show(&Value::String(s.to_string()))
}

mod scalars;

#[cfg(test)]
mod tests;
