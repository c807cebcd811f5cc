//! The rules apply checks beyond each kind's typed shape: names and label values as the API
//! server checks them, paths that must not leave their folder, and Kratix's limits on pipeline
//! names. Each returns the reason, naming the field, for the document's error.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{json, Value};

use crate::api::pipeline::Pipeline;
use crate::api::{names, KindInfo, GROUP};

/// Names must be DNS-1123 subdomains, as Kubernetes requires. Names Kratix also writes into
/// label values (Promises, Destinations, requests) must fit one: 63 characters at most.
pub(super) fn check_name(name: &str, kind: &KindInfo) -> Result<(), String> {
    names::dns1123_subdomain(name)?;
    if kind.group.is_empty() && kind.kind == "Namespace" {
        names::dns1123_label(name)?;
    }
    let is_request = kind.group != GROUP && !kind.group.is_empty();
    let is_labelled_by =
        kind.group == GROUP && matches!(kind.kind.as_str(), "Promise" | "Destination");
    let in_labels = is_request || is_labelled_by;
    if in_labels && name.len() > names::LABEL_VALUE_MAX {
        return Err(format!(
            "is longer than {} characters, and Kratix labels objects with it (it has {})",
            names::LABEL_VALUE_MAX,
            name.len()
        ));
    }
    Ok(())
}

/// `metadata.labels` keys and values, as the API server checks them.
pub(super) fn check_labels(path: &str, labels: Option<&Value>) -> Result<(), String> {
    let Some(labels) = labels else {
        return Ok(());
    };
    let Some(map) = labels.as_object() else {
        return Err(format!("{path}: must be a mapping of strings"));
    };
    for (key, value) in map {
        names::qualified_name(key)
            .map_err(|reason| format!("{path}: key {} {reason}", shown(key)))?;
        let value = value
            .as_str()
            .ok_or_else(|| format!("{path}.{key}: must be a string"))?;
        names::label_value(value)
            .map_err(|reason| format!("{path}.{key}: {} {reason}", shown(value)))?;
    }
    Ok(())
}

pub(super) fn check_store_path(path: Option<&str>) -> Result<(), String> {
    match path {
        Some(path) => {
            names::store_path(path).map_err(|reason| format!("spec.path: {} {reason}", shown(path)))
        }
        None => Ok(()),
    }
}

pub(super) fn check_enum(path: &str, value: Option<&str>, allowed: &[&str]) -> Result<(), String> {
    match value {
        Some(v) if !allowed.contains(&v) => Err(format!(
            "{path}: {} is not one of {}",
            shown(v),
            allowed.join(", ")
        )),
        _ => Ok(()),
    }
}

/// A value quoted for an error message, cut short when it is long: errors must stay readable
/// however large the input.
pub(super) fn shown(value: &str) -> String {
    const MAX: usize = 64;
    match value.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{:?}... ({} bytes)", &value[..cut], value.len()),
        None => format!("{value:?}"),
    }
}

/// Kratix names a pipeline's Kubernetes objects `<promise>-<type>-<action>-<pipeline>`, and
/// refuses Promises where that is longer than this.
pub(super) const PIPELINE_ID_MAX: usize = 60;

/// The names of a Promise's request kind, as the API server checks a CRD's: they end up in
/// `get` arguments, URLs and object keys.
pub(super) fn check_api_names(kind: &KindInfo) -> Result<(), String> {
    let names_path = "spec.api.spec.names";
    let lower_kind = kind.kind.to_ascii_lowercase();
    let mut fields = vec![
        (format!("{names_path}.plural"), kind.plural.as_str()),
        (format!("{names_path}.singular"), kind.singular.as_str()),
        (
            format!("{names_path}.kind (lower-cased)"),
            lower_kind.as_str(),
        ),
    ];
    for (i, short) in kind.short_names.iter().enumerate() {
        fields.push((format!("{names_path}.shortNames[{i}]"), short.as_str()));
    }
    for (field, value) in fields {
        names::dns1035_label(value)
            .map_err(|reason| format!("{field}: {} {reason}", shown(value)))?;
    }
    names::dns1123_subdomain(&kind.group)
        .map_err(|reason| format!("spec.api.spec.group: {} {reason}", shown(&kind.group)))?;
    if !kind.group.contains('.') {
        return Err(format!(
            "spec.api.spec.group: {} must contain a '.'",
            shown(&kind.group)
        ));
    }
    Ok(())
}

