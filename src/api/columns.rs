//! The columns of each kind in a table: Kratix's printer columns (as its CRDs declare them),
//! plus the ones `-o wide` adds. `kratix-rs get` prints them and the platform's API serves them
//! to `kubectl get` as a `Table`. Each cell is a pure function of the stored object.

use std::borrow::Cow;

use serde_json::Value;

use crate::api::durations::duration;
use crate::api::printer_columns::PrinterColumn;
use crate::api::words::types;
use crate::api::{condition, Condition, KindInfo, Object};

/// One column of a `get` table.
pub(crate) struct Column {
    pub(crate) header: Cow<'static, str>,
    /// Shown only with `-o wide` (kubectl's printer column priority 1).
    pub(crate) wide: bool,
    cell: Cell,
}

/// Where a column's cells come from.
enum Cell {
    /// Kratix's own columns, computed from the object.
    Computed(fn(&Object) -> String),
    /// A column a Promise's author declares for its API.
    Declared(PrinterColumn),
}

impl Column {
    /// The cell as `get` prints it; `now` (RFC 3339) tells how long ago a date was.
    pub(crate) fn text(&self, obj: &Object, now: &str) -> String {
        match &self.cell {
            Cell::Computed(cell) => cell(obj),
            Cell::Declared(column) => column.text(&obj.data, now),
        }
    }

    /// The cell as a `Table` carries it (kubectl prints a `date` as how long ago).
    pub(crate) fn value(&self, obj: &Object) -> Value {
        match &self.cell {
            Cell::Computed(cell) => Value::String(cell(obj)),
            Cell::Declared(column) => column.value(&obj.data).unwrap_or(Value::Null),
        }
    }

    /// The type a `Table` declares for it.
    pub(crate) fn type_(&self) -> &str {
        match &self.cell {
            Cell::Computed(_) => "string",
            Cell::Declared(column) => &column.type_,
        }
    }
}

const fn col(header: &'static str, cell: fn(&Object) -> String) -> Column {
    Column {
        header: Cow::Borrowed(header),
        wide: false,
        cell: Cell::Computed(cell),
    }
}

const fn wide(header: &'static str, cell: fn(&Object) -> String) -> Column {
    Column {
        header: Cow::Borrowed(header),
        wide: true,
        cell: Cell::Computed(cell),
    }
}

/// The columns a Promise's author declared, as kubectl shows them: the header upper-cased.
fn declared_columns(declared: &[PrinterColumn]) -> Vec<Column> {
    declared
        .iter()
        .map(|column| Column {
            header: Cow::Owned(column.name.to_uppercase()),
            wide: column.priority > 0,
            cell: Cell::Declared(column.clone()),
        })
        .collect()
}

pub(crate) fn text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

fn at(obj: &Object, pointer: &str) -> String {
    text(obj.data.pointer(pointer))
}

fn ready(obj: &Object) -> String {
    condition::get(obj, types::READY).map_or_else(String::new, |c| c.status.as_str().into())
}

fn ready_message(obj: &Object) -> String {
    condition_message(obj, types::READY)
}

fn condition_message(obj: &Object, type_: &str) -> String {
    condition::get(obj, type_).map_or_else(String::new, |c: Condition| c.message)
}

