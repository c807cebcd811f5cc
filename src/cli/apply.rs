//! `apply`: every document is validated before any is stored, so a bad document stores nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use base64::Engine;
use serde_json::{json, Value};

use super::documents::Document;
use crate::api::destination::{CLEANUP_ALL, CLEANUP_NONE};
use crate::api::kinds::builtin_kinds;
use crate::api::object::{from_typed, to_typed};
use crate::api::pipeline::Pipeline;
use crate::api::state_store::{BUCKET_AUTH_METHODS, GIT_AUTH_METHODS};
use crate::api::{
    crds, defaults, names, promise_api, validation, KindInfo, Object, ObjectKey, Promise, GROUP,
};
use checks::{
    check_api_names, check_enum, check_health_record, check_labels, check_name, check_pipeline,
    check_reconciliation_interval, check_release, check_store_path, shown, typed,
};

mod checks;
mod last_applied;
mod merge;
mod warnings;
use crate::platform::Platform;
use crate::store::{self, ControlPlane, Selector};
pub use warnings::requirement_warnings;

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
    /// Reading the control plane failed.
    #[error(transparent)]
    Platform(#[from] crate::platform::Error),
    /// Storing an object failed.
    #[error("storing {key}")]
    Store {
        key: ObjectKey,
        #[source]
        source: store::Error,
    },
}

/// A validated object ready to store.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub document: String,
    pub kind: KindInfo,
    /// The object as created when none is stored: the file's document with its defaults and
    /// the last-applied annotation.
    pub object: Object,
    /// Fields the request's schema does not declare, dropped as the API server would.
    pub pruned: Vec<String>,
    /// The document as the file gives it, for the merge with a stored object (see
    /// [`last_applied::comparable`]).
    applied: Value,
    /// The last-applied annotation's value for this document.
    configuration: String,
    batch: Arc<Batch>,
}

impl Prepared {
    pub fn key(&self) -> ObjectKey {
        ObjectKey::of(&self.object)
    }

    /// The stored object `live` with this document merged in as `kubectl apply` merges it: what
    /// the file sets wins, what it set last time and no longer sets goes, the rest is kept.
    /// Defaults are filled in and the result is checked again, as the API server does after a
    /// patch; identity and status stay `live`'s. `Err` names the document.
    fn merged_with(&self, live: &Object) -> Result<Merged, Error> {
        let invalid = |reason: String| Error::Invalid {
            document: self.document.clone(),
            reason: format!("merged with the stored object: {reason}"),
        };
        let previous = last_applied::previous(live);
        let history = previous.is_some();
        let last = previous.map_or_else(|| json!({}), last_applied::comparable);
        let live_value = serde_json::to_value(live).map_err(|e| invalid(e.to_string()))?;
        let mut merged = merge::merge(&last, &self.applied, &live_value);
        without_server_fields(&mut merged);
        let (mut object, _pruned) = complete(&self.kind, merged, &self.batch).map_err(invalid)?;
        object.metadata.uid = live.metadata.uid.clone();
        object.metadata.resource_version = live.metadata.resource_version.clone();
        object.metadata.creation_timestamp = live.metadata.creation_timestamp.clone();
        object.metadata.generation = live.metadata.generation;
        object.metadata.deletion_timestamp = live.metadata.deletion_timestamp.clone();
        object.metadata.managed_fields = live.metadata.managed_fields.clone();
        if let (Some(status), Some(map)) = (live.data.get("status"), object.data.as_object_mut()) {
            map.insert("status".into(), status.clone());
        }
        set_configuration(&mut object, &self.configuration);
        Ok(Merged { object, history })
    }
}

struct Merged {
    object: Object,
    /// The stored object had a last-applied configuration (else nothing was removed).
    history: bool,
}

/// What documents of one batch are checked against: the kinds (built-in and those of every
/// Promise, the batch's included), the Promises, the state stores, and what is stored.
#[derive(Debug)]
struct Batch {
    kinds: Vec<KindInfo>,
    promises: Vec<Object>,
    state_stores: BTreeSet<(String, String)>,
    known: Known,
}

/// One object `apply` stored.
#[derive(Debug, Clone)]
pub struct Stored {
    pub object: Object,
    /// It was stored before without a last-applied configuration (it was not made by `apply`),
    /// so the merge removed nothing; it has one now.
    pub without_history: bool,
}

