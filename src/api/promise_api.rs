//! A Promise's request kind, derived from the CRD embedded in its `spec.api`, and the lookup of
//! kinds by the names kubectl accepts.

use serde_json::Value;

use super::kinds::{builtin_kinds, KindInfo};
use super::object::{to_typed, Object};
use super::promise::Promise;

/// The kind a Promise offers, and the schema its requests are validated against.
#[derive(Debug, Clone, PartialEq)]
pub struct PromiseApi {
    /// Group, storage version and names; always namespaced.
    pub kind: KindInfo,
    /// `openAPIV3Schema` of the storage version, when the CRD declares one.
    pub schema: Option<Value>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Error {
    /// A field the CRD must have is absent or empty.
    #[error("{field}: required")]
    Required { field: String },
    /// A field has the wrong JSON type.
    #[error("{field}: must be {expected}")]
    WrongType {
        field: String,
        expected: &'static str,
    },
    /// A field has a value Kubernetes or Kratix refuses.
    #[error("{field}: {reason}")]
    Invalid { field: String, reason: String },
    /// Kratix's webhook refuses cluster-scoped Promise APIs: requests live in namespaces.
    #[error("spec.api.spec.scope: {scope:?} is not supported, a Promise's API must be Namespaced")]
    ClusterScoped { scope: String },
}

/// The request kind of `promise`, or `None` when it has no API (`spec.api` absent, `null` or `{}`).
///
/// The version is the storage version (the first with `storage: true`, else the first listed), as
/// Kratix uses for the GVK of requests.
pub fn request_kind(promise: &Promise) -> Result<Option<PromiseApi>, Error> {
    match &promise.spec.api {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(map)) if map.is_empty() => Ok(None),
        Some(api) => parse_crd(api).map(Some),
    }
}

fn parse_crd(api: &Value) -> Result<PromiseApi, Error> {
    if !api.is_object() {
        return Err(wrong_type("spec.api", "an object"));
    }
    let spec = object_at(api, "spec", "spec.api.spec")?;
    let group = string_at(spec, "group", "spec.api.spec.group")?;
    let names = object_at(spec, "names", "spec.api.spec.names")?;
    let kind = string_at(names, "kind", "spec.api.spec.names.kind")?;
    let plural = string_at(names, "plural", "spec.api.spec.names.plural")?;
    if plural != plural.to_ascii_lowercase() {
        return Err(Error::Invalid {
            field: "spec.api.spec.names.plural".into(),
            reason: format!("{plural:?} must be lowercase"),
        });
    }
    let singular = match optional_string(names, "singular", "spec.api.spec.names.singular")? {
        Some(s) => s,
        None => kind.to_ascii_lowercase(),
    };
    let short_names = match names.get("shortNames") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| {
                v.as_str().map(str::to_string).ok_or_else(|| {
                    wrong_type(&format!("spec.api.spec.names.shortNames[{i}]"), "a string")
                })
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(wrong_type(
                "spec.api.spec.names.shortNames",
                "a list of strings",
            ))
        }
    };
    let scope = optional_string(spec, "scope", "spec.api.spec.scope")?;
    if let Some(scope) = scope.filter(|s| s != "Namespaced") {
        return Err(Error::ClusterScoped { scope });
    }
    let expected_name = format!("{plural}.{group}");
    let metadata = object_at(api, "metadata", "spec.api.metadata")?;
    let name = string_at(metadata, "name", "spec.api.metadata.name")?;
    if name != expected_name {
        return Err(Error::Invalid {
            field: "spec.api.metadata.name".into(),
            reason: format!("{name:?} must be {expected_name:?} (<plural>.<group>)"),
        });
    }
    super::printer_columns::check(spec)
        .map_err(|(field, reason)| Error::Invalid { field, reason })?;
    let (version_index, version) = storage_version(spec)?;
    let version_name = string_at(
        version,
        "name",
        &format!("spec.api.spec.versions[{version_index}].name"),
    )?;
    let schema = version
        .get("schema")
        .and_then(|s| s.get("openAPIV3Schema"))
        .filter(|s| !s.is_null())
        .cloned();
    Ok(PromiseApi {
        kind: KindInfo {
            group,
            version: version_name,
            kind,
            plural,
            singular,
            short_names,
            namespaced: true,
        },
        schema,
    })
}

