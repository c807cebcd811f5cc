//! The printer columns a Promise's author declares for its API (`additionalPrinterColumns` of
//! a version of `spec.api`). On Kubernetes they are the columns of the request kind's CRD, so
//! `kubectl get` shows them; `kratix-rs get` and the platform's API show the same, read with the
//! same JSONPath a CRD's column holds (`.spec.size`,
//! `.status.conditions[?(@.type=="Ready")].status`).

use jsonpath_rust::JsonPath;
use serde_json::Value;

/// One declared column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PrinterColumn {
    pub(crate) name: String,
    /// `string`, `integer`, `number`, `boolean` or `date`, as a CRD declares it.
    pub(crate) type_: String,
    pub(crate) json_path: String,
    /// Above 0: shown only with `-o wide`.
    pub(crate) priority: i64,
}

/// The columns `api` (a Promise's `spec.api`, a CRD) declares for `version`; none when that
/// version declares none. An entry without a name or a path is left out: a CRD with it is
/// refused by Kubernetes, and a table cannot show it.
pub(crate) fn declared(api: &Value, version: &str) -> Vec<PrinterColumn> {
    let versions = api.pointer("/spec/versions").and_then(Value::as_array);
    let Some(served) = versions
        .into_iter()
        .flatten()
        .find(|v| v.get("name").and_then(Value::as_str) == Some(version))
    else {
        return Vec::new();
    };
    let text = |column: &Value, field: &str| {
        column
            .get(field)
            .and_then(Value::as_str)
            .map(str::to_string)
            .filter(|s| !s.is_empty())
    };
    served
        .get("additionalPrinterColumns")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|column| {
            Some(PrinterColumn {
                name: text(column, "name")?,
                type_: text(column, "type").unwrap_or_else(|| "string".into()),
                json_path: text(column, "jsonPath")?,
                priority: column.get("priority").and_then(Value::as_i64).unwrap_or(0),
            })
        })
        .collect()
}

/// Checks the columns of every version of `spec` (a CRD's spec) as Kubernetes does before it
/// serves them: a name, one of its column types, and a JSONPath that parses. `Err` is the field
/// and why.
pub(crate) fn check(spec: &Value) -> Result<(), (String, String)> {
    let versions = spec.get("versions").and_then(Value::as_array);
    for (v, version) in versions.into_iter().flatten().enumerate() {
        let columns = version
            .get("additionalPrinterColumns")
            .and_then(Value::as_array);
        for (c, column) in columns.into_iter().flatten().enumerate() {
            let field = |name: &str| {
                format!("spec.api.spec.versions[{v}].additionalPrinterColumns[{c}].{name}")
            };
            let text = |name: &str| {
                column
                    .get(name)
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
            };
            if text("name").is_none() {
                return Err((field("name"), "a name is required".into()));
            }
            let type_ = text("type").unwrap_or_default();
            if !matches!(type_, "string" | "integer" | "number" | "boolean" | "date") {
                return Err((
                    field("type"),
                    format!("{type_:?} is not one of string, integer, number, boolean, date"),
                ));
            }
            let Some(path) = text("jsonPath") else {
                return Err((field("jsonPath"), "a JSONPath is required".into()));
            };
            if let Err(e) = jsonpath_rust::parser::parse_json_path(&query(path)) {
                return Err((
                    field("jsonPath"),
                    format!("{path:?} is not a JSONPath: {e}"),
                ));
            }
        }
    }
    Ok(())
}

/// A CRD column's path as a JSONPath query: rooted at `$` (a CRD's has no root, `.spec.size`),
/// without the braces kubectl's templates allow.
fn query(path: &str) -> String {
    let path = path.trim();
    let path = path
        .strip_prefix('{')
        .and_then(|p| p.strip_suffix('}'))
        .unwrap_or(path);
    if path.starts_with('$') {
        path.to_string()
    } else {
        format!("${path}")
    }
}

impl PrinterColumn {
    /// What the column's path finds in `object`: the first match, as Kubernetes' table
    /// converter takes it; `None` when it finds nothing or the path does not parse.
    pub(crate) fn value(&self, object: &Value) -> Option<Value> {
        object
            .query(&query(&self.json_path))
            .ok()
            .and_then(|found| found.first().map(|v| (*v).clone()))
    }