/// A pipeline's name and its containers' names become Kubernetes names in Kratix (a Job's
/// containers, label values), so they follow the same rules here; they also name folders and
/// log files.
pub(super) fn check_pipeline(
    path: &str,
    pipeline: &Pipeline,
    promise: &str,
    ty: &str,
    action: &str,
) -> Result<(), String> {
    let name = pipeline.name();
    names::dns1123_label(name)
        .map_err(|reason| format!("{path}.metadata.name: {} {reason}", shown(name)))?;
    let id_len = [promise, ty, action, name]
        .iter()
        .map(|s| s.len())
        .sum::<usize>()
        + 3;
    if id_len > PIPELINE_ID_MAX {
        return Err(format!(
            "{path}.metadata.name: {} is too long: \"{promise}-{ty}-{action}-{name}\" names the \
             pipeline's objects and must be no more than {PIPELINE_ID_MAX} characters (it has {id_len})",
            shown(name)
        ));
    }
    check_labels(
        &format!("{path}.metadata.labels"),
        Some(&json!(pipeline.metadata.labels)),
    )?;
    if pipeline.spec.containers.is_empty() {
        return Err(format!(
            "{path}.spec.containers: a pipeline needs at least one container"
        ));
    }
    let mut seen = BTreeSet::new();
    for (i, container) in pipeline.spec.containers.iter().enumerate() {
        let field = format!("{path}.spec.containers[{i}].name");
        names::dns1123_label(&container.name)
            .map_err(|reason| format!("{field}: {} {reason}", shown(&container.name)))?;
        if !seen.insert(container.name.as_str()) {
            return Err(format!(
                "{field}: duplicate container name {:?}",
                container.name
            ));
        }
    }
    Ok(())
}

/// `value` as the kind `kind` (named as in its CRD). Where it does not parse, the reason names
/// the field the kind's CRD schema finds wrong: serde names only the innermost field
/// (`missing field \`name\``), not where it is.
pub(super) fn typed<T: serde::de::DeserializeOwned>(
    kind: &str,
    value: &Value,
) -> Result<T, String> {
    serde_json::from_value(value.clone()).map_err(|e| {
        crate::api::crds::schema_of(kind)
            .and_then(|schema| schema_violations(schema, value))
            .unwrap_or_else(|| e.to_string())
    })
}

/// What the schema finds wrong with `value`, each naming its field; `None` when nothing is.
/// The request-name limit the validation also applies is not the built-in kinds' rule.
fn schema_violations(schema: &Value, value: &Value) -> Option<String> {
    let Err(crate::api::validation::Error::Invalid { violations }) =
        crate::api::validation::validate(schema, value)
    else {
        return None;
    };
    let named: Vec<String> = violations
        .into_iter()
        .filter(|v| !v.starts_with("metadata.name:"))
        .collect();
    (!named.is_empty()).then(|| named.join("; "))
}

/// A PromiseRelease's source: of a type Kratix fetches, at a URL (Kratix's webhook refuses a
/// release without one).
pub(super) fn check_release(release: &crate::api::PromiseRelease) -> Result<(), String> {
    let source = &release.spec.source_ref;
    check_enum(
        "spec.sourceRef.type",
        Some(source.type_.as_str()),
        &[crate::api::promise_release::TYPE_HTTP],
    )?;
    if source.url.trim().is_empty() {
        return Err("spec.sourceRef.url: required".into());
    }
    Ok(())
}

/// A HealthRecord as its CRD declares it (`data.state` one of Kratix's states, defaulted).
pub(super) fn check_health_record(value: Value) -> Result<Value, String> {
    let value = match crate::api::crds::schema_of("HealthRecord") {
        Some(schema) => {
            crate::api::validation::validate(schema, &value)
                .map_err(|e| e.to_string())?
                .object
        }
        None => value,
    };
    serde_json::from_value::<crate::api::HealthRecord>(value.clone()).map_err(|e| e.to_string())?;
    Ok(value)
}

/// A Promise's `spec.workflows.config.reconciliationInterval`: a duration of at least the
/// platform's floor, as Kratix's webhook requires.
pub(super) fn check_reconciliation_interval(
    workflows: &crate::api::promise::Workflows,
    minimum: Duration,
) -> Result<(), String> {
    let Some(text) = workflows
        .config
        .as_ref()
        .and_then(|c| c.reconciliation_interval.as_deref())
    else {
        return Ok(());
    };
    check_interval(text, minimum)
        .map_err(|reason| format!("spec.workflows.config.reconciliationInterval: {reason}"))
}

