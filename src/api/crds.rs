//! The CustomResourceDefinitions of Kratix's kinds, generated from the types in this module.
//!
//! `deploy/crds/platform.kratix.io_crds.yaml` holds [`crds_yaml`]; a test fails when the two differ.
//! Regenerate the file with `KRATIX_REGENERATE_CRDS=1 cargo test --lib api::crds`.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::OnceLock;

use super::{
    BucketStateStore, Destination, GitStateStore, PipelineRun, Promise, PromiseRelease,
    PromiseRevision, ResourceBinding, Work, WorkPlacement,
};

/// The CRDs in a stable order: Promise, Destination, the state stores, Work, WorkPlacement,
/// PipelineRun, then the kinds of Promise versions and releases, then HealthRecord.
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![
        Promise::crd(),
        Destination::crd(),
        GitStateStore::crd(),
        BucketStateStore::crd(),
        Work::crd(),
        WorkPlacement::crd(),
        PipelineRun::crd(),
        PromiseRevision::crd(),
        ResourceBinding::crd(),
        PromiseRelease::crd(),
        super::health_record::crd(),
    ]
}

/// Every CRD as one multi-document YAML stream, `---` separated, in the order of [`crds`].
///
/// # Panics
///
/// Never in practice: a CRD is plain data with string keys, which YAML can always represent.
pub fn crds_yaml() -> String {
    let mut out = String::new();
    for crd in crds() {
        out.push_str("---\n");
        out.push_str(
            &serde_yaml::to_string(&crd)
                .expect("a CRD is plain data with string keys, which YAML can always represent"),
        );
    }
    out
}

/// The `openAPIV3Schema` of the Kratix kind named `kind` (e.g. `Destination`), as JSON, or `None`
/// for kinds without a CRD here. Generated once: derives build the whole schema each call.
pub fn schema_of(kind: &str) -> Option<&'static Value> {
    static SCHEMAS: OnceLock<BTreeMap<String, Value>> = OnceLock::new();
    SCHEMAS
        .get_or_init(|| {
            crds()
                .into_iter()
                .filter_map(|crd| {
                    let schema = crd
                        .spec
                        .versions
                        .first()?
                        .schema
                        .as_ref()?
                        .open_api_v3_schema
                        .as_ref()?;
                    Some((crd.spec.names.kind, serde_json::to_value(schema).ok()?))
                })
                .collect()
        })
        .get(kind)
}

