//! Admission of documents, as the API server admits them: parse (bounded, [`documents`]),
//! check (each kind's rules, a request's Promise schema), default, and store with the three-way
//! merge of `kubectl apply` against a last-applied record. `apply`, `diff` and the platform
//! Destination's sync all admit documents through here; every document of a batch is checked
//! before any is stored, so a bad document stores nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::{json, Value};

use crate::api::destination_paths::PathClaim;
use crate::api::{names, promise_api, Builtin, Destination, KindInfo, Object, ObjectKey};
use checks::{check_name, shown};
use complete::{complete, warnings};
use documents::Document;

mod checks;
mod complete;
pub(crate) mod documents;
mod known;
mod last_applied;
mod merge;
mod store;
use crate::store as control_plane;
pub(crate) use known::Known;
pub(crate) use store::{store_all, store_one};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A document failed validation; nothing was stored.
    #[error("{document}: {reason}")]
    Invalid { document: String, reason: String },
    /// The same object appears twice in one apply.
    #[error("{document}: {key} is also defined by {first}")]
    Duplicate {
        document: String,
        first: String,
        key: ObjectKey,
    },
    /// A document of a kind no Promise defines (neither stored nor in the batch).
    #[error("{document}: kind: unknown kind {kind:?} in apiVersion {api_version:?} (apply the Promise that defines it first)")]
    UnknownKind {
        document: String,
        kind: String,
        api_version: String,
    },
    /// Reading the control plane failed.
    #[error(transparent)]
    Platform(#[from] crate::platform::Error),
    /// Storing an object failed.
    #[error("storing {key}")]
    Store {
        key: ObjectKey,
        #[source]
        source: control_plane::Error,
    },
}

/// A validated object ready to store.
#[derive(Debug, Clone)]
pub(crate) struct Prepared {
    pub document: String,
    pub kind: KindInfo,
    /// The object as created when none is stored: the file's document with its defaults and
    /// the last-applied annotation.
    pub object: Object,
    /// Fields the request's schema does not declare, dropped as the API server would.
    pub pruned: Vec<String>,
    /// What the API server would warn of (the object is stored all the same), each naming
    /// its field.
    pub warnings: Vec<String>,
    /// The document as the file gives it, for the merge with a stored object (see
    /// [`last_applied::comparable`]).
    applied: Value,
    /// The last-applied annotation's value for this document.
    configuration: String,
    batch: Arc<Batch>,
}

impl Prepared {
    pub(crate) fn key(&self) -> ObjectKey {
        ObjectKey::of(&self.object)
    }
}

/// What documents of one batch are checked against: the kinds (built-in and those of every
/// Promise, the batch's included), the Promises, the state stores, and what is stored.
#[derive(Debug)]
struct Batch {
    kinds: Vec<KindInfo>,
    promises: Vec<Object>,
    state_stores: BTreeSet<(String, String)>,
    /// Where the batch's Destinations write, in the batch's order.
    destinations: Vec<PathClaim>,
    known: Known,
}

/// Validates a batch as a whole: Promises in the batch define kinds usable by later documents,
/// and references may point at objects of the same batch.
pub(crate) fn prepare(docs: &[Document], known: &Known) -> Result<Vec<Prepared>, Error> {
    let invalid = |doc: &Document, reason: String| Error::Invalid {
        document: doc.to_string(),
        reason,
    };

    // Promises of this batch replace stored ones of the same name for kind resolution.
    let mut promises: BTreeMap<String, Object> = known
        .promises
        .iter()
        .map(|p| (p.metadata.name.clone().unwrap_or_default(), p.clone()))
        .collect();
    for doc in docs.iter().filter(|d| d.kind() == "Promise") {
        let obj: Object = serde_json::from_value(doc.value.clone())
            .map_err(|e| invalid(doc, format!("not a valid object: {e}")))?;
        promises.insert(doc.name().to_string(), obj);
    }
    let promise_list: Vec<Object> = promises.values().cloned().collect();
    let kinds = promise_api::all_kinds(&promise_list);

    let mut state_stores = known.state_stores.clone();
    for doc in docs {
        if matches!(doc.kind(), "GitStateStore" | "BucketStateStore") {
            state_stores.insert((doc.kind().to_string(), doc.name().to_string()));
        }
    }
    let destinations = docs
        .iter()
        .filter(|d| {
            d.kind() == "Destination"
                && d.api_version() == Builtin::Destination.info().api_version()
        })
        .filter_map(|d| serde_json::from_value::<Destination>(d.value.clone()).ok())
        .map(|d| PathClaim::of(&d))
        .collect();
    let batch = Arc::new(Batch {
        kinds,
        promises: promise_list,
        state_stores,
        destinations,
        known: known.clone(),
    });

    let mut out: Vec<Prepared> = Vec::with_capacity(docs.len());
    let mut seen: BTreeMap<ObjectKey, String> = BTreeMap::new();
    for doc in docs {
        let prepared = prepare_one(doc, &batch)?;
        let key = prepared.key();
        if let Some(first) = seen.get(&key) {
            return Err(Error::Duplicate {
                document: doc.to_string(),
                first: first.clone(),
                key,
            });
        }
        seen.insert(key, doc.to_string());
        out.push(prepared);
    }
    Ok(out)
}

