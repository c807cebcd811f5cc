//! A document checked and completed as the API server stores it: its kind's CRD defaults, its
//! kind's own rules (one row of [`RULES`] per kind), and for a request its Promise's schema.

use std::collections::BTreeMap;
use std::time::Duration;

use base64::Engine;
use serde_json::{json, Value};

use super::checks::{
    check_api_names, check_enum, check_health_record, check_labels, check_pipeline,
    check_reconciliation_interval, check_release, check_store_path, shown, typed,
};
use super::Batch;
use crate::api::destination::{CLEANUP_ALL, CLEANUP_NONE};
use crate::api::destination_paths::{self, PathClaim};
use crate::api::object::to_typed;
use crate::api::pipeline::Pipeline;
use crate::api::state_store::{BUCKET_AUTH_METHODS, GIT_AUTH_METHODS};
use crate::api::{
    crds, defaults, names, promise_api, validation, KindInfo, Object, Promise, GROUP,
};

/// A kind's own rule: checks the document (its metadata cleaned, its CRD's defaults filled in)
/// against the batch and what is stored, and returns it as stored (some kinds are normalised
/// on write, as the API server does). The reason names the field.
type Rule = fn(Value, &Batch) -> Result<Value, String>;

/// The rules of the kinds that exist before any Promise, by `(group, kind)`. A kind without a
/// row is a request of a Promise (see [`complete`]); a new check of a kind is one more row, or
/// one more line in its row's function.
const RULES: &[(&str, &str, Rule)] = &[
    (GROUP, "Promise", |v, b| {
        check_promise(&v, b.known.minimum_interval).map(|()| v)
    }),
    (GROUP, "Destination", |v, b| {
        check_destination(&v, b).map(|()| v)
    }),
    (GROUP, "GitStateStore", |v, _| {
        let store = typed::<crate::api::GitStateStore>("GitStateStore", &v)?;
        check_store_path(store.spec.path.as_deref())?;
        let method = store.spec.auth_method.as_deref();
        check_enum("spec.authMethod", method, &GIT_AUTH_METHODS).map(|()| v)
    }),
    (GROUP, "BucketStateStore", |v, _| {
        let store = typed::<crate::api::BucketStateStore>("BucketStateStore", &v)?;
        check_store_path(store.spec.path.as_deref())?;
        let method = store.spec.auth_method.as_deref();
        check_enum("spec.authMethod", method, &BUCKET_AUTH_METHODS).map(|()| v)
    }),
    (GROUP, "Work", |v, _| {
        typed::<crate::api::Work>("Work", &v).map(|_| v)
    }),
    (GROUP, "WorkPlacement", |v, _| {
        typed::<crate::api::WorkPlacement>("WorkPlacement", &v).map(|_| v)
    }),
    (GROUP, "PipelineRun", |v, _| {
        typed::<crate::api::PipelineRun>("PipelineRun", &v).map(|_| v)
    }),
    (GROUP, "PromiseRevision", |v, _| {
        typed::<crate::api::PromiseRevision>("PromiseRevision", &v).map(|_| v)
    }),
    (GROUP, "ResourceBinding", |v, _| {
        typed::<crate::api::ResourceBinding>("ResourceBinding", &v).map(|_| v)
    }),
    (GROUP, "PromiseRelease", |v, _| {
        check_release(&typed("PromiseRelease", &v)?).map(|()| v)
    }),
    (GROUP, "HealthRecord", |v, _| check_health_record(v)),
    ("", "Secret", |v, _| normalise_secret(v)),
    ("", "ConfigMap", |v, _| check_config_map(&v).map(|()| v)),
    ("", "Namespace", |v, _| Ok(v)),
];

/// A document (its metadata cleaned) checked and completed as the API server stores it: its
/// kind's defaults, its kind's rules, a request's schema (with the fields it does not declare
/// pruned, returned) and its Promise's label.
pub(super) fn complete(
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
    let rule = RULES
        .iter()
        .find(|(group, name, _)| *group == kind.group && *name == kind.kind);
    let (value, pruned) = if let Some((_, _, rule)) = rule {
        (rule(value, batch)?, Vec::new())
    } else {
        complete_request(kind, value, &batch.promises)?
    };
    let object: Object =
        serde_json::from_value(value).map_err(|e| format!("not a valid object: {e}"))?;
    Ok((object, pruned))
}

