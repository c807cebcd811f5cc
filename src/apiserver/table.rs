//! Objects as a `meta.k8s.io/v1` `Table`, the form `kubectl get` asks for (`Accept:
//! application/json;as=Table;v=v1;g=meta.k8s.io`): the columns are the ones `kratix-rs get`
//! prints (Kratix's printer columns, `crate::api::columns`), so that `kubectl get promises`
//! reads as `kratix-rs get promises` does. Each row carries the object's metadata (or the whole
//! object, or nothing, as `includeObject` asks), for kubectl's NAMESPACE and LABELS columns.

use serde::Serialize;
use serde_json::{json, Value};

use crate::api::columns::{table_columns, Column};
use crate::api::printer_columns::PrinterColumn;
use crate::api::{KindInfo, Object};

/// How objects are answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// As they are (`application/json`).
    Objects,
    /// As a `Table`, its rows carrying what `includeObject` asks for.
    Table(Include),
}

/// What a row of a `Table` carries of its object (`includeObject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Include {
    None,
    Metadata,
    Object,
}

/// The shape a client asks for: the first media range of `accept` this API can answer, a
/// `meta.k8s.io/v1` (or `v1beta1`) `Table` or JSON; JSON when none is given. `include_object`
/// is the query's `includeObject` (`Metadata` unless said otherwise, as the API server does).
pub(crate) fn shape(accept: Option<&str>, include_object: &str) -> Shape {
    let include = match include_object {
        "None" => Include::None,
        "Object" => Include::Object,
        _ => Include::Metadata,
    };
    for range in accept.unwrap_or_default().split(',') {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or_default();
        let (mut as_, mut group, mut version) = ("", "", "");
        for param in parts {
            match param.split_once('=') {
                Some(("as", v)) => as_ = v,
                Some(("g", v)) => group = v,
                Some(("v", v)) => version = v,
                _ => {}
            }
        }
        if !matches!(media, "application/json" | "application/*" | "*/*") {
            continue;
        }
        match as_ {
            "" => return Shape::Objects,
            "Table" if group == "meta.k8s.io" && matches!(version, "v1" | "v1beta1") => {
                return Shape::Table(include)
            }
            _ => {}
        }
    }
    Shape::Objects
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ColumnDefinition<'a> {
    name: &'a str,
    #[serde(rename = "type")]
    type_: &'a str,
    format: &'static str,
    description: &'static str,
    priority: i32,
}

fn definition(column: &Column) -> ColumnDefinition<'_> {
    ColumnDefinition {
        name: &column.header,
        type_: column.type_(),
        format: "",
        description: "",
        priority: i32::from(column.wide),
    }
}