fn prepare_one(doc: &Document, batch: &Arc<Batch>) -> Result<Prepared, Error> {
    let invalid = |reason: String| Error::Invalid {
        document: doc.to_string(),
        reason,
    };
    let api_version = doc.api_version();
    let kind_name = doc.kind();
    if kind_name.is_empty() {
        return Err(invalid("kind: required".into()));
    }
    if api_version.is_empty() {
        return Err(invalid("apiVersion: required".into()));
    }
    let kinds = &batch.kinds;
    let Some(kind) = kinds
        .iter()
        .find(|k| k.kind == kind_name && k.api_version() == api_version)
        .cloned()
    else {
        return Err(match kinds.iter().find(|k| k.kind == kind_name) {
            Some(k) => invalid(format!(
                "apiVersion: {api_version:?} is not served for kind {kind_name} (use {:?})",
                k.api_version()
            )),
            None => Error::UnknownKind {
                document: doc.to_string(),
                kind: kind_name.to_string(),
                api_version: api_version.to_string(),
            },
        });
    };
    prepare_known(doc, kind, batch).map_err(invalid)
}

/// [`prepare_one`] once the document's kind is known.
fn prepare_known(doc: &Document, kind: KindInfo, batch: &Arc<Batch>) -> Result<Prepared, String> {
    let name = doc.name();
    if name.is_empty() {
        return Err("metadata.name: required".into());
    }
    check_name(name, &kind).map_err(|reason| format!("metadata.name: {} {reason}", shown(name)))?;

    let mut value = doc.value.clone();
    without_server_fields(&mut value);
    let metadata = value
        .get_mut("metadata")
        .and_then(Value::as_object_mut)
        .ok_or("metadata: must be a mapping")?;
    let namespace = if kind.namespaced {
        let ns = metadata
            .get("namespace")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .unwrap_or("default")
            .to_string();
        names::dns1123_label(&ns)
            .map_err(|reason| format!("metadata.namespace: {} {reason}", shown(&ns)))?;
        metadata.insert("namespace".into(), json!(ns));
        Some(ns)
    } else {
        metadata.remove("namespace");
        None
    };
    let configuration = last_applied::configuration(&doc.value, namespace.as_deref());
    let applied = last_applied::comparable(value.clone());
    let (mut object, pruned) = complete(&kind, value, batch)?;
    set_configuration(&mut object, &configuration);
    Ok(Prepared {
        document: doc.to_string(),
        warnings: warnings(&kind, &object, batch),
        kind,
        object,
        pruned,
        applied,
        configuration,
        batch: batch.clone(),
    })
}

/// Status is written by controllers only, and the API server owns identity and timestamps: a
/// document's values for them are dropped.
fn without_server_fields(value: &mut Value) {
    if let Some(map) = value.as_object_mut() {
        map.remove("status");
    }
    if let Some(metadata) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        for field in last_applied::SYSTEM_FIELDS {
            metadata.remove(field);
        }
    }
}

fn set_configuration(object: &mut Object, configuration: &str) {
    object
        .metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(
            crate::api::labels::LAST_APPLIED.into(),
            configuration.to_string(),
        );
}
