//! How `get` prints objects: tables like kubectl's, YAML, JSON. Secret values are never printed.

use serde_json::{json, Value};

use crate::api::object::condition;
use crate::api::{KindInfo, Object};

/// Replaces every value of a Secret's `data`/`stringData`, and the password in a state store's
/// URL or endpoint (`https://user:password@host/…`), so that `get` never shows credentials.
pub fn redact(kind: &KindInfo, obj: &Object) -> Value {
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
        if let Some(url) = value.pointer_mut(pointer) {
            if let Some(text) = url.as_str() {
                *url = json!(statestores::redact_url(text));
            }
        }
    }
    value
}

const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Where a state store keeps the URL that may hold a password.
fn url_field(kind: &KindInfo) -> Option<&'static str> {
    if kind.group != crate::api::GROUP {
        return None;
    }
    match kind.kind.as_str() {
        "GitStateStore" => Some("/spec/url"),
        "BucketStateStore" => Some("/spec/endpoint"),
        _ => None,
    }
}

pub fn list_json(kind: &KindInfo, objs: &[Object]) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "List",
        "items": objs.iter().map(|o| redact(kind, o)).collect::<Vec<_>>(),
    })
}

fn text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

fn condition_field(obj: &Object, type_: &str, field: &str) -> String {
    text(condition(obj, type_).and_then(|c| c.get(field)))
}