/// A `Table` of `objects` of `kind` (with the columns its Promise `declared`, if any);
/// `resource_version` is the list's (empty for one object). `shown` is how the reader sees an
/// object, for rows that carry it.
pub(crate) fn table(
    kind: &KindInfo,
    declared: &[PrinterColumn],
    objects: &[&Object],
    include: Include,
    resource_version: &str,
    shown: impl Fn(&Object) -> Value,
) -> Value {
    let columns = table_columns(kind, declared);
    let mut definitions = vec![ColumnDefinition {
        name: "Name",
        type_: "string",
        format: "name",
        description: "Name must be unique within a namespace.",
        priority: 0,
    }];
    definitions.extend(columns.iter().map(definition));
    let rows: Vec<Value> = objects
        .iter()
        .map(|obj| {
            let mut cells = vec![json!(obj.metadata.name.as_deref().unwrap_or_default())];
            cells.extend(columns.iter().map(|c| c.value(obj)));
            let mut row = json!({ "cells": cells });
            match include {
                Include::None => {}
                Include::Metadata => {
                    let mut value = shown(obj);
                    row["object"] = json!({
                        "kind": "PartialObjectMetadata",
                        "apiVersion": "meta.k8s.io/v1",
                        "metadata": value["metadata"].take(),
                    });
                }
                Include::Object => row["object"] = shown(obj),
            }
            row
        })
        .collect();
    let mut metadata = json!({});
    if !resource_version.is_empty() {
        metadata["resourceVersion"] = json!(resource_version);
    }
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": definitions,
        "rows": rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Builtin;

    const KUBECTL: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

    #[test]
    fn the_first_media_range_this_api_answers_decides_the_shape() {
        let table = Shape::Table(Include::Metadata);
        let cases = [
            (None, "", Shape::Objects),
            (Some(""), "", Shape::Objects),
            (Some("application/json"), "", Shape::Objects),
            (Some("*/*"), "", Shape::Objects),
            (Some(KUBECTL), "", table),
            (Some(KUBECTL), "None", Shape::Table(Include::None)),
            (Some(KUBECTL), "Object", Shape::Table(Include::Object)),
            (
                Some("application/json;as=Table;v=v1beta1;g=meta.k8s.io"),
                "",
                table,
            ),
            (
                Some("application/json, application/json;as=Table;v=v1;g=meta.k8s.io"),
                "",
                Shape::Objects,
            ),
            // Forms this API does not serve are passed over.
            (
                Some("application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,application/json"),
                "",
                Shape::Objects,
            ),
            (
                Some("application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1;g=meta.k8s.io"),
                "",
                table,
            ),
            (
                Some("application/json;as=Table;v=v2;g=meta.k8s.io"),
                "",
                Shape::Objects,
            ),
        ];
        for (accept, include, want) in cases {
            assert_eq!(shape(accept, include), want, "{accept:?} {include:?}");
        }
    }

    fn object(value: Value) -> Object {
        serde_json::from_value(value).expect("an object")
    }

    #[test]
    fn a_table_holds_the_columns_get_prints() {
        let kind = Builtin::Destination.info();
        let dev = object(json!({
            "apiVersion": "platform.kratix.io/v1alpha1", "kind": "Destination",
            "metadata": {"name": "dev", "generation": 2, "labels": {"env": "dev"}},
            "spec": {"path": "dev", "stateStoreRef": {"kind": "GitStateStore", "name": "g"}},
            "status": {"observedGeneration": 1,
                "conditions": [{"type": "Ready", "status": "True", "message": "Ready"}]},
        }));
        let shown = |o: &Object| serde_json::to_value(o).expect("json");
        let got = table(&kind, &[], &[&dev], Include::Metadata, "7", shown);
        let names: Vec<(&str, i64)> = got["columnDefinitions"]
            .as_array()
            .expect("columns")
            .iter()
            .map(|c| {
                (
                    c["name"].as_str().unwrap_or_default(),
                    c["priority"].as_i64().unwrap_or(-1),
                )
            })
            .collect();
        assert_eq!(
            names,
            [
                ("Name", 0),
                ("STATESTOREKIND", 0),
                ("STATESTORENAME", 0),
                ("READY", 0),
                ("PATH", 1),
                ("MESSAGE", 1),
                ("GENERATION", 1),
                ("OBSERVED", 1),
            ]
        );
        assert_eq!(
            got["rows"][0]["cells"],
            json!([
                "dev",
                "GitStateStore",
                "g",
                "True",
                "dev",
                "Ready",
                "2",
                "1"
            ])
        );
        assert_eq!(got["metadata"]["resourceVersion"], "7");
        assert_eq!(got["kind"], "Table");
        assert_eq!(got["apiVersion"], "meta.k8s.io/v1");
        let row = &got["rows"][0]["object"];
        assert_eq!(row["kind"], "PartialObjectMetadata");
        assert_eq!(row["metadata"]["labels"]["env"], "dev");
        assert!(row.get("spec").is_none());

        let whole = table(&kind, &[], &[&dev], Include::Object, "", shown);
        assert_eq!(whole["rows"][0]["object"]["spec"]["path"], "dev");
        assert!(whole["metadata"].get("resourceVersion").is_none());
        let bare = table(&kind, &[], &[&dev], Include::None, "", shown);
        assert!(bare["rows"][0].get("object").is_none());
        let empty = table(&kind, &[], &[], Include::Metadata, "8", shown);
        assert_eq!(empty["rows"], json!([]));
    }
}
