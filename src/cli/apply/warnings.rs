//! Warnings `apply` prints without refusing anything: a Promise whose required Promises are
//! not there yet (neither stored nor in the same apply), as Kratix's admission webhook warns.

use crate::api::object::label;
use crate::api::{labels, Object, Promise, GROUP};
use crate::controllers::promise::requirements;

use super::Prepared;

/// `(document, warning)` for every Promise of the batch that requires a missing Promise.
pub(crate) fn requirement_warnings(
    prepared: &[Prepared],
    stored: &[Object],
) -> Vec<(String, String)> {
    let is_promise = |p: &&Prepared| p.kind.group == GROUP && p.kind.kind == "Promise";
    let promises: Vec<&Object> = prepared
        .iter()
        .filter(is_promise)
        .map(|p| &p.object)
        .chain(stored)
        .collect();
    let version_of = |name: &str| {
        promises
            .iter()
            .find(|p| p.metadata.name.as_deref() == Some(name))
            .map(|p| label(p, labels::PROMISE_VERSION))
    };
    let mut out = Vec::new();
    for p in prepared.iter().filter(is_promise) {
        let Ok(promise) = crate::api::object::to_typed::<Promise>(&p.object) else {
            continue;
        };
        for w in requirements::apply_warnings(&promise.spec.required_promises, version_of) {
            out.push((p.document.clone(), w));
        }
    }
    out
}