/// The columns of `kind`, in order; the caller drops the wide ones unless `-o wide`.
pub(crate) fn columns(kind: &KindInfo) -> Vec<Column> {
    match kind.kind.as_str() {
        "Promise" => vec![
            col("STATUS", |o| at(o, "/status/status")),
            col("KIND", |o| at(o, "/status/kind")),
            col("API VERSION", |o| at(o, "/status/apiVersion")),
            col("VERSION", |o| at(o, "/status/version")),
            col("MESSAGE", |o| at(o, "/status/message")),
        ],
        "Destination" => vec![
            col("STATESTOREKIND", |o| at(o, "/spec/stateStoreRef/kind")),
            col("STATESTORENAME", |o| at(o, "/spec/stateStoreRef/name")),
            col("READY", ready),
            wide("PATH", |o| at(o, "/spec/path")),
            wide("MESSAGE", ready_message),
        ],
        "GitStateStore" => vec![
            col("URL", |o| statestores::redact_url(&at(o, "/spec/url"))),
            col("BRANCH", |o| {
                let b = at(o, "/spec/branch");
                if b.is_empty() {
                    "main".into()
                } else {
                    b
                }
            }),
            col("READY", ready),
            wide("PATH", |o| at(o, "/spec/path")),
            wide("MESSAGE", ready_message),
        ],
        "BucketStateStore" => vec![
            col("BUCKET", |o| at(o, "/spec/bucketName")),
            col("ENDPOINT", |o| {
                statestores::redact_url(&at(o, "/spec/endpoint"))
            }),
            col("READY", ready),
            wide("PATH", |o| at(o, "/spec/path")),
            wide("MESSAGE", ready_message),
        ],
        "Work" => vec![
            col("STATUS", ready_message),
            wide("PROMISE", |o| at(o, "/spec/promiseName")),
            wide("REQUEST", |o| at(o, "/spec/resourceName")),
        ],
        "WorkPlacement" => vec![
            col("DESTINATION", |o| at(o, "/spec/targetDestinationName")),
            col("STATUS", ready_message),
            col("VERSION", |o| {
                at(o, "/status/versionID").chars().take(12).collect()
            }),
            wide("PROMISE", |o| at(o, "/spec/promiseName")),
            wide("REQUEST", |o| at(o, "/spec/resourceName")),
        ],
        "HealthRecord" => vec![col("STATUS", |o| at(o, "/data/state"))],
        "PipelineRun" => vec![
            col("PIPELINE", |o| at(o, "/spec/pipelineName")),
            col("ACTION", |o| at(o, "/spec/workflowAction")),
            col("PHASE", |o| at(o, "/status/phase")),
            col("START", |o| at(o, "/status/startTime")),
            col("COMPLETION", |o| at(o, "/status/completionTime")),
            col("DURATION", |o| {
                duration(
                    &at(o, "/status/startTime"),
                    &at(o, "/status/completionTime"),
                )
            }),
        ],
        "Secret" => vec![
            col("TYPE", |o| text(o.data.get("type"))),
            col("DATA", |o| {
                o.data
                    .get("data")
                    .and_then(Value::as_object)
                    .map_or(0, serde_json::Map::len)
                    .to_string()
            }),
        ],
        "PromiseRevision" => vec![
            col("PROMISE", |o| at(o, "/spec/promiseRef/name")),
            col("VERSION", |o| at(o, "/spec/version")),
            col("LATEST", |o| {
                let latest = o.data.pointer("/status/latest").and_then(Value::as_bool);
                latest.unwrap_or(false).to_string()
            }),
        ],
        "ResourceBinding" => vec![
            col("RESOURCE", |o| at(o, "/spec/resourceRef/name")),
            col("PROMISE", |o| at(o, "/spec/promiseRef/name")),
            col("DESIRED", |o| at(o, "/spec/version")),
            col("APPLIED", |o| at(o, "/status/lastAppliedVersion")),
        ],
        "PromiseRelease" => vec![
            col("STATUS", |o| at(o, "/status/status")),
            col("VERSION", |o| at(o, "/spec/version")),
        ],
        // Resource requests of a Promise's API.
        _ => vec![
            col("STATUS", |o| condition_message(o, types::RECONCILED)),
            col("MESSAGE", |o| at(o, "/status/message")),
        ],
    }
}

/// The columns of a table of `kind`: those its Promise's author `declared` for it if any (as
/// its CRD on Kubernetes shows them), else [`columns`]; then the generation and the observed
/// generation, wide.
pub(crate) fn table_columns(kind: &KindInfo, declared: &[PrinterColumn]) -> Vec<Column> {
    let mut all = if declared.is_empty() {
        columns(kind)
    } else {
        declared_columns(declared)
    };
    all.push(wide("GENERATION", |o| {
        o.metadata
            .generation
            .map(|g| g.to_string())
            .unwrap_or_default()
    }));
    all.push(wide("OBSERVED", |o| {
        text(o.data.pointer("/status/observedGeneration"))
    }));
    all
}

