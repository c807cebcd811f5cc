//! What `get` and the platform's API show people of an object: every value of a Secret and the
//! password in a state store's URL replaced, so that credentials never show.

use serde_json::{json, Value};

use crate::api::labels::LAST_APPLIED;
use crate::api::{KindInfo, Object};

/// Replaces every value of a Secret's `data`/`stringData`, and the password in a state store's
/// URL or endpoint (`https://user:password@host/…`), so that `get` never shows credentials.
pub(crate) fn redact(kind: &KindInfo, obj: &Object) -> Value {
    let mut value = serde_json::to_value(obj).unwrap_or(Value::Null);
    if kind.group.is_empty() && kind.kind == "Secret" {
        for field in ["data", "stringData"] {
            if let Some(map) = value.get_mut(field).and_then(Value::as_object_mut) {
                for v in map.values_mut() {
                    *v = json!("<redacted>");
                }
            }
        }
        // kubectl keeps the whole applied document, values included, in this annotation.
        if let Some(annotation) = value
            .pointer_mut("/metadata/annotations")
            .and_then(Value::as_object_mut)
            .and_then(|a| a.get_mut(LAST_APPLIED))
        {
            *annotation = json!("<redacted>");
        }
    }
    if let Some(pointer) = url_field(kind) {
        redact_url_at(&mut value, pointer);
        // The applied document holds the URL as the file gave it. Left byte for byte as it is
        // unless it holds a password, so that an exported object keeps its history for kubectl.
        if let Some(annotation) = value
            .pointer_mut("/metadata/annotations")
            .and_then(Value::as_object_mut)
            .and_then(|a| a.get_mut(LAST_APPLIED))
        {
            let applied = annotation
                .as_str()
                .and_then(|text| serde_json::from_str::<Value>(text).ok());
            match applied {
                Some(mut applied) => {
                    if redact_url_at(&mut applied, pointer) {
                        *annotation = json!(format!("{}\n", crate::api::hash::go_json(&applied)));
                    }
                }
                None => *annotation = json!("<redacted>"),
            }
        }
    }
    value
}

/// Redacts the password of the URL at `pointer`; whether there was one.
fn redact_url_at(value: &mut Value, pointer: &str) -> bool {
    let Some(url) = value.pointer_mut(pointer) else {
        return false;
    };
    let Some(text) = url.as_str() else {
        return false;
    };
    let shown = statestores::redact_url(text);
    let changed = shown != text;
    *url = json!(shown);
    changed
}

/// Where a state store (or a release) keeps the URL that may hold a password.
fn url_field(kind: &KindInfo) -> Option<&'static str> {
    if kind.group != crate::api::GROUP {
        return None;
    }
    match kind.kind.as_str() {
        "GitStateStore" => Some("/spec/url"),
        "BucketStateStore" => Some("/spec/endpoint"),
        "PromiseRelease" => Some("/spec/sourceRef/url"),
        _ => None,
    }
}