/// A request checked against its Promise's schema (the fields it does not declare pruned, and
/// returned) and labelled with its Promise's name.
fn complete_request(
    kind: &KindInfo,
    mut value: Value,
    promises: &[Object],
) -> Result<(Value, Vec<String>), String> {
    let promise = crate::platform::promise_defining(promises, kind)
        .ok_or_else(|| format!("no Promise defines kind {}", kind.kind))?;
    let typed_promise: Promise = to_typed(promise).map_err(|e| e.to_string())?;
    let api = promise_api::request_kind(&typed_promise)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("no Promise defines kind {}", kind.kind))?;
    let mut pruned = Vec::new();
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
    Ok((value, pruned))
}

fn check_promise(value: &Value, minimum_interval: Duration) -> Result<(), String> {
    let promise: Promise = typed("Promise", value)?;
    let promise_name = promise.metadata.name.clone().unwrap_or_default();
    if let Some(api) = promise_api::request_kind(&promise).map_err(|e| e.to_string())? {
        check_api_names(&api.kind)?;
    }
    if let Some(workflows) = &promise.spec.workflows {
        check_reconciliation_interval(workflows, minimum_interval)?;
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

fn check_destination(value: &Value, batch: &Batch) -> Result<(), String> {
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
    names::store_path(&dest.spec.path)
        .map_err(|reason| format!("spec.path: {} {reason}", shown(&dest.spec.path)))?;
    if let Some(refused) =
        destination_paths::refusal(&PathClaim::of(&dest), &claims_before(batch, &name))
    {
        return Err(format!("spec.path: {}", refused.message()));
    }
    check_enum(
        "spec.cleanup",
        dest.spec.cleanup.as_deref(),
        &[CLEANUP_NONE, CLEANUP_ALL],
    )?;
    let mode = value
        .pointer("/spec/filepath/mode")
        .and_then(Value::as_str)
        .unwrap_or("nestedByMetadata");
    if let Some(stored) = batch.known.destination_modes.get(&name) {
        if stored != mode {
            return Err(format!(
                "spec.filepath.mode: is immutable (stored {stored:?}, applied {mode:?})"
            ));
        }
    }
    Ok(())
}

/// Where the other Destinations write when the batch's Destination `name` is admitted: as
/// stored, changed by the batch's documents before it (as if the batch were applied one
/// document at a time).
fn claims_before(batch: &Batch, name: &str) -> Vec<PathClaim> {
    let mut claims: BTreeMap<&str, &PathClaim> = batch
        .known
        .destinations
        .iter()
        .map(|c| (c.name.as_str(), c))
        .collect();
    for claim in batch.destinations.iter().take_while(|c| c.name != name) {
        claims.insert(claim.name.as_str(), claim);
    }
    claims
        .into_values()
        .filter(|c| c.name != name)
        .cloned()
        .collect()
}

/// What the API server would warn of when storing `object`: a Destination whose state store
/// does not exist (yet), in Kratix's words.
pub(super) fn warnings(kind: &KindInfo, object: &Object, batch: &Batch) -> Vec<String> {
    if kind.group != GROUP || kind.kind != "Destination" {
        return Vec::new();
    }
    let Ok(dest) = to_typed::<crate::api::Destination>(object) else {
        return Vec::new();
    };
    dest.spec
        .state_store_ref
        .filter(|r| {
            !batch
                .state_stores
                .contains(&(r.kind.clone(), r.name.clone()))
        })
        .map(|r| {
            vec![format!(
                "spec.stateStoreRef: referenced {} {:?} does not exist",
                r.kind, r.name
            )]
        })
        .unwrap_or_default()
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

/// A ConfigMap's `data` (strings) and `binaryData` (base64), keys as Kubernetes allows them.
fn check_config_map(value: &Value) -> Result<(), String> {
    for field in ["data", "binaryData"] {
        let map = match value.get(field) {
            None | Some(Value::Null) => continue,
            Some(Value::Object(map)) => map,
            Some(_) => return Err(format!("{field}: must be a mapping of keys to strings")),
        };
        for (key, item) in map {
            if key.is_empty()
                || !key
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            {
                return Err(format!(
                    "{field}: key {} is not valid (use letters, digits, '-', '_' and '.')",
                    shown(key)
                ));
            }
            let Value::String(text) = item else {
                return Err(format!("{field}.{key}: must be a string"));
            };
            if field == "binaryData"
                && base64::engine::general_purpose::STANDARD
                    .decode(text)
                    .is_err()
            {
                return Err(format!("{field}.{key}: is not valid base64"));
            }
        }
    }
    if let Some(immutable) = value.get("immutable") {
        if !immutable.is_boolean() {
            return Err("immutable: must be true or false".into());
        }
    }
    Ok(())
}
