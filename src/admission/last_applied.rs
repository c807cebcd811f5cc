//! The applied document `apply` keeps in the last-applied annotation, written exactly as
//! `kubectl apply` writes it, so that objects moved between kratix-rs and a cluster keep their
//! history: kubectl reads ours and we read kubectl's.

use serde_json::{json, Map, Value};

use crate::api::hash::go_json;
use crate::api::labels::LAST_APPLIED;
use crate::api::Object;

/// Metadata the API server owns: a file's values for them are ignored.
pub(super) const SYSTEM_FIELDS: [&str; 6] = [
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "managedFields",
];

/// The annotation's value for a document as the file gives it, `namespace` filled in for a
/// namespaced kind. kubectl encodes it with Go's `encoding/json` after taking the annotation
/// itself out (which leaves `annotations: {}` when there was no other), followed by a newline
/// (`GetModifiedConfiguration` in k8s.io/kubectl/pkg/util/apply.go, kubernetes v1.30,
/// https://github.com/kubernetes/kubectl/blob/v0.30.0/pkg/util/apply.go).
pub(crate) fn configuration(document: &Value, namespace: Option<&str>) -> String {
    let mut document = document.clone();
    if let Some(metadata) = document.get_mut("metadata").and_then(Value::as_object_mut) {
        if let Some(namespace) = namespace {
            metadata.insert("namespace".into(), json!(namespace));
        }
        match metadata.get_mut("annotations") {
            Some(Value::Object(annotations)) => {
                annotations.remove(LAST_APPLIED);
            }
            _ => {
                metadata.insert("annotations".into(), Value::Object(Map::new()));
            }
        }
    }
    format!("{}\n", go_json(&document))
}

/// What the merge compares of an applied document: neither `status` (written by controllers
/// only), nor the metadata the API server owns, nor the annotation (`apply` sets it apart).
/// `annotations` is always a map, as in kubectl's documents (which always hold the annotation):
/// a file without annotations does not delete those others set.
pub(crate) fn comparable(mut document: Value) -> Value {
    if let Some(map) = document.as_object_mut() {
        map.remove("status");
    }
    if let Some(metadata) = document.get_mut("metadata").and_then(Value::as_object_mut) {
        for field in SYSTEM_FIELDS {
            metadata.remove(field);
        }
        match metadata.get_mut("annotations") {
            Some(Value::Object(annotations)) => {
                annotations.remove(LAST_APPLIED);
            }
            _ => {
                metadata.insert("annotations".into(), Value::Object(Map::new()));
            }
        }
    }
    document
}

/// The document applied last time, from a stored object's annotation; `None` when it has none
/// or it is not a JSON object (an object made otherwise than by apply).
pub(crate) fn previous(live: &Object) -> Option<Value> {
    let text = crate::api::object::annotation(live, LAST_APPLIED)?;
    serde_json::from_str::<Value>(text)
        .ok()
        .filter(Value::is_object)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_annotation_is_written_as_kubectl_writes_it() {
        // (case, document, namespace, annotation)
        let cases = [
            (
                "no annotations: an empty map stays, as kubectl leaves it",
                json!({"apiVersion": "v1", "kind": "K", "metadata": {"name": "x"}}),
                Some("default"),
                "{\"apiVersion\":\"v1\",\"kind\":\"K\",\"metadata\":{\"annotations\":{},\"name\":\"x\",\"namespace\":\"default\"}}\n",
            ),
            (
                "keys sorted, the annotation itself left out, HTML escaped as Go does",
                json!({"kind": "K", "apiVersion": "v1", "metadata": {"name": "x", "annotations": {
                    LAST_APPLIED: "old", "note": "a<b & c>d"}}, "spec": {"b": 1.5, "a": [2, 1]}}),
                None,
                "{\"apiVersion\":\"v1\",\"kind\":\"K\",\"metadata\":{\"annotations\":{\"note\":\"a\\u003cb \\u0026 c\\u003ed\"},\"name\":\"x\"},\"spec\":{\"a\":[2,1],\"b\":1.5}}\n",
            ),
            (
                "status and server fields in the file are kept, as kubectl keeps them",
                json!({"metadata": {"name": "x", "uid": "u"}, "status": {"s": true}}),
                None,
                "{\"metadata\":{\"annotations\":{},\"name\":\"x\",\"uid\":\"u\"},\"status\":{\"s\":true}}\n",
            ),
        ];
        for (case, document, namespace, want) in cases {
            assert_eq!(configuration(&document, namespace), want, "{case}");
        }
    }

    #[test]
    fn the_previous_document_is_read_back_and_compared_without_server_fields() {
        let document = json!({"apiVersion": "v1", "kind": "K",
            "metadata": {"name": "x", "uid": "u", "labels": {"a": "1"}}, "status": {"s": 1}});
        let live: Object = serde_json::from_value(json!({"apiVersion": "v1", "kind": "K",
            "metadata": {"name": "x", "annotations": {LAST_APPLIED: configuration(&document, None)}}}))
        .expect("an object");
        let previous = previous(&live).expect("an annotation");
        assert_eq!(
            comparable(previous),
            json!({"apiVersion": "v1", "kind": "K",
                   "metadata": {"name": "x", "labels": {"a": "1"}, "annotations": {}}})
        );
        let unparsable: Object = serde_json::from_value(json!({"apiVersion": "v1", "kind": "K",
            "metadata": {"name": "x", "annotations": {LAST_APPLIED: "not json"}}}))
        .expect("an object");
        assert_eq!(super::previous(&unparsable), None);
    }
}
