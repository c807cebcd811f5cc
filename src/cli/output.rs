//! How `get` prints objects: tables like kubectl's, YAML, JSON. Secret values are never printed.

use serde_json::{json, Value};

pub(crate) use crate::api::redact::redact;
use crate::api::{KindInfo, Object};

use crate::api::columns::{resource_name, table_columns, Column};
use crate::api::printer_columns::PrinterColumn;

pub(crate) fn list_json(kind: &KindInfo, objs: &[Object]) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "List",
        "items": objs.iter().map(|o| redact(kind, o)).collect::<Vec<_>>(),
    })
}

/// What a `get` table shows besides Kratix's printer columns.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct TableOptions {
    /// A NAMESPACE column first (`-A`).
    pub all_namespaces: bool,
    /// The wide columns, generation and observed generation, and labels (`-o wide`).
    pub wide: bool,
    /// A LABELS column (`--show-labels`).
    pub show_labels: bool,
}

/// A kubectl-like table of `objs` (with the columns their Promise `declared`, if any).
pub(crate) fn table(
    kind: &KindInfo,
    declared: &[PrinterColumn],
    objs: &[Object],
    options: TableOptions,
) -> String {
    let now = format!("{:.0}", jiff::Timestamp::now());
    let cols: Vec<Column> = table_columns(kind, declared)
        .into_iter()
        .filter(|c| options.wide || !c.wide)
        .collect();
    let namespace = options.all_namespaces && kind.namespaced;
    let labels = options.wide || options.show_labels;
    let mut header: Vec<String> = Vec::new();
    if namespace {
        header.push("NAMESPACE".into());
    }
    header.push("NAME".into());
    header.extend(cols.iter().map(|c| c.header.to_string()));
    if labels {
        header.push("LABELS".into());
    }
    let mut rows = vec![header];
    for o in objs {
        let mut row = Vec::new();
        if namespace {
            row.push(o.metadata.namespace.clone().unwrap_or_default());
        }
        row.push(o.metadata.name.clone().unwrap_or_default());
        row.extend(cols.iter().map(|c| c.text(o, &now)));
        if labels {
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

/// `-o name`: one `kind.group/name` line per object.
pub(crate) fn names(kind: &KindInfo, objs: &[Object]) -> String {
    objs.iter().map(|o| resource_name(kind, o) + "\n").collect()
}

/// Rows as aligned columns, three spaces apart, trailing blanks trimmed.
pub(crate) fn render(rows: &[Vec<String>]) -> String {
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
    use crate::api::labels::LAST_APPLIED;

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
            "metadata": {"name": "g", "annotations": {
                LAST_APPLIED: "{\"spec\":{\"url\":\"https://u:hunter4@h/r.git\"}}\n",
            }},
            "spec": {"url": "https://u:hunter4@h/r.git", "branch": "main"},
        }));
        let bucket = object(json!({
            "apiVersion": "platform.kratix.io/v1alpha1", "kind": "BucketStateStore",
            "metadata": {"name": "b"},
            "spec": {"endpoint": "https://u:hunter4@s3.local", "bucketName": "b"},
        }));
        let release = object(json!({
            "apiVersion": "platform.kratix.io/v1alpha1", "kind": "PromiseRelease",
            "metadata": {"name": "r"},
            "spec": {"sourceRef": {"type": "http", "url": "https://u:hunter4@h/p.yaml"}},
        }));
        let cases = [
            (
                crate::platform::builtin(crate::api::Builtin::PromiseRelease),
                release,
                "https://u:<redacted>@h/p.yaml",
            ),
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
            let wide = table(
                &kind,
                &[],
                std::slice::from_ref(&obj),
                TableOptions {
                    all_namespaces: true,
                    wide: true,
                    show_labels: true,
                },
            );
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

    #[test]
    fn a_state_stores_applied_document_keeps_all_but_the_password() {
        let store = object(json!({
            "apiVersion": "platform.kratix.io/v1alpha1", "kind": "GitStateStore",
            "metadata": {"name": "g", "annotations": {
                LAST_APPLIED: "{\"spec\":{\"url\":\"https://u:hunter4@h/r.git\",\"path\":\"p\"}}\n",
            }},
            "spec": {"url": "https://u:hunter4@h/r.git"},
        }));
        let kind = crate::platform::builtin(crate::api::Builtin::GitStateStore);
        assert_eq!(
            redact(&kind, &store)["metadata"]["annotations"][LAST_APPLIED],
            "{\"spec\":{\"path\":\"p\",\"url\":\"https://u:\\u003credacted\\u003e@h/r.git\"}}\n"
        );
        // Without a password the document is left as kubectl wrote it.
        let written = "{\"spec\":{\"url\":\"https://h/r.git\",\"b\":\"<\"}}\n";
        let store = object(json!({
            "apiVersion": "platform.kratix.io/v1alpha1", "kind": "GitStateStore",
            "metadata": {"name": "g", "annotations": {LAST_APPLIED: written}},
            "spec": {"url": "https://h/r.git"},
        }));
        assert_eq!(
            redact(&kind, &store)["metadata"]["annotations"][LAST_APPLIED],
            written
        );
    }
}