/// Column headers and cells for one kind, as Kratix's printer columns define them.
type Column = (&'static str, fn(&Object) -> String);

fn columns(kind: &KindInfo) -> Vec<Column> {
    match kind.kind.as_str() {
        "Promise" => vec![
            ("STATUS", |o| text(o.data.pointer("/status/status"))),
            ("KIND", |o| text(o.data.pointer("/status/kind"))),
            ("API VERSION", |o| {
                text(o.data.pointer("/status/apiVersion"))
            }),
            ("VERSION", |o| text(o.data.pointer("/status/version"))),
        ],
        "Destination" => vec![
            ("STATESTOREKIND", |o| {
                text(o.data.pointer("/spec/stateStoreRef/kind"))
            }),
            ("STATESTORENAME", |o| {
                text(o.data.pointer("/spec/stateStoreRef/name"))
            }),
            ("READY", |o| condition_field(o, "Ready", "status")),
        ],
        "GitStateStore" => vec![
            ("URL", |o| {
                statestores::redact_url(&text(o.data.pointer("/spec/url")))
            }),
            ("BRANCH", |o| {
                let b = text(o.data.pointer("/spec/branch"));
                if b.is_empty() {
                    "main".into()
                } else {
                    b
                }
            }),
            ("READY", |o| condition_field(o, "Ready", "status")),
        ],
        "BucketStateStore" => vec![
            ("BUCKET", |o| text(o.data.pointer("/spec/bucketName"))),
            ("ENDPOINT", |o| {
                statestores::redact_url(&text(o.data.pointer("/spec/endpoint")))
            }),
            ("READY", |o| condition_field(o, "Ready", "status")),
        ],
        "Work" => vec![("STATUS", |o| condition_field(o, "Ready", "message"))],
        "WorkPlacement" => vec![
            ("DESTINATION", |o| {
                text(o.data.pointer("/spec/targetDestinationName"))
            }),
            ("STATUS", |o| condition_field(o, "Ready", "message")),
            ("VERSION", |o| {
                let v = text(o.data.pointer("/status/versionID"));
                v.chars().take(12).collect()
            }),
        ],
        "PipelineRun" => vec![
            ("PIPELINE", |o| text(o.data.pointer("/spec/pipelineName"))),
            ("ACTION", |o| text(o.data.pointer("/spec/workflowAction"))),
            ("PHASE", |o| text(o.data.pointer("/status/phase"))),
            ("START", |o| text(o.data.pointer("/status/startTime"))),
            ("COMPLETION", |o| {
                text(o.data.pointer("/status/completionTime"))
            }),
        ],
        "Secret" => vec![
            ("TYPE", |o| text(o.data.get("type"))),
            ("DATA", |o| {
                o.data
                    .get("data")
                    .and_then(Value::as_object)
                    .map_or(0, |m| m.len())
                    .to_string()
            }),
        ],
        _ => vec![
            ("STATUS", |o| condition_field(o, "Reconciled", "message")),
            ("MESSAGE", |o| text(o.data.pointer("/status/message"))),
        ],
    }
}

/// A kubectl-like table. `all_namespaces` adds a NAMESPACE column; `wide` adds generation,
/// observed generation and labels.
pub fn table(kind: &KindInfo, objs: &[Object], all_namespaces: bool, wide: bool) -> String {
    let cols = columns(kind);
    let mut header: Vec<String> = Vec::new();
    if all_namespaces && kind.namespaced {
        header.push("NAMESPACE".into());
    }
    header.push("NAME".into());
    header.extend(cols.iter().map(|(h, _)| h.to_string()));
    if wide {
        header.extend(["GENERATION", "OBSERVED", "LABELS"].map(String::from));
    }
    let mut rows = vec![header];
    for o in objs {
        let mut row = Vec::new();
        if all_namespaces && kind.namespaced {
            row.push(o.metadata.namespace.clone().unwrap_or_default());
        }
        row.push(o.metadata.name.clone().unwrap_or_default());
        row.extend(cols.iter().map(|(_, f)| f(o)));
        if wide {
            row.push(
                o.metadata
                    .generation
                    .map(|g| g.to_string())
                    .unwrap_or_default(),
            );
            row.push(text(o.data.pointer("/status/observedGeneration")));
            row.push(
                o.metadata
                    .labels
                    .iter()
                    .flatten()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(","),
            );
        }
        rows.push(row);
    }
    render(&rows)
}

fn render(rows: &[Vec<String>]) -> String {
    let width = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..width)
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(String::len)
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let line: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(i, cell)| format!("{cell:<w$}", w = widths[i]))
            .collect();
        out.push_str(line.join("   ").trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(value: Value) -> Object {
        serde_json::from_value(value).expect("an object")
    }

    #[test]
    fn credentials_are_redacted_in_every_format() {
        let secret = object(json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s", "namespace": "default", "annotations": {
                LAST_APPLIED: "{\"stringData\":{\"token\":\"hunter3\"}}",
            }},
            "data": {"password": "aHVudGVyMg=="},
            "stringData": {"token": "hunter3"},
        }));
        let store = object(json!({
            "apiVersion": "platform.kratix.io/v1alpha1", "kind": "GitStateStore",
            "metadata": {"name": "g"},
            "spec": {"url": "https://u:hunter4@h/r.git", "branch": "main"},
        }));
        let bucket = object(json!({
            "apiVersion": "platform.kratix.io/v1alpha1", "kind": "BucketStateStore",
            "metadata": {"name": "b"},
            "spec": {"endpoint": "https://u:hunter4@s3.local", "bucketName": "b"},
        }));
        let cases = [
            (
                crate::platform::builtin(crate::api::Builtin::Secret),
                secret,
                "<redacted>",
            ),
            (
                crate::platform::builtin(crate::api::Builtin::BucketStateStore),
                bucket,
                "https://u:<redacted>@s3.local",
            ),
            (
                crate::platform::builtin(crate::api::Builtin::GitStateStore),
                store,
                "https://u:<redacted>@h/r.git",
            ),
        ];
        for (kind, obj, shown) in cases {
            let json = redact(&kind, &obj).to_string();
            let listed = list_json(&kind, std::slice::from_ref(&obj)).to_string();
            let wide = table(&kind, std::slice::from_ref(&obj), true, true);
            for text in [&json, &listed, &wide] {
                for secret in ["aHVudGVyMg==", "hunter3", "hunter4"] {
                    assert!(
                        !text.contains(secret),
                        "{} shows {secret}: {text}",
                        kind.kind
                    );
                }
            }
            assert!(json.contains(shown), "{json}");
        }
    }
}