/// Refuses a Promise's interval that is no duration or shorter than the minimum, as Kratix's
/// webhook does.
fn check_interval(text: &str, minimum: Duration) -> Result<(), String> {
    match crate::pipeline::metadata::parse_duration(text.trim()) {
        None => Err(format!(
            "{text:?} is not a duration (e.g. \"10h\", \"90m\")"
        )),
        Some(d) if d < minimum => Err(format!("{text:?} must be at least {minimum:?}")),
        Some(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::kinds::builtin_kinds;

    fn kind(name: &str) -> KindInfo {
        builtin_kinds()
            .into_iter()
            .find(|k| k.kind == name)
            .expect("a built-in kind")
    }

    #[test]
    fn names_used_in_labels_are_limited_to_63_characters() {
        let request = KindInfo {
            group: "example.kratix.io".into(),
            ..kind("Promise")
        };
        let long = "a".repeat(64);
        // (kind, name, accepted)
        let cases = [
            (kind("Promise"), "a".repeat(63), true),
            (kind("Promise"), long.clone(), false),
            (kind("Destination"), long.clone(), false),
            (request, long.clone(), false),
            (kind("GitStateStore"), long.clone(), true),
            (kind("Secret"), long.clone(), true),
            (kind("Secret"), "a/b".into(), false),
        ];
        for (kind, name, ok) in cases {
            assert_eq!(check_name(&name, &kind).is_ok(), ok, "{} {name}", kind.kind);
        }
    }

    #[test]
    fn long_values_are_cut_short_in_messages() {
        assert_eq!(shown("abc"), "\"abc\"");
        let long = "é".repeat(100);
        let cut = shown(&long);
        assert!(cut.ends_with("... (200 bytes)"), "{cut}");
        assert_eq!(cut.matches('é').count(), 64);
    }

    #[test]
    fn labels_are_checked_key_and_value() {
        // (labels, error)
        let cases = [
            (json!({"a": "b", "kratix.io/x": ""}), None),
            (json!("x"), Some("l: must be a mapping of strings")),
            (json!({"a/b/c": "x"}), Some("l: key \"a/b/c\"")),
            (json!({"a": 1}), Some("l.a: must be a string")),
            (
                json!({"a": "b c"}),
                Some("l.a: \"b c\" is not a label value"),
            ),
        ];
        for (labels, want) in cases {
            let got = check_labels("l", Some(&labels)).err();
            match (got, want) {
                (None, None) => {}
                (Some(got), Some(want)) => assert!(got.starts_with(want), "{got}"),
                (got, want) => panic!("{labels}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn objects_that_do_not_parse_name_the_field_that_is_wrong() {
        let binding = |spec: Value| {
            json!({"apiVersion": "platform.kratix.io/v1alpha1", "kind": "ResourceBinding",
                "metadata": {"name": "b", "namespace": "default"}, "spec": spec})
        };
        let destination = json!({"apiVersion": "platform.kratix.io/v1alpha1",
            "kind": "Destination", "metadata": {"name": "d"},
            "spec": {"filepath": {"mode": "sideways"}}});
        // (kind, object, the error starts with)
        let cases = [
            (
                "ResourceBinding",
                binding(json!({"version": "v1", "promiseRef": {}, "resourceRef": {"name": "r"}})),
                "spec.promiseRef.name: required",
            ),
            (
                "ResourceBinding",
                binding(json!({"version": 3, "promiseRef": {"name": "p"},
                    "resourceRef": {"name": "r"}})),
                "spec.version: 3 is not of type string",
            ),
            (
                "Destination",
                destination,
                "spec.filepath.mode: \"sideways\" is not one of",
            ),
        ];
        for (kind, object, want) in cases {
            let got = match kind {
                "Destination" => typed::<crate::api::Destination>(kind, &object).err(),
                _ => typed::<crate::api::ResourceBinding>(kind, &object).err(),
            };
            let got = got.unwrap_or_else(|| panic!("{object} was accepted"));
            assert!(got.starts_with(want), "{kind}: {got}");
        }
        // Where the schema finds nothing wrong, serde's reason stands.
        let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
            "data": {"a": 1}});
        let got = typed::<crate::api::Secret>("Secret", &secret).err();
        assert!(got.is_some_and(|e| e.contains("invalid type")));
    }

    #[test]
    fn a_release_needs_an_http_source_with_a_url() {
        let release = |source: Value| -> crate::api::PromiseRelease {
            serde_json::from_value(json!({"apiVersion": "platform.kratix.io/v1alpha1",
                "kind": "PromiseRelease", "metadata": {"name": "r"},
                "spec": {"sourceRef": source}}))
            .expect("a PromiseRelease")
        };
        // (sourceRef, error)
        let cases = [
            (json!({"type": "http", "url": "http://x/p.yaml"}), None),
            (json!({"url": "http://x/p.yaml"}), None),
            (
                json!({"type": "git", "url": "http://x"}),
                Some("spec.sourceRef.type: \"git\" is not one of"),
            ),
            (
                json!({"type": "http"}),
                Some("spec.sourceRef.url: required"),
            ),
            (json!({"url": " "}), Some("spec.sourceRef.url: required")),
        ];
        for (source, want) in cases {
            let got = check_release(&release(source.clone())).err();
            match (got, want) {
                (None, None) => {}
                (Some(got), Some(want)) => assert!(got.starts_with(want), "{got}"),
                (got, want) => panic!("{source}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn a_promise_interval_is_a_duration_of_at_least_the_minimum() {
        let minute = Duration::from_secs(60);
        assert_eq!(check_interval("10h", minute), Ok(()));
        assert_eq!(check_interval("1m", minute), Ok(()));
        assert_eq!(
            check_interval("30s", minute),
            Err("\"30s\" must be at least 60s".into())
        );
        assert!(check_interval("often", minute).is_err());
        assert!(check_interval("600", minute).is_err());
    }
}
