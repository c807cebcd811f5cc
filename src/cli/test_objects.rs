//! Objects the commands' unit tests share: a request kind and a request of it.

use serde_json::{json, Value};

use crate::api::{KindInfo, Object};

/// `Redis` of `example.com/v1`, namespaced.
pub(super) fn redis_kind() -> KindInfo {
    KindInfo {
        group: "example.com".into(),
        version: "v1".into(),
        kind: "Redis".into(),
        plural: "redises".into(),
        singular: "redis".into(),
        short_names: vec![],
        namespaced: true,
    }
}

/// The Redis `default/r` at `generation` with `status`.
pub(super) fn redis(generation: i64, status: Value) -> Object {
    serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Redis",
        "metadata": {"name": "r", "namespace": "default", "generation": generation},
        "status": status,
    }))
    .expect("a Redis object")
}
