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

use base64::Engine as _;
use serde_json::{Map, Value};

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

    fn string(&mut self, schema: &Value, s: &str, path: &str) {
        let length = s.chars().count() as u64;
        if let Some(min) = schema.get("minLength").and_then(Value::as_u64) {
            if length < min {
                self.violation(
                    path,
                    format!("{} is shorter than the minimum length {min}", show_str(s)),
                );
            }
        }
        if let Some(max) = schema.get("maxLength").and_then(Value::as_u64) {
            if length > max {
                self.violation(
                    path,
                    format!("{} is longer than the maximum length {max}", show_str(s)),
                );
            }
        }
        if let Some(pattern) = schema.get("pattern").and_then(Value::as_str) {
            match regex::Regex::new(pattern) {
                Ok(re) if !re.is_match(s) => self.violation(
                    path,
                    format!(
                        "{} does not match the pattern {}",
                        show_str(s),
                        show_str(pattern)
                    ),
                ),
                Ok(_) => {}
                Err(_) => self.violation(
                    path,
                    format!(
                        "the schema's pattern {} is not a valid regular expression",
                        show_str(pattern)
                    ),
                ),
            }
        }
        if let Some(format) = schema.get("format").and_then(Value::as_str) {
            if !format_matches(format, s) {
                self.violation(path, format!("{} is not a valid {format}", show_str(s)));
            }
        }
    }

    fn number(&mut self, schema: &Value, n: f64, value: &Value, path: &str) {
        let shown = show(value);
        let bound = |key: &str| schema.get(key).filter(|v| v.is_number());
        if let Some(max) = bound("maximum") {
            let limit = max.as_f64().unwrap_or(f64::INFINITY);
            if flag(schema, "exclusiveMaximum") {
                if n >= limit {
                    self.violation(
                        path,
                        format!("{shown} is greater than or equal to the exclusive maximum {max}"),
                    );
                }
            } else if n > limit {
                self.violation(path, format!("{shown} is greater than the maximum {max}"));
            }
        }
        if let Some(min) = bound("minimum") {
            let limit = min.as_f64().unwrap_or(f64::NEG_INFINITY);
            if flag(schema, "exclusiveMinimum") {
                if n <= limit {
                    self.violation(
                        path,
                        format!("{shown} is less than or equal to the exclusive minimum {min}"),
                    );
                }
            } else if n < limit {
                self.violation(path, format!("{shown} is less than the minimum {min}"));
            }
        }
        if let Some(multiple) = bound("multipleOf") {
            let m = multiple.as_f64().unwrap_or(1.0);
            if m > 0.0 && (n / m).fract() != 0.0 {
                self.violation(path, format!("{shown} is not a multiple of {multiple}"));
            }
        }
    }

    fn check_enum(&mut self, schema: &Value, value: &Value, path: &str) {
        let Some(Value::Array(allowed)) = schema.get("enum") else {
            return;
        };
        if !allowed.iter().any(|a| a == value) {
            let listed: Vec<String> = allowed.iter().map(show).collect();
            self.violation(
                path,
                format!("{} is not one of [{}]", show(value), listed.join(", ")),
            );
        }
    }
}

/// The declared type `value` fails to be, if any.
fn type_mismatch(schema: &Value, value: &Value) -> Option<String> {
    if flag(schema, "x-kubernetes-int-or-string") {
        return (!(value.is_string() || is_integer(value))).then(|| "integer or string".into());
    }
    let expected = schema.get("type")?.as_str()?;
    let matches = match expected {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "integer" => is_integer(value),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        // An unknown type is the schema's fault; the API server refuses such CRDs up front.
        _ => true,
    };
    (!matches).then(|| expected.to_string())
}

/// Whole-number floats count as integers, as in the API server's validator.
fn is_integer(value: &Value) -> bool {
    match value {
        Value::Number(n) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => false,
    }
}