/// What apply needs to know about the stored platform to validate a batch.
#[derive(Debug, Default, Clone)]
pub struct Known {
    pub promises: Vec<Object>,
    /// `(kind, name)` of stored GitStateStores and BucketStateStores.
    pub state_stores: BTreeSet<(String, String)>,
    /// Filepath mode of stored Destinations, by name (the mode is immutable).
    pub destination_modes: BTreeMap<String, String>,
}

impl Known {
    pub async fn load(platform: &Platform) -> Result<Self, Error> {
        let cp = platform.store.as_ref();
        let everything = Selector::everything();
        let mut known = Known {
            promises: platform.promises().await?,
            ..Known::default()
        };
        for store_kind in crate::api::kinds::STATE_STORES {
            let info = store_kind.info();
            let kind = info.kind.as_str();
            for obj in cp
                .list(&info, None, &everything)
                .await
                .map_err(crate::platform::Error::from)?
            {
                known.state_stores.insert((
                    kind.to_string(),
                    obj.metadata.name.clone().unwrap_or_default(),
                ));
            }
        }
        for obj in cp
            .list(
                &crate::platform::builtin(crate::api::Builtin::Destination),
                None,
                &everything,
            )
            .await
            .map_err(crate::platform::Error::from)?
        {
            let mode = obj
                .data
                .pointer("/spec/filepath/mode")
                .and_then(Value::as_str)
                .unwrap_or("nestedByMetadata")
                .to_string();
            known
                .destination_modes
                .insert(obj.metadata.name.clone().unwrap_or_default(), mode);
        }
        Ok(known)
    }
}