/// `-o name`: `kind.group/name` like kubectl (`kind/name` for the core group).
pub(crate) fn resource_name(kind: &KindInfo, obj: &Object) -> String {
    let name = obj.metadata.name.as_deref().unwrap_or_default();
    let kind_name = kind.kind.to_lowercase();
    if kind.group.is_empty() {
        format!("{kind_name}/{name}")
    } else {
        format!("{kind_name}.{}/{name}", kind.group)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::api::Builtin;

    fn object(value: Value) -> Object {
        serde_json::from_value(value).expect("an object")
    }

    /// The cells of every column, wide ones marked with a leading `+`.
    fn cells(kind: &KindInfo, obj: &Object) -> Vec<String> {
        columns(kind)
            .iter()
            .map(|c| {
                let mark = if c.wide { "+" } else { "" };
                format!("{mark}{}={}", c.header, c.text(obj, "2026-01-01T00:00:00Z"))
            })
            .collect()
    }

    /// A kind a Promise's API defines.
    fn promise_kind(kind: &str) -> KindInfo {
        KindInfo {
            group: "example.kratix.io".into(),
            version: "v1".into(),
            kind: kind.into(),
            plural: format!("{}s", kind.to_lowercase()),
            singular: kind.to_lowercase(),
            short_names: Vec::new(),
            namespaced: true,
        }
    }

    fn ready(status: &str, message: &str) -> Value {
        json!({"conditions": [{"type": "Ready", "status": status, "message": message}]})
    }

    #[test]
    fn each_kind_shows_kratix_printer_columns() {
        let request_kind = promise_kind("App");
        let cases: Vec<(KindInfo, Value, Vec<&str>)> = vec![
            (
                Builtin::Promise.info(),
                json!({"metadata": {"name": "p"}, "status": {"status": "Available",
                    "kind": "App", "apiVersion": "example.kratix.io/v1", "version": "v1.2",
                    "message": "ok"}}),
                vec![
                    "STATUS=Available",
                    "KIND=App",
                    "API VERSION=example.kratix.io/v1",
                    "VERSION=v1.2",
                    "MESSAGE=ok",
                ],
            ),
            (
                request_kind,
                json!({"metadata": {"name": "a"}, "status": {"message": "Resource requested",
                    "conditions": [{"type": "Reconciled", "status": "False",
                        "message": "Pipelines are still in progress"}]}}),
                vec![
                    "STATUS=Pipelines are still in progress",
                    "MESSAGE=Resource requested",
                ],
            ),
            (
                Builtin::Destination.info(),
                json!({"metadata": {"name": "d"}, "spec": {"path": "dev",
                    "stateStoreRef": {"kind": "GitStateStore", "name": "g"}},
                    "status": ready("False", "store unreachable")}),
                vec![
                    "STATESTOREKIND=GitStateStore",
                    "STATESTORENAME=g",
                    "READY=False",
                    "+PATH=dev",
                    "+MESSAGE=store unreachable",
                ],
            ),
            (
                Builtin::GitStateStore.info(),
                json!({"metadata": {"name": "g"}, "spec": {"url": "https://u:pw@h/r.git"},
                    "status": ready("True", "")}),
                vec![
                    "URL=https://u:<redacted>@h/r.git",
                    "BRANCH=main",
                    "READY=True",
                    "+PATH=",
                    "+MESSAGE=",
                ],
            ),
            (
                Builtin::BucketStateStore.info(),
                json!({"metadata": {"name": "b"}, "spec": {"bucketName": "kratix",
                    "endpoint": "http://127.0.0.1:3900", "path": "p"}}),
                vec![
                    "BUCKET=kratix",
                    "ENDPOINT=http://127.0.0.1:3900",
                    "READY=",
                    "+PATH=p",
                    "+MESSAGE=",
                ],
            ),
            (
                Builtin::Work.info(),
                json!({"metadata": {"name": "w"}, "spec": {"promiseName": "p",
                    "resourceName": "a"}, "status": ready("True", "Ready")}),
                vec!["STATUS=Ready", "+PROMISE=p", "+REQUEST=a"],
            ),
            (
                Builtin::WorkPlacement.info(),
                json!({"metadata": {"name": "wp"}, "spec": {"targetDestinationName": "dev",
                    "promiseName": "p"}, "status": {"versionID": "0123456789abcdef",
                    "conditions": [{"type": "Ready", "status": "True", "message": "Ready"}]}}),
                vec![
                    "DESTINATION=dev",
                    "STATUS=Ready",
                    "VERSION=0123456789ab",
                    "+PROMISE=p",
                    "+REQUEST=",
                ],
            ),
            (
                Builtin::PipelineRun.info(),
                json!({"metadata": {"name": "r"}, "spec": {"pipelineName": "build",
                    "workflowAction": "configure"}, "status": {"phase": "Succeeded",
                    "startTime": "2026-01-01T10:00:00Z",
                    "completionTime": "2026-01-01T10:03:04Z"}}),
                vec![
                    "PIPELINE=build",
                    "ACTION=configure",
                    "PHASE=Succeeded",
                    "START=2026-01-01T10:00:00Z",
                    "COMPLETION=2026-01-01T10:03:04Z",
                    "DURATION=3m4s",
                ],
            ),
            (
                Builtin::Secret.info(),
                json!({"metadata": {"name": "s"}, "type": "Opaque",
                    "data": {"a": "YQ==", "b": "Yg=="}}),
                vec!["TYPE=Opaque", "DATA=2"],
            ),
            (
                Builtin::PromiseRevision.info(),
                json!({"metadata": {"name": "db-1a2b3"}, "spec": {"promiseRef": {"name": "db"},
                    "version": "v2", "promiseSpec": {}}, "status": {"latest": true}}),
                vec!["PROMISE=db", "VERSION=v2", "LATEST=true"],
            ),
            (
                Builtin::PromiseRevision.info(),
                json!({"metadata": {"name": "db-4c5d6"}, "spec": {"promiseRef": {"name": "db"},
                    "version": "v1", "promiseSpec": {}}}),
                vec!["PROMISE=db", "VERSION=v1", "LATEST=false"],
            ),
            (
                Builtin::ResourceBinding.info(),
                json!({"metadata": {"name": "a-db-1a2b3"}, "spec": {"version": "latest",
                    "promiseRef": {"name": "db"}, "resourceRef": {"name": "a",
                    "namespace": "default"}}, "status": {"lastAppliedVersion": "v1"}}),
                vec!["RESOURCE=a", "PROMISE=db", "DESIRED=latest", "APPLIED=v1"],
            ),
            (
                Builtin::PromiseRelease.info(),
                json!({"metadata": {"name": "r"}, "spec": {"version": "v1.0",
                    "sourceRef": {"type": "http", "url": "http://x/p.yaml"}},
                    "status": {"status": "Installed"}}),
                vec!["STATUS=Installed", "VERSION=v1.0"],
            ),
        ];
        for (kind, value, want) in cases {
            let got = cells(&kind, &object(value));
            assert_eq!(got, want, "{}", kind.kind);
        }
    }

    /// `kubectl get` on a cluster shows what `get` shows: the CRDs declare the same columns, wide
    /// ones at priority 1, except those no JSONPath can compute.
    #[test]
    fn the_crds_declare_the_same_columns() {
        for crd in crate::api::crds::crds() {
            let kind = Builtin::ALL
                .into_iter()
                .map(Builtin::info)
                .find(|k| k.kind == crd.spec.names.kind)
                .expect("a builtin kind");
            let ours: Vec<(String, bool)> = columns(&kind)
                .iter()
                .filter(|c| c.header != "DURATION")
                .map(|c| (c.header.to_string(), c.wide))
                .collect();
            let declared: Vec<(String, bool)> = crd.spec.versions[0]
                .additional_printer_columns
                .iter()
                .flatten()
                .map(|c| {
                    // Kratix names the bucket column `Name`; a second NAME column would confuse.
                    let header = match (kind.kind.as_str(), c.name.as_str()) {
                        ("BucketStateStore", "Name") => "BUCKET".to_string(),
                        (_, name) => name.to_uppercase(),
                    };
                    (header, c.priority.unwrap_or(0) > 0)
                })
                .collect();
            assert_eq!(declared, ours, "{}", kind.kind);
        }
    }

    #[test]
    fn names_follow_kubectls_kind_group_slash_name() {
        let obj = object(json!({"metadata": {"name": "x"}}));
        let cases = [
            (Builtin::Promise.info(), "promise.platform.kratix.io/x"),
            (
                Builtin::WorkPlacement.info(),
                "workplacement.platform.kratix.io/x",
            ),
            (Builtin::Secret.info(), "secret/x"),
            (promise_kind("WebApp"), "webapp.example.kratix.io/x"),
        ];
        for (kind, want) in cases {
            assert_eq!(resource_name(&kind, &obj), want);
        }
    }
}