fn format_matches(format: &str, s: &str) -> bool {
    match format {
        "date-time" => super::formats::is_date_time(s),
        "date" => super::formats::is_date(s),
        "byte" => base64::engine::general_purpose::STANDARD.decode(s).is_ok(),
        "uuid" => uuid::Uuid::parse_str(s).is_ok(),
        "ipv4" => s.parse::<std::net::Ipv4Addr>().is_ok(),
        "ipv6" => s.parse::<std::net::Ipv6Addr>().is_ok(),
        _ => true,
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "required": ["name"],
                    "properties": {
                        "name": {"type": "string", "minLength": 2, "maxLength": 10,
                                 "pattern": "^[a-z][a-z0-9-]*$"},
                        "size": {"type": "integer", "minimum": 1, "maximum": 10, "default": 1},
                        "count": {"type": "integer", "maximum": 10},
                        "ratio": {"type": "number", "exclusiveMinimum": true, "minimum": 0,
                                  "exclusiveMaximum": true, "maximum": 1},
                        "step": {"type": "integer", "multipleOf": 5},
                        "env": {"type": "string", "enum": ["dev", "prod"], "default": "dev"},
                        "enabled": {"type": "boolean"},
                        "when": {"type": "string", "format": "date-time"},
                        "colour": {"type": "string", "format": "no-such-format"},
                        "note": {"type": "string", "nullable": true},
                        "port": {"x-kubernetes-int-or-string": true},
                        "tags": {"type": "array", "minItems": 1, "maxItems": 3,
                                 "items": {"type": "string"}},
                        "users": {"type": "array", "items": {
                            "type": "object", "required": ["login"],
                            "properties": {"login": {"type": "string"},
                                           "role": {"type": "string", "default": "reader"}}}},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                        "extra": {"type": "object", "additionalProperties": true},
                        "values": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                                   "properties": {"replicas": {"type": "integer"}}},
                        "backup": {"type": "object", "default": {},
                                   "properties": {"schedule": {"type": "string", "default": "@daily"}}},
                        "manifest": {"type": "object", "x-kubernetes-embedded-resource": true,
                                     "x-kubernetes-preserve-unknown-fields": true}
                    }
                }
            }
        })
    }

    fn request(spec: Value) -> Value {
        json!({
            "apiVersion": "marketplace.kratix.io/v1alpha1",
            "kind": "PostgreSQL",
            "metadata": {"name": "example", "namespace": "default"},
            "spec": spec,
        })
    }

    fn violations(spec: Value) -> Vec<String> {
        match validate(&schema(), &request(spec)) {
            Err(Error::Invalid { violations }) => violations,
            other => panic!("expected violations, got {other:?}"),
        }
    }

    #[test]
    fn violations_name_the_field_and_the_value() {
        let cases: Vec<(Value, &str)> = vec![
            (
                json!({"name": "db", "size": "big"}),
                r#"spec.size: "big" is not of type integer"#,
            ),
            (json!({}), "spec.name: required"),
            (
                json!({"name": "db", "env": "x"}),
                r#"spec.env: "x" is not one of ["dev", "prod"]"#,
            ),
            (
                json!({"name": "db", "count": 11}),
                "spec.count: 11 is greater than the maximum 10",
            ),
            (
                json!({"name": "db", "size": 0}),
                "spec.size: 0 is less than the minimum 1",
            ),
            (
                json!({"name": "db", "ratio": 1}),
                "spec.ratio: 1 is greater than or equal to the exclusive maximum 1",
            ),
            (
                json!({"name": "db", "ratio": 0.0}),
                "spec.ratio: 0.0 is less than or equal to the exclusive minimum 0",
            ),
            (
                json!({"name": "db", "step": 7}),
                "spec.step: 7 is not a multiple of 5",
            ),
            (
                json!({"name": "d"}),
                r#"spec.name: "d" is shorter than the minimum length 2"#,
            ),
            (
                json!({"name": "abcdefghijk"}),
                r#"spec.name: "abcdefghijk" is longer than the maximum length 10"#,
            ),
            (
                json!({"name": "Db"}),
                r#"spec.name: "Db" does not match the pattern "^[a-z][a-z0-9-]*$""#,
            ),
            (
                json!({"name": "db", "enabled": "yes"}),
                r#"spec.enabled: "yes" is not of type boolean"#,
            ),
            (
                json!({"name": "db", "size": 2.5}),
                "spec.size: 2.5 is not of type integer",
            ),
            (
                json!({"name": "db", "ratio": "0.5"}),
                r#"spec.ratio: "0.5" is not of type number"#,
            ),
            (
                json!({"name": "db", "when": "yesterday"}),
                r#"spec.when: "yesterday" is not a valid date-time"#,
            ),
            (
                json!({"name": "db", "port": true}),
                "spec.port: true is not of type integer or string",
            ),
            (
                json!({"name": "db", "tags": []}),
                "spec.tags: has 0 items, fewer than the minimum 1",
            ),
            (
                json!({"name": "db", "tags": ["a", "b", "c", "d"]}),
                "spec.tags: has 4 items, more than the maximum 3",
            ),
            (
                json!({"name": "db", "tags": ["a", 2]}),
                "spec.tags[1]: 2 is not of type string",
            ),
            (
                json!({"name": "db", "users": [{"role": "admin"}]}),
                "spec.users[0].login: required",
            ),
            (
                json!({"name": "db", "labels": {"team": 3}}),
                "spec.labels.team: 3 is not of type string",
            ),
            (
                json!({"name": "db", "values": {"replicas": "two"}}),
                r#"spec.values.replicas: "two" is not of type integer"#,
            ),
            (
                json!({"name": "db", "tags": "a"}),
                r#"spec.tags: "a" is not of type array"#,
            ),
            (
                json!({"name": "db", "users": [null]}),
                "spec.users[0]: null is not of type object",
            ),
            (json!("db"), r#"spec: "db" is not of type object"#),
        ];
        for (spec, want) in cases {
            assert_eq!(
                violations(spec.clone()),
                vec![want.to_string()],
                "spec {spec}"
            );
        }
    }

    #[test]
    fn all_violations_are_reported_sorted() {
        let got = violations(json!({"size": "big", "env": "x", "count": 11}));
        assert_eq!(
            got,
            vec![
                "spec.count: 11 is greater than the maximum 10",
                r#"spec.env: "x" is not one of ["dev", "prod"]"#,
                "spec.name: required",
                r#"spec.size: "big" is not of type integer"#,
            ]
        );
        let err = validate(&schema(), &request(json!({"size": "big", "name": "db"})))
            .expect_err("invalid");
        assert_eq!(
            err.to_string(),
            r#"spec.size: "big" is not of type integer"#
        );
    }

    #[test]
    fn valid_requests_pass_with_defaults_applied() {
        let got = validate(
            &schema(),
            &request(json!({
                "name": "db",
                "size": 3,
                "ratio": 0.5,
                "step": 10,
                "when": "2024-05-01T10:00:00Z",
                "colour": "anything goes for unknown formats",
                "note": null,
                "port": "http",
                "tags": ["a"],
                "users": [{"login": "ann"}, {"login": "bob", "role": "admin"}],
                "labels": {"team": "data"},
                "backup": {"schedule": "@hourly"}
            })),
        )
        .expect("valid");
        assert!(got.pruned.is_empty());
        let spec = &got.object["spec"];
        assert_eq!(spec["env"], json!("dev"), "top-level default");
        assert_eq!(spec["size"], json!(3), "given value wins over the default");
        assert_eq!(
            spec["users"][0]["role"],
            json!("reader"),
            "default inside list items"
        );
        assert_eq!(spec["users"][1]["role"], json!("admin"));
        assert_eq!(spec["note"], Value::Null, "nullable keeps null");
        assert_eq!(spec["backup"], json!({"schedule": "@hourly"}));
    }

    #[test]
    fn defaults_are_applied_recursively_and_nulls_are_dropped_before_defaulting() {
        let got =
            validate(&schema(), &request(json!({"name": "db", "size": null}))).expect("valid");
        assert_eq!(
            got.object["spec"],
            json!({"name": "db", "size": 1, "env": "dev", "backup": {"schedule": "@daily"}})
        );
    }

    #[test]
    fn unknown_fields_are_pruned_and_reported_unless_preserved() {
        let got = validate(
            &schema(),
            &request(json!({
                "name": "db",
                "sise": 3,
                "users": [{"login": "ann", "admin": true}],
                "extra": {"anything": {"goes": 1}},
                "values": {"replicas": 2, "free": {"form": true}},
                "manifest": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"},
                             "data": {"a": "b"}},
                "backup": {"schedule": "@daily", "retention": 3}
            })),
        )
        .expect("valid");
        assert_eq!(
            got.pruned,
            vec!["spec.backup.retention", "spec.sise", "spec.users[0].admin"]
        );
        let spec = &got.object["spec"];
        assert!(spec.get("sise").is_none());
        assert_eq!(spec["users"][0], json!({"login": "ann", "role": "reader"}));
        assert_eq!(spec["extra"], json!({"anything": {"goes": 1}}));
        assert_eq!(
            spec["values"],
            json!({"replicas": 2, "free": {"form": true}})
        );
        assert_eq!(spec["manifest"]["data"], json!({"a": "b"}));
        assert_eq!(spec["backup"], json!({"schedule": "@daily"}));
    }

    #[test]
    fn only_declared_top_level_fields_are_touched() {
        let mut object = request(json!({"name": "db"}));
        object["status"] = json!({"anything": "pipelines wrote"});
        object["metadata"]["labels"] = json!({"a": "b"});
        object["data"] = json!({"x": 1});
        let got = validate(&schema(), &object).expect("valid");
        assert_eq!(got.pruned, vec!["data"]);
        assert_eq!(got.object["status"], object["status"]);
        assert_eq!(got.object["metadata"], object["metadata"]);
        assert_eq!(got.object["apiVersion"], object["apiVersion"]);
    }

    #[test]
    fn preserve_unknown_fields_at_the_top_keeps_everything() {
        let schema = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
        let object = json!({"apiVersion": "a/v1", "kind": "K", "metadata": {"name": "x"},
                            "spec": {"free": 1}, "data": 2});
        let got = validate(&schema, &object).expect("valid");
        assert_eq!(got.object, object);
        assert!(got.pruned.is_empty());
    }

    #[test]
    fn metadata_name_is_at_most_63_characters() {
        let mut object = request(json!({"name": "db"}));
        let long = "a".repeat(64);
        object["metadata"]["name"] = json!(long);
        let err = validate(&schema(), &object).expect_err("too long");
        assert_eq!(
            err,
            Error::Invalid {
                violations: vec![format!(
                    "metadata.name: \"{long}\" is longer than the maximum length 63"
                )]
            }
        );
        object["metadata"]["name"] = json!("a".repeat(63));
        assert!(validate(&schema(), &object).is_ok());
    }

    #[test]
    fn a_required_top_level_field_and_a_bad_pattern_are_reported() {
        let schema = json!({
            "type": "object",
            "required": ["spec"],
            "properties": {"spec": {"type": "object", "properties": {
                "name": {"type": "string", "pattern": "(unclosed"}}}}
        });
        let got = validate(&schema, &json!({"metadata": {"name": "x"}})).expect_err("no spec");
        assert_eq!(got.to_string(), "spec: required");
        let got = validate(&schema, &json!({"spec": {"name": "x"}})).expect_err("bad pattern");
        assert_eq!(
            got.to_string(),
            r#"spec.name: the schema's pattern "(unclosed" is not a valid regular expression"#
        );
    }

    #[test]
    fn a_non_object_is_refused() {
        assert_eq!(
            validate(&schema(), &json!([1])),
            Err(Error::NotAnObject {
                found: "[1]".into()
            })
        );
    }
}