/// The first version with `storage: true`, else the first version.
fn storage_version(spec: &Value) -> Result<(usize, &Value), Error> {
    let versions = match spec.get("versions") {
        None | Some(Value::Null) => return Err(required("spec.api.spec.versions")),
        Some(Value::Array(v)) if v.is_empty() => return Err(required("spec.api.spec.versions")),
        Some(Value::Array(v)) => v,
        Some(_) => return Err(wrong_type("spec.api.spec.versions", "a list")),
    };
    for (i, v) in versions.iter().enumerate() {
        if !v.is_object() {
            return Err(wrong_type(
                &format!("spec.api.spec.versions[{i}]"),
                "an object",
            ));
        }
    }
    Ok(versions
        .iter()
        .enumerate()
        .find(|(_, v)| v.get("storage").and_then(Value::as_bool) == Some(true))
        .unwrap_or((0, &versions[0])))
}

fn object_at<'a>(parent: &'a Value, key: &str, field: &str) -> Result<&'a Value, Error> {
    match parent.get(key) {
        None | Some(Value::Null) => Err(required(field)),
        Some(v @ Value::Object(_)) => Ok(v),
        Some(_) => Err(wrong_type(field, "an object")),
    }
}

fn string_at(parent: &Value, key: &str, field: &str) -> Result<String, Error> {
    optional_string(parent, key, field)?.ok_or_else(|| required(field))
}

/// A string field; absent, `null` and `""` are all "not set".
fn optional_string(parent: &Value, key: &str, field: &str) -> Result<Option<String>, Error> {
    match parent.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(wrong_type(field, "a string")),
    }
}

fn required(field: &str) -> Error {
    Error::Required {
        field: field.to_string(),
    }
}

fn wrong_type(field: &str, expected: &'static str) -> Error {
    Error::WrongType {
        field: field.to_string(),
        expected,
    }
}

/// The request kinds of the Promises among `objects` that have a valid API. Promises whose API is
/// invalid are left out: they were refused when applied, or are reported by their own controller.
pub fn kinds_from_promises(objects: &[Object]) -> Vec<KindInfo> {
    objects
        .iter()
        .filter_map(|o| to_typed::<Promise>(o).ok())
        .filter_map(|p| request_kind(&p).ok().flatten())
        .map(|api| api.kind)
        .collect()
}

/// Kratix's own kinds and Secret, then the kinds of `promises`: the order [`resolve_kind`] prefers.
pub fn all_kinds(promises: &[Object]) -> Vec<KindInfo> {
    let mut kinds = builtin_kinds();
    kinds.extend(kinds_from_promises(promises));
    kinds
}

