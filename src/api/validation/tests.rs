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
    let err =
        validate(&schema(), &request(json!({"size": "big", "name": "db"}))).expect_err("invalid");
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
    let got = validate(&schema(), &request(json!({"name": "db", "size": null}))).expect("valid");
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