/// Where [`crds_yaml`] is kept, relative to the workspace root.
pub const CRDS_FILE: &str = "deploy/crds/platform.kratix.io_crds.yaml";

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn deploy_crds_file_matches_the_types() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(CRDS_FILE);
        let want = crds_yaml();
        if std::env::var_os("KRATIX_REGENERATE_CRDS").is_some() {
            std::fs::create_dir_all(path.parent().expect("CRDS_FILE has a folder"))
                .expect("create deploy/crds");
            std::fs::write(&path, &want).expect("write the CRDs");
        }
        let got = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            got == want,
            "{CRDS_FILE} is out of date with src/api; regenerate it with \
             `KRATIX_REGENERATE_CRDS=1 cargo test --lib api::crds`"
        );
    }

    #[test]
    fn kratix_defaults_are_declared() {
        // (kind, JSON pointer into the schema's properties, default)
        let cases = [
            ("Destination", "/spec/properties/cleanup", json!("none")),
            (
                "Destination",
                "/spec/properties/filepath",
                json!({"mode": "nestedByMetadata"}),
            ),
            (
                "Destination",
                "/spec/properties/filepath/properties/mode",
                json!("nestedByMetadata"),
            ),
            ("Destination", "/spec/properties/initWorkloads", json!({})),
            (
                "Destination",
                "/spec/properties/initWorkloads/properties/enabled",
                json!(true),
            ),
            ("GitStateStore", "/spec/properties/branch", json!("main")),
            (
                "GitStateStore",
                "/spec/properties/authMethod",
                json!("basicAuth"),
            ),
            (
                "GitStateStore",
                "/spec/properties/gitAuthor",
                json!({"name": "kratix"}),
            ),
            (
                "BucketStateStore",
                "/spec/properties/authMethod",
                json!("accessKey"),
            ),
        ];
        for (kind, pointer, want) in cases {
            let schema = schema_of(kind).expect(kind);
            let got = schema["properties"].pointer(&format!("{pointer}/default"));
            assert_eq!(got, Some(&want), "{kind} {pointer}");
        }
        assert!(schema_of("Secret").is_none());
    }

    #[test]
    fn crds_come_in_a_stable_order_with_kratix_scopes() {
        let got: Vec<(String, String)> = crds()
            .into_iter()
            .map(|c| (c.spec.names.kind, c.spec.scope))
            .collect();
        let want = [
            ("Promise", "Cluster"),
            ("Destination", "Cluster"),
            ("GitStateStore", "Cluster"),
            ("BucketStateStore", "Cluster"),
            ("Work", "Namespaced"),
            ("WorkPlacement", "Namespaced"),
            ("PipelineRun", "Namespaced"),
            ("PromiseRevision", "Cluster"),
            ("ResourceBinding", "Namespaced"),
            ("PromiseRelease", "Cluster"),
            ("HealthRecord", "Namespaced"),
        ]
        .map(|(k, s)| (k.to_string(), s.to_string()));
        assert_eq!(got, want);
        let yaml = crds_yaml();
        assert_eq!(yaml.matches("---\n").count(), 11);
        assert!(yaml.starts_with("---\napiVersion: apiextensions.k8s.io/v1\n"));
    }

    #[test]
    fn crd_schemas_are_structural() {
        for crd in crds() {
            for version in &crd.spec.versions {
                let schema = version
                    .schema
                    .as_ref()
                    .and_then(|s| s.open_api_v3_schema.as_ref())
                    .expect("every version has a schema");
                let schema = serde_json::to_value(schema).expect("a schema is JSON");
                let mut problems = Vec::new();
                structural_problems(&schema, &crd.spec.names.kind, &mut problems);
                assert!(problems.is_empty(), "not structural: {problems:#?}");
                if crd.spec.names.kind == "HealthRecord" {
                    continue; // no status: the record is its data
                }
                assert_eq!(
                    schema["properties"]["status"]["x-kubernetes-preserve-unknown-fields"],
                    Value::Bool(true),
                    "{}: pipelines and controllers write arbitrary status fields",
                    crd.spec.names.kind
                );
            }
        }
    }

    #[test]
    fn structural_check_finds_free_form_fields() {
        let bad = serde_json::json!({"type": "object", "properties": {
            "free": {"type": "object"},
            "untyped": {"description": "x"},
            "list": {"type": "array"},
            "ref": {"$ref": "#/definitions/x"},
            "ok": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
        }});
        let mut problems = Vec::new();
        structural_problems(&bad, "T", &mut problems);
        problems.sort();
        assert_eq!(
            problems,
            [
                "T.free: object without properties, additionalProperties or x-kubernetes-preserve-unknown-fields",
                "T.list: array without items",
                "T.ref: $ref is not allowed",
                "T.ref: no type",
                "T.untyped: no type",
            ]
        );
    }

    /// The rules of a structural schema that derives can break: every node has a type (unless it
    /// keeps unknown fields or is int-or-string), objects say what they hold, arrays have items, and
    /// nothing is a `$ref`.
    fn structural_problems(schema: &Value, path: &str, problems: &mut Vec<String>) {
        let flag = |key: &str| schema.get(key).and_then(Value::as_bool) == Some(true);
        let preserve = flag("x-kubernetes-preserve-unknown-fields");
        if schema.get("$ref").is_some() {
            problems.push(format!("{path}: $ref is not allowed"));
        }
        for key in ["allOf", "anyOf", "oneOf", "definitions", "$defs"] {
            if schema.get(key).is_some() {
                problems.push(format!("{path}: {key} is not allowed"));
            }
        }
        let type_ = schema.get("type").and_then(Value::as_str);
        if type_.is_none() && !preserve && !flag("x-kubernetes-int-or-string") {
            problems.push(format!("{path}: no type"));
        }
        let properties = schema.get("properties").and_then(Value::as_object);
        let additional = schema.get("additionalProperties");
        if type_ == Some("object") && properties.is_none() && additional.is_none() && !preserve {
            problems.push(format!(
                "{path}: object without properties, additionalProperties or \
                 x-kubernetes-preserve-unknown-fields"
            ));
        }
        for (name, property) in properties.into_iter().flatten() {
            structural_problems(property, &format!("{path}.{name}"), problems);
        }
        if let Some(additional @ Value::Object(_)) = additional {
            structural_problems(additional, &format!("{path}.*"), problems);
        }
        match schema.get("items") {
            Some(items) => structural_problems(items, &format!("{path}[]"), problems),
            None if type_ == Some("array") => problems.push(format!("{path}: array without items")),
            None => {}
        }
    }
}