/// Finds the kind `name` refers to, the way kubectl does: by plural, singular, kind or short name,
/// in any case, optionally qualified as `<name>.<group>` or `<name>.<version>.<group>`.
///
/// When two kinds claim the same name, a match on the plural wins over the singular, the singular
/// over the kind, the kind over a short name; among equals, the first in `kinds` wins.
pub fn resolve_kind(name: &str, kinds: &[KindInfo]) -> Option<KindInfo> {
    let name = name.trim().to_ascii_lowercase();
    if name.is_empty() {
        return None;
    }
    let (bare, qualifier) = match name.split_once('.') {
        Some((bare, rest)) => (bare.to_string(), Some(rest.to_string())),
        None => (name, None),
    };
    let in_scope = |k: &KindInfo| match &qualifier {
        None => true,
        Some(q) => {
            let group = k.group.to_ascii_lowercase();
            *q == group || *q == format!("{}.{}", k.version.to_ascii_lowercase(), group)
        }
    };
    let rank = |k: &KindInfo| -> Option<u8> {
        if k.plural.to_ascii_lowercase() == bare {
            Some(0)
        } else if k.singular.to_ascii_lowercase() == bare {
            Some(1)
        } else if k.kind.to_ascii_lowercase() == bare {
            Some(2)
        } else if k.short_names.iter().any(|s| s.to_ascii_lowercase() == bare) {
            Some(3)
        } else {
            None
        }
    };
    kinds
        .iter()
        .filter(|k| in_scope(k))
        .filter_map(|k| rank(k).map(|r| (r, k)))
        .min_by_key(|(r, _)| *r)
        .map(|(_, k)| k.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crd(overrides: impl FnOnce(&mut Value)) -> Value {
        let mut api = json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "postgresqls.marketplace.kratix.io"},
            "spec": {
                "group": "marketplace.kratix.io",
                "names": {"kind": "PostgreSQL", "plural": "postgresqls", "singular": "postgresql",
                          "shortNames": ["pg"]},
                "scope": "Namespaced",
                "versions": [
                    {"name": "v1alpha1", "served": true, "storage": false,
                     "schema": {"openAPIV3Schema": {"type": "object", "description": "old"}}},
                    {"name": "v1alpha2", "served": true, "storage": true,
                     "schema": {"openAPIV3Schema": {"type": "object", "description": "new"}}}
                ]
            }
        });
        overrides(&mut api);
        api
    }

    fn promise(api: Option<Value>) -> Promise {
        let mut p = Promise::new("postgresql", Default::default());
        p.spec.api = api;
        p
    }

    fn kind(name: &str, group: &str, version: &str, short: &[&str], namespaced: bool) -> KindInfo {
        KindInfo {
            group: group.into(),
            version: version.into(),
            kind: name.into(),
            plural: format!("{}s", name.to_ascii_lowercase()),
            singular: name.to_ascii_lowercase(),
            short_names: short.iter().map(std::string::ToString::to_string).collect(),
            namespaced,
        }
    }

    #[test]
    fn request_kind_reads_group_storage_version_names_and_schema() {
        let api = request_kind(&promise(Some(crd(|_| {}))))
            .expect("valid")
            .expect("has an api");
        assert_eq!(
            api.kind,
            KindInfo {
                group: "marketplace.kratix.io".into(),
                version: "v1alpha2".into(),
                kind: "PostgreSQL".into(),
                plural: "postgresqls".into(),
                singular: "postgresql".into(),
                short_names: vec!["pg".into()],
                namespaced: true,
            }
        );
        assert_eq!(
            api.schema,
            Some(json!({"type": "object", "description": "new"}))
        );
    }

    #[test]
    fn request_kind_defaults() {
        let api = request_kind(&promise(Some(crd(|c| {
            let spec = &mut c["spec"];
            spec["names"] = json!({"kind": "PostgreSQL", "plural": "postgresqls"});
            spec.as_object_mut().expect("object").remove("scope");
            spec["versions"] = json!([{"name": "v1", "served": true}, {"name": "v2"}]);
        }))))
        .expect("valid")
        .expect("has an api");
        assert_eq!(
            api.kind.singular, "postgresql",
            "singular defaults to lower-case kind"
        );
        assert!(api.kind.short_names.is_empty());
        assert_eq!(api.kind.version, "v1", "no storage flag: the first version");
        assert!(api.kind.namespaced);
        assert_eq!(api.schema, None);
    }

    #[test]
    fn empty_api_means_no_api() {
        for api in [None, Some(Value::Null), Some(json!({}))] {
            assert_eq!(request_kind(&promise(api.clone())), Ok(None), "api {api:?}");
        }
    }

    #[test]
    fn invalid_apis_are_refused_naming_the_field() {
        type Edit = fn(&mut Value);
        let cases: Vec<(Edit, &str)> = vec![
            (|c| { c["spec"]["names"].as_object_mut().expect("o").remove("plural"); },
             "spec.api.spec.names.plural: required"),
            (|c| c["spec"]["names"]["kind"] = json!(""), "spec.api.spec.names.kind: required"),
            (|c| c["spec"]["group"] = Value::Null, "spec.api.spec.group: required"),
            (|c| c["spec"]["versions"] = json!([]), "spec.api.spec.versions: required"),
            (|c| c["spec"]["versions"] = json!([{"served": true}]), "spec.api.spec.versions[0].name: required"),
            (|c| c["spec"]["versions"] = json!("v1"), "spec.api.spec.versions: must be a list"),
            (|c| c["spec"]["names"]["shortNames"] = json!([1]), "spec.api.spec.names.shortNames[0]: must be a string"),
            (|c| c["spec"] = json!(null), "spec.api.spec: required"),
            (|c| *c = json!("a crd"), "spec.api: must be an object"),
            (|c| c["spec"]["scope"] = json!("Cluster"),
             "spec.api.spec.scope: \"Cluster\" is not supported, a Promise's API must be Namespaced"),
            (|c| c["spec"]["names"]["plural"] = json!("PostgreSQLs"),
             "spec.api.spec.names.plural: \"PostgreSQLs\" must be lowercase"),
            (|c| c["metadata"]["name"] = json!("pg.marketplace.kratix.io"),
             "spec.api.metadata.name: \"pg.marketplace.kratix.io\" must be \"postgresqls.marketplace.kratix.io\" (<plural>.<group>)"),
            (|c| { c.as_object_mut().expect("o").remove("metadata"); }, "spec.api.metadata: required"),
        ];
        for (edit, want) in cases {
            let err = request_kind(&promise(Some(crd(edit)))).expect_err(want);
            assert_eq!(err.to_string(), want);
        }
    }

    #[test]
    fn kinds_from_promises_skips_promises_without_a_valid_api() {
        let objects: Vec<Object> = [
            promise(Some(crd(|_| {}))),
            promise(None),
            promise(Some(crd(|c| c["spec"]["scope"] = json!("Cluster")))),
        ]
        .iter()
        .map(|p| crate::api::object::from_typed(p).expect("serializable"))
        .collect();
        let kinds = kinds_from_promises(&objects);
        assert_eq!(kinds.len(), 1);
        assert_eq!(kinds[0].kind, "PostgreSQL");
        let all = all_kinds(&objects);
        assert_eq!(all.len(), builtin_kinds().len() + 1);
    }

    #[test]
    fn resolve_kind_accepts_the_names_kubectl_accepts() {
        let mut kinds = builtin_kinds();
        kinds.push(kind(
            "PostgreSQL",
            "marketplace.kratix.io",
            "v1alpha1",
            &["pg"],
            true,
        ));
        // Claims "dest" as its plural: the plural must win over Destination's short name.
        kinds.push(kind("Dest", "example.com", "v1", &[], true));
        let cases: Vec<(&str, Option<(&str, &str)>)> = vec![
            ("Promise", Some(("platform.kratix.io", "Promise"))),
            ("promises", Some(("platform.kratix.io", "Promise"))),
            ("PROMISE", Some(("platform.kratix.io", "Promise"))),
            (
                "promises.platform.kratix.io",
                Some(("platform.kratix.io", "Promise")),
            ),
            (
                "promises.v1alpha1.platform.kratix.io",
                Some(("platform.kratix.io", "Promise")),
            ),
            ("promises.example.com", None),
            ("wp", Some(("platform.kratix.io", "WorkPlacement"))),
            ("secret", Some(("", "Secret"))),
            ("Secrets", Some(("", "Secret"))),
            ("postgresql", Some(("marketplace.kratix.io", "PostgreSQL"))),
            ("PostgreSQLs", Some(("marketplace.kratix.io", "PostgreSQL"))),
            ("pg", Some(("marketplace.kratix.io", "PostgreSQL"))),
            (
                "pg.marketplace.kratix.io",
                Some(("marketplace.kratix.io", "PostgreSQL")),
            ),
            ("dest", Some(("example.com", "Dest"))),
            ("destination", Some(("platform.kratix.io", "Destination"))),
            ("redis", None),
            ("", None),
        ];
        for (name, want) in cases {
            let got = resolve_kind(name, &kinds).map(|k| (k.group, k.kind));
            let want = want.map(|(g, k)| (g.to_string(), k.to_string()));
            assert_eq!(got, want, "resolving {name:?}");
        }
    }
}
