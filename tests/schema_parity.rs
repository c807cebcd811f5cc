//! `kratix-rs crds` covers every kind and field of Kratix's own CRDs (a copy kept in
//! `fixtures/kratix-crds`): per kind, every field path of Kratix's schema is in ours.

mod support;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;
use support::{fixtures, Kratix};

/// Kratix's kinds that `kratix-rs crds` does not declare (yet), and why. A kind that is then
/// served must leave this list: the test fails until it does.
const KNOWN_GAPS: &[(&str, &str)] = &[("DryRun", "served by `kratix-rs diff` instead of a kind")];

/// Fields every object has, which the API server serves whatever the schema says.
const IMPLICIT: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// Every field path of a schema: `a.b`, `a.list[]`, `a.map.*`.
fn paths(schema: &Value, prefix: &str, out: &mut BTreeSet<String>) {
    if !prefix.is_empty() {
        out.insert(prefix.to_string());
    }
    let join = |name: &str| {
        if prefix.is_empty() {
            name.to_string()
        } else {
            format!("{prefix}.{name}")
        }
    };
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            if prefix.is_empty() && IMPLICIT.contains(&name.as_str()) {
                continue;
            }
            paths(property, &join(name), out);
        }
    }
    if let Some(items) = schema.get("items") {
        paths(items, &format!("{prefix}[]"), out);
    }
    if let Some(additional @ Value::Object(_)) = schema.get("additionalProperties") {
        paths(additional, &join("*"), out);
    }
}

/// Field paths per kind of a multi-document stream of CRDs.
fn fields_per_kind(yaml: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut out = BTreeMap::new();
    for document in serde_yaml::Deserializer::from_str(yaml) {
        let crd: Value = serde::Deserialize::deserialize(document).expect("a CRD parses");
        if crd.is_null() {
            continue;
        }
        let kind = crd["spec"]["names"]["kind"]
            .as_str()
            .expect("a CRD names its kind")
            .to_string();
        let mut fields = BTreeSet::new();
        for version in crd["spec"]["versions"].as_array().into_iter().flatten() {
            paths(&version["schema"]["openAPIV3Schema"], "", &mut fields);
        }
        out.insert(kind, fields);
    }
    out
}

fn kratix_fields() -> BTreeMap<String, BTreeSet<String>> {
    let folder = fixtures().join("kratix-crds");
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(&folder).expect("fixtures/kratix-crds") {
        let path = entry.expect("a folder entry").path();
        if path.extension().and_then(|e| e.to_str()) == Some("yaml") {
            let text = std::fs::read_to_string(&path).expect("a CRD file");
            out.extend(fields_per_kind(&text));
        }
    }
    out
}

#[test]
fn crds_cover_every_kind_and_field_of_kratix() {
    let kratix = kratix_fields();
    assert!(kratix.len() >= 11, "the fixtures hold Kratix's CRDs");
    let run = Kratix::new().run(&["crds"]);
    run.assert_ok();
    let ours = fields_per_kind(&run.stdout);
    let gaps: BTreeMap<&str, &str> = KNOWN_GAPS.iter().copied().collect();

    let mut missing = Vec::new();
    for (kind, fields) in &kratix {
        match (ours.get(kind), gaps.get(kind.as_str())) {
            (Some(_), Some(_)) => {
                missing.push(format!("{kind}: served now, so it must leave KNOWN_GAPS"));
            }
            (None, Some(_)) => {}
            (None, None) => missing.push(format!("{kind}: the kind is missing")),
            (Some(have), None) => missing.extend(
                fields
                    .difference(have)
                    .map(|field| format!("{kind}: {field}")),
            ),
        }
    }
    for kind in gaps.keys() {
        if !kratix.contains_key(*kind) {
            missing.push(format!(
                "{kind}: listed in KNOWN_GAPS but not a Kratix kind"
            ));
        }
    }
    assert!(
        missing.is_empty(),
        "`kratix-rs crds` lacks what Kratix's CRDs declare:\n{}",
        missing.join("\n")
    );
}

#[test]
fn field_paths_name_lists_maps_and_nested_fields() {
    let schema = serde_json::json!({"type": "object", "properties": {
        "apiVersion": {"type": "string"},
        "spec": {"type": "object", "properties": {
            "list": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
            "map": {"type": "object", "additionalProperties": {"type": "object", "properties": {"b": {"type": "string"}}}}
        }}
    }});
    let mut got = BTreeSet::new();
    paths(&schema, "", &mut got);
    let want = [
        "spec",
        "spec.list",
        "spec.list[]",
        "spec.list[].a",
        "spec.map",
        "spec.map.*",
        "spec.map.*.b",
    ];
    assert_eq!(
        got,
        want.iter().map(std::string::ToString::to_string).collect()
    );
}