/// Validates a batch as a whole: Promises in the batch define kinds usable by later documents,
/// and references may point at objects of the same batch.
pub fn prepare(docs: &[Document], known: &Known) -> Result<Vec<Prepared>, Error> {
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
    let mut kinds = builtin_kinds();
    kinds.extend(promise_api::kinds_from_promises(&promise_list));

    let mut state_stores = known.state_stores.clone();
    for doc in docs {
        if matches!(doc.kind(), "GitStateStore" | "BucketStateStore") {
            state_stores.insert((doc.kind().to_string(), doc.name().to_string()));
        }
    }
    let batch = Arc::new(Batch {
        kinds,
        promises: promise_list,
        state_stores,
        known: known.clone(),
    });

    let mut out: Vec<Prepared> = Vec::with_capacity(docs.len());
    let mut seen: BTreeMap<ObjectKey, String> = BTreeMap::new();
    for doc in docs {
        let prepared = prepare_one(doc, &batch).map_err(|reason| invalid(doc, reason))?;
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

fn prepare_one(doc: &Document, batch: &Arc<Batch>) -> Result<Prepared, String> {
    let api_version = doc.api_version();
    let kind_name = doc.kind();
    if kind_name.is_empty() {
        return Err("kind: required".into());
    }
    if api_version.is_empty() {
        return Err("apiVersion: required".into());
    }
    let kinds = &batch.kinds;
    let kind = kinds
        .iter()
        .find(|k| k.kind == kind_name && k.api_version() == api_version)
        .cloned()
        .ok_or_else(|| {
            match kinds.iter().find(|k| k.kind == kind_name) {
                Some(k) => format!(
                    "apiVersion: {api_version:?} is not served for kind {kind_name} (use {:?})",
                    k.api_version()
                ),
                None => format!(
                    "kind: unknown kind {kind_name:?} in apiVersion {api_version:?} (apply the Promise that defines it first)"
                ),
            }
        })?;
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

/// A document (its metadata cleaned) checked and completed as the API server stores it: its
/// kind's defaults, its kind's rules, a request's schema (with the fields it does not declare
/// pruned, returned) and its Promise's label.
fn complete(
    kind: &KindInfo,
    mut value: Value,
    batch: &Batch,
) -> Result<(Object, Vec<String>), String> {
    let metadata = value
        .get_mut("metadata")
        .and_then(Value::as_object_mut)
        .ok_or("metadata: must be a mapping")?;
    check_labels("metadata.labels", metadata.get("labels"))?;
    if kind.group == GROUP {
        // The API server stores every default the kind's CRD declares.
        if let Some(schema) = crds::schema_of(&kind.kind) {
            defaults::apply(schema, &mut value);
        }
    }
    let (promises, state_stores, known) = (&batch.promises, &batch.state_stores, &batch.known);

    let mut pruned = Vec::new();
    match (kind.group.as_str(), kind.kind.as_str()) {
        (GROUP, "Promise") => check_promise(&value)?,
        (GROUP, "Destination") => check_destination(&value, state_stores, known)?,
        (GROUP, "GitStateStore") => {
            let store = typed::<crate::api::GitStateStore>(&kind.kind, &value)?;
            check_store_path(store.spec.path.as_deref())?;
            check_enum(
                "spec.authMethod",
                store.spec.auth_method.as_deref(),
                &GIT_AUTH_METHODS,
            )?;
        }
        (GROUP, "BucketStateStore") => {
            let store = typed::<crate::api::BucketStateStore>(&kind.kind, &value)?;
            check_store_path(store.spec.path.as_deref())?;
            check_enum(
                "spec.authMethod",
                store.spec.auth_method.as_deref(),
                &BUCKET_AUTH_METHODS,
            )?;
        }
        (GROUP, "Work") => {
            typed::<crate::api::Work>(&kind.kind, &value)?;
        }
        (GROUP, "WorkPlacement") => {
            typed::<crate::api::WorkPlacement>(&kind.kind, &value)?;
        }
        (GROUP, "PipelineRun") => {
            typed::<crate::api::PipelineRun>(&kind.kind, &value)?;
        }
        (GROUP, "PromiseRevision") => {
            typed::<crate::api::PromiseRevision>(&kind.kind, &value)?;
        }
        (GROUP, "ResourceBinding") => {
            typed::<crate::api::ResourceBinding>(&kind.kind, &value)?;
        }
        (GROUP, "PromiseRelease") => check_release(&typed(&kind.kind, &value)?)?,
        (GROUP, "HealthRecord") => value = check_health_record(value)?,
        ("", "Secret") => value = normalise_secret(value)?,
        _ => {
            let promise = crate::platform::promise_defining(promises, kind)
                .ok_or_else(|| format!("no Promise defines kind {}", kind.kind))?;
            let typed_promise: Promise = to_typed(promise).map_err(|e| e.to_string())?;
            let api = promise_api::request_kind(&typed_promise)
                .map_err(|e| e.to_string())?
                .ok_or_else(|| format!("no Promise defines kind {}", kind.kind))?;
            if let Some(schema) = &api.schema {
                let checked = validation::validate(schema, &value).map_err(|e| e.to_string())?;
                value = checked.object;
                pruned = checked.pruned;
            }
            let labels = value
                .pointer_mut("/metadata")
                .and_then(Value::as_object_mut)
                .map(|m| m.entry("labels").or_insert_with(|| json!({})));
            if let Some(Value::Object(labels)) = labels {
                labels.insert(
                    crate::api::labels::PROMISE_NAME.into(),
                    json!(typed_promise.metadata.name.clone().unwrap_or_default()),
                );
            }
        }
    }
    let object: Object =
        serde_json::from_value(value).map_err(|e| format!("not a valid object: {e}"))?;
    Ok((object, pruned))
}

fn check_promise(value: &Value) -> Result<(), String> {
    let promise: Promise = typed("Promise", value)?;
    let promise_name = promise.metadata.name.clone().unwrap_or_default();
    if let Some(api) = promise_api::request_kind(&promise).map_err(|e| e.to_string())? {
        check_api_names(&api.kind)?;
    }
    if let Some(workflows) = &promise.spec.workflows {
        check_reconciliation_interval(workflows)?;
        for (ty, actions) in [
            ("resource", &workflows.resource),
            ("promise", &workflows.promise),
        ] {
            let Some(actions) = actions else { continue };
            for (action, list) in [
                ("configure", &actions.configure),
                ("delete", &actions.delete),
            ] {
                let path = format!("spec.workflows.{ty}.{action}");
                let pipelines = Pipeline::parse_list(&path, list).map_err(|e| e.to_string())?;
                for (i, p) in pipelines.iter().enumerate() {
                    check_pipeline(&format!("{path}[{i}]"), p, &promise_name, ty, action)?;
                }
            }
        }
    }
    Ok(())
}

fn check_destination(
    value: &Value,
    state_stores: &BTreeSet<(String, String)>,
    known: &Known,
) -> Result<(), String> {
    let dest: crate::api::Destination = typed("Destination", value)?;
    let name = dest.metadata.name.clone().unwrap_or_default();
    let store_ref = dest
        .spec
        .state_store_ref
        .as_ref()
        .ok_or("spec.stateStoreRef: required")?;
    if !matches!(
        store_ref.kind.as_str(),
        "GitStateStore" | "BucketStateStore"
    ) {
        return Err(format!(
            "spec.stateStoreRef.kind: {:?} must be GitStateStore or BucketStateStore",
            store_ref.kind
        ));
    }
    if !state_stores.contains(&(store_ref.kind.clone(), store_ref.name.clone())) {
        return Err(format!(
            "spec.stateStoreRef: {} {:?} does not exist",
            store_ref.kind, store_ref.name
        ));
    }
    names::store_path(&dest.spec.path)
        .map_err(|reason| format!("spec.path: {} {reason}", shown(&dest.spec.path)))?;
    check_enum(
        "spec.cleanup",
        dest.spec.cleanup.as_deref(),
        &[CLEANUP_NONE, CLEANUP_ALL],
    )?;
    let mode = value
        .pointer("/spec/filepath/mode")
        .and_then(Value::as_str)
        .unwrap_or("nestedByMetadata");
    if let Some(stored) = known.destination_modes.get(&name) {
        if stored != mode {
            return Err(format!(
                "spec.filepath.mode: is immutable (stored {stored:?}, applied {mode:?})"
            ));
        }
    }
    Ok(())
}

/// Folds `stringData` into `data` (base64), as the API server does on write.
fn normalise_secret(mut value: Value) -> Result<Value, String> {
    crate::api::secret::check_values(&value).map_err(|e| e.to_string())?;
    let secret: crate::api::Secret = typed("Secret", &value)?;
    if let Some(string_data) = secret.string_data {
        let map = value.as_object_mut().ok_or("a Secret must be a mapping")?;
        map.remove("stringData");
        let data = map
            .entry("data")
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .ok_or("data: must be a mapping")?;
        for (k, v) in string_data {
            data.insert(
                k,
                json!(base64::engine::general_purpose::STANDARD.encode(v.as_bytes())),
            );
        }
    }
    Ok(value)
}

/// Stores every prepared object: created as the file gives it, or merged into the stored one
/// as `kubectl apply` merges (see [`Prepared::merged_with`]).
pub async fn store_all(cp: &dyn ControlPlane, prepared: &[Prepared]) -> Result<Vec<Stored>, Error> {
    let mut stored = Vec::with_capacity(prepared.len());
    for p in prepared {
        stored.push(store_one(cp, p).await?);
    }
    Ok(stored)
}

async fn store_one(cp: &dyn ControlPlane, p: &Prepared) -> Result<Stored, Error> {
    let key = p.key();
    let name = key.name.clone();
    let ns = key.namespace.clone();
    let store_err = |source| Error::Store {
        key: key.clone(),
        source,
    };
    // Retry on conflicts with controllers writing the same object meanwhile: the merge is made
    // again with what they wrote.
    for _ in 0..20 {
        let existing = cp
            .get(&p.kind, ns.as_deref(), &name)
            .await
            .map_err(store_err)?;
        let (result, without_history) = match existing {
            None => (cp.create(&p.kind, &p.object).await, false),
            Some(live) => {
                let merged = p.merged_with(&live)?;
                (cp.update(&p.kind, &merged.object).await, !merged.history)
            }
        };
        match result {
            Ok(object) => {
                return Ok(Stored {
                    object,
                    without_history,
                })
            }
            Err(store::Error::Conflict { .. }) | Err(store::Error::AlreadyExists { .. }) => {
                continue
            }
            Err(e) => return Err(store_err(e)),
        }
    }
    Err(store_err(store::Error::Conflict {
        key: key.clone(),
        expected: "latest".into(),
    }))
}

/// Converts a typed object for storing (used by controllers creating objects).
pub fn untyped<T: serde::Serialize>(typed: &T) -> Result<Object, serde_json::Error> {
    from_typed(typed)
}