    /// The cell as `get` prints it: a string as it is, other values as JSON, a date as how long
    /// ago it was (`now`, RFC 3339), as kubectl prints a `date` column; empty when nothing is
    /// found.
    pub(crate) fn text(&self, object: &Value, now: &str) -> String {
        match self.value(object) {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) if self.type_ == "date" => {
                let ago = super::durations::duration(&s, now);
                if ago.is_empty() {
                    s
                } else {
                    ago
                }
            }
            Some(Value::String(s)) => s,
            Some(other) => other.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn api(columns: Value) -> Value {
        json!({"spec": {"versions": [
            {"name": "v1alpha1", "additionalPrinterColumns": [{"name": "old", "type": "string", "jsonPath": ".spec.old"}]},
            {"name": "v1", "additionalPrinterColumns": columns},
        ]}})
    }

    #[test]
    fn the_columns_of_the_served_version_are_read() {
        let cases = [
            (
                api(json!([
                    {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                    {"name": "Ready", "type": "string", "priority": 1,
                     "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"},
                    {"name": "no path", "type": "string"},
                    {"jsonPath": ".no.name"},
                ])),
                "v1",
                vec![("Size", "integer", 0), ("Ready", "string", 1)],
            ),
            (api(json!([])), "v1", vec![]),
            (api(json!([])), "v2", vec![]),
            (json!({}), "v1", vec![]),
            (
                api(json!([{"name": "Age", "jsonPath": ".metadata.creationTimestamp"}])),
                "v1",
                vec![("Age", "string", 0)],
            ),
        ];
        for (api, version, expected) in cases {
            let got: Vec<(String, String, i64)> = declared(&api, version)
                .into_iter()
                .map(|c| (c.name, c.type_, c.priority))
                .collect();
            let expected: Vec<(String, String, i64)> = expected
                .into_iter()
                .map(|(n, t, p)| (n.to_string(), t.to_string(), p))
                .collect();
            assert_eq!(got, expected, "{api} {version}");
        }
    }

    #[test]
    fn columns_kubernetes_would_refuse_are_named() {
        let spec = |column: Value| {
            json!({"versions": [{"name": "v1"}, {"name": "v2", "additionalPrinterColumns": [
            {"name": "Size", "type": "integer", "jsonPath": ".spec.size"}, column]}]})
        };
        let at = "spec.api.spec.versions[1].additionalPrinterColumns[1]";
        let cases = [
            (
                json!({"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"}),
                None,
            ),
            (
                json!({"type": "string", "jsonPath": ".a"}),
                Some(format!("{at}.name")),
            ),
            (
                json!({"name": "A", "type": "text", "jsonPath": ".a"}),
                Some(format!("{at}.type")),
            ),
            (
                json!({"name": "A", "jsonPath": ".a"}),
                Some(format!("{at}.type")),
            ),
            (
                json!({"name": "A", "type": "string"}),
                Some(format!("{at}.jsonPath")),
            ),
            (
                json!({"name": "A", "type": "string", "jsonPath": "not a [ path"}),
                Some(format!("{at}.jsonPath")),
            ),
        ];
        for (column, field) in cases {
            assert_eq!(
                check(&spec(column.clone())).err().map(|(f, _)| f),
                field,
                "{column}"
            );
        }
    }

    #[test]
    fn cells_read_like_kubectls() {
        let object = json!({
            "metadata": {"name": "a", "creationTimestamp": "2026-12-06T10:00:00Z"},
            "spec": {"size": 3, "tier": "gold", "flags": {"x": true}, "enabled": false},
            "status": {"conditions": [
                {"type": "Reconciled", "status": "True"},
                {"type": "Ready", "status": "False", "message": "waiting"},
            ]},
        });
        let now = "2026-12-06T10:05:30Z";
        let column = |type_: &str, path: &str| PrinterColumn {
            name: "c".into(),
            type_: type_.into(),
            json_path: path.into(),
            priority: 0,
        };
        let cases = [
            (column("integer", ".spec.size"), "3"),
            (column("string", ".spec.tier"), "gold"),
            (column("string", "{.spec.tier}"), "gold"),
            (column("boolean", ".spec.enabled"), "false"),
            (column("string", ".spec.flags"), "{\"x\":true}"),
            (
                column("string", ".status.conditions[?(@.type==\"Ready\")].message"),
                "waiting",
            ),
            (
                column(
                    "string",
                    ".status.conditions[?(@.type=='Reconciled')].status",
                ),
                "True",
            ),
            (column("date", ".metadata.creationTimestamp"), "5m30s"),
            (column("date", ".spec.tier"), "gold"),
            (column("string", ".spec.missing"), ""),
            (
                column("string", ".status.conditions[?(@.type==\"Nope\")].status"),
                "",
            ),
            (column("string", "not a [ path"), ""),
        ];
        for (column, expected) in cases {
            assert_eq!(column.text(&object, now), expected, "{}", column.json_path);
        }
        assert_eq!(
            column("integer", ".spec.size").value(&object),
            Some(json!(3))
        );
    }
}
