//! The Kubernetes API server's rules for writes, as pure functions: given the stored object (if any)
//! and what the caller sent, what is to be stored. The database shell only assigns the
//! `resourceVersion` and persists the outcome, so every rule here is tested with plain tables.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::core::TypeMeta;
use serde_json::{Map, Value};

use crate::api::{KindInfo, Object, ObjectKey};
use crate::store::{Error, Result};

/// What a write does to the stored object.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Outcome {
    /// Store this object (under a new `resourceVersion`).
    Store(Object),
    /// Remove the object; this is its last state.
    Remove(Object),
    /// Nothing changes; no `resourceVersion` is taken and no change is emitted, as the API server
    /// skips no-op writes (a controller that rewrites an identical status must not wake itself).
    Unchanged(Object),
}

/// What the server decides for a new object: identity, time, and the random tail of a
/// `generateName`.
#[derive(Debug, Clone)]
pub(super) struct Fresh {
    pub uid: String,
    pub now: Time,
    pub name_suffix: String,
}

/// The key of an object addressed by kind, namespace and name, refusing a namespace on a
/// cluster-scoped kind and its absence on a namespaced one.
pub(super) fn address(kind: &KindInfo, namespace: Option<&str>, name: &str) -> Result<ObjectKey> {
    let namespace = namespace.filter(|ns| !ns.is_empty());
    let key = ObjectKey::new(&kind.group, &kind.kind, namespace, name);
    match (kind.namespaced, namespace) {
        (true, None) => Err(invalid(&key, "namespace is required for a namespaced kind")),
        (false, Some(_)) => Err(invalid(&key, "a cluster-scoped kind has no namespace")),
        _ => Ok(key),
    }
}

/// The namespace filter of a list: `None` lists all namespaces; a cluster-scoped kind has none.
pub(super) fn list_scope(kind: &KindInfo, namespace: Option<&str>) -> Result<Option<String>> {
    match namespace.filter(|ns| !ns.is_empty()) {
        Some(ns) if !kind.namespaced => Err(invalid(
            &ObjectKey::new(&kind.group, &kind.kind, Some(ns), ""),
            "a cluster-scoped kind has no namespace",
        )),
        ns => Ok(ns.map(str::to_string)),
    }
}

/// The key of an object sent by a caller, checked against its kind.
pub(super) fn key_of(kind: &KindInfo, obj: &Object) -> Result<ObjectKey> {
    let name = obj.metadata.name.clone().unwrap_or_default();
    let key = address(kind, obj.metadata.namespace.as_deref(), &name)?;
    check_types(kind, obj, &key)?;
    if name.is_empty() {
        return Err(invalid(&key, "metadata.name is required"));
    }
    Ok(key)
}

/// A new object as the server stores it: identity assigned, status dropped (the status
/// subresource is written by `update_status` only), generation 1.
pub(super) fn prepare_create(
    kind: &KindInfo,
    obj: &Object,
    fresh: &Fresh,
    keep_status: bool,
) -> Result<Object> {
    let mut obj = obj.clone();
    let generated = obj.metadata.name.as_deref().unwrap_or_default().is_empty();
    if generated {
        if let Some(prefix) = obj
            .metadata
            .generate_name
            .as_deref()
            .filter(|p| !p.is_empty())
        {
            obj.metadata.name = Some(format!("{prefix}{}", fresh.name_suffix));
        }
    }
    let key = key_of(kind, &obj)?;
    if let Err(reason) = check_name(&key.name) {
        return Err(invalid(&key, &format!("metadata.name {reason}")));
    }
    if let Some(ns) = &key.namespace {
        if let Err(reason) = check_namespace(ns) {
            return Err(invalid(&key, &format!("metadata.namespace {reason}")));
        }
    }
    if obj
        .metadata
        .resource_version
        .as_deref()
        .is_some_and(|rv| !rv.is_empty())
    {
        return Err(invalid(
            &key,
            "metadata.resourceVersion must not be set on create",
        ));
    }
    obj.types = Some(types_of(kind));
    obj.metadata.namespace = key.namespace.clone();
    obj.metadata.uid = Some(fresh.uid.clone());
    obj.metadata.creation_timestamp = Some(fresh.now.clone());
    obj.metadata.generation = Some(1);
    obj.metadata.deletion_timestamp = None;
    obj.metadata.deletion_grace_period_seconds = None;
    obj.metadata.managed_fields = None;
    normalize_metadata(&mut obj.metadata);
    let mut data = content(&obj);
    if !keep_status {
        data.remove("status");
    }
    obj.data = Value::Object(data);
    Ok(obj)
}

/// `update`: metadata the caller may write, and everything but `status`, replace the stored ones.
pub(super) fn prepare_update(
    kind: &KindInfo,
    stored: &Object,
    incoming: &Object,
) -> Result<Outcome> {
    let key = key_of(kind, incoming)?;
    check_preconditions(&key, stored, incoming)?;
    let mut next = stored.clone();
    let meta = &incoming.metadata;
    next.metadata.labels = meta.labels.clone();
    next.metadata.annotations = meta.annotations.clone();
    next.metadata.finalizers = meta.finalizers.clone();
    next.metadata.owner_references = meta.owner_references.clone();
    normalize_metadata(&mut next.metadata);
    if stored.metadata.deletion_timestamp.is_some() {
        let before = stored.metadata.finalizers.clone().unwrap_or_default();
        let added = next
            .metadata
            .finalizers
            .iter()
            .flatten()
            .any(|f| !before.contains(f));
        if added {
            return Err(invalid(
                &key,
                "no new finalizers can be added while the object is being deleted",
            ));
        }
    }

    let mut data = content(incoming);
    match content(stored).remove("status") {
        Some(status) => data.insert("status".to_string(), status),
        None => data.remove("status"),
    };
    next.data = Value::Object(data);
    if spec_of(&next) != spec_of(stored) {
        next.metadata.generation = Some(stored.metadata.generation.unwrap_or(0) + 1);
    }

    if next.metadata.deletion_timestamp.is_some() && next.metadata.finalizers.is_none() {
        return Ok(Outcome::Remove(next));
    }
    Ok(unless_unchanged(stored, next))
}

/// `update_status`: only `status` is taken from the caller; generation is unchanged.
pub(super) fn prepare_status_update(
    kind: &KindInfo,
    stored: &Object,
    incoming: &Object,
) -> Result<Outcome> {
    let key = key_of(kind, incoming)?;
    check_preconditions(&key, stored, incoming)?;
    let mut next = stored.clone();
    let mut data = content(stored);
    match incoming.data.get("status").filter(|s| !s.is_null()) {
        Some(status) => data.insert("status".to_string(), status.clone()),
        None => data.remove("status"),
    };
    next.data = Value::Object(data);
    Ok(unless_unchanged(stored, next))
}

/// `delete`: an object with finalizers is only marked (once) as being deleted, as the API server
/// does, bumping its generation; one without is removed.
pub(super) fn prepare_delete(stored: &Object, now: &Time) -> Outcome {
    let has_finalizers = stored
        .metadata
        .finalizers
        .as_ref()
        .is_some_and(|f| !f.is_empty());
    if !has_finalizers {
        return Outcome::Remove(stored.clone());
    }
    if stored.metadata.deletion_timestamp.is_some() {
        return Outcome::Unchanged(stored.clone());
    }
    let mut next = stored.clone();
    next.metadata.deletion_timestamp = Some(now.clone());
    next.metadata.deletion_grace_period_seconds = Some(0);
    next.metadata.generation = Some(stored.metadata.generation.unwrap_or(0) + 1);
    Outcome::Store(next)
}

/// `apiVersion` and `kind` as stored for `kind`.
pub(super) fn types_of(kind: &KindInfo) -> TypeMeta {
    TypeMeta {
        api_version: kind.api_version(),
        kind: kind.kind.clone(),
    }
}

/// A caller's `resourceVersion` (when set) must be the stored one, and its `uid` (when set) the
/// stored object's: an object deleted and re-created under the same name is another object.
fn check_preconditions(key: &ObjectKey, stored: &Object, incoming: &Object) -> Result<()> {
    if let Some(expected) = incoming
        .metadata
        .resource_version
        .as_deref()
        .filter(|rv| !rv.is_empty())
    {
        if Some(expected) != stored.metadata.resource_version.as_deref() {
            return Err(Error::Conflict {
                key: key.clone(),
                expected: expected.to_string(),
            });
        }
    }
    if let Some(uid) = incoming
        .metadata
        .uid
        .as_deref()
        .filter(|uid| !uid.is_empty())
    {
        if Some(uid) != stored.metadata.uid.as_deref() {
            return Err(Error::Conflict {
                key: key.clone(),
                expected: incoming
                    .metadata
                    .resource_version
                    .clone()
                    .unwrap_or_default(),
            });
        }
    }
    Ok(())
}

/// The object's `apiVersion`/`kind`, when given, must name `kind` (any served version).
fn check_types(kind: &KindInfo, obj: &Object, key: &ObjectKey) -> Result<()> {
    let Some(types) = &obj.types else {
        return Ok(());
    };
    let group = types
        .api_version
        .rsplit_once('/')
        .map_or("", |(group, _version)| group);
    let kind_matches = types.kind.is_empty() || types.kind == kind.kind;
    let group_matches = types.api_version.is_empty() || group == kind.group;
    if kind_matches && group_matches {
        Ok(())
    } else {
        Err(invalid(
            key,
            &format!(
                "apiVersion {:?} and kind {:?} do not match {}",
                types.api_version,
                types.kind,
                kind.api_version()
            ),
        ))
    }
}

fn unless_unchanged(stored: &Object, next: Object) -> Outcome {
    if &next == stored {
        Outcome::Unchanged(next)
    } else {
        Outcome::Store(next)
    }
}

/// Everything but `apiVersion`, `kind` and `metadata`.
fn content(obj: &Object) -> Map<String, Value> {
    match &obj.data {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    }
}

/// What generation counts: everything but metadata and status.
fn spec_of(obj: &Object) -> Map<String, Value> {
    let mut data = content(obj);
    data.remove("status");
    data
}

/// Empty lists and maps are stored as absent, as the API server's JSON omits them.
fn normalize_metadata(meta: &mut ObjectMeta) {
    if meta
        .labels
        .as_ref()
        .is_some_and(std::collections::BTreeMap::is_empty)
    {
        meta.labels = None;
    }
    if meta
        .annotations
        .as_ref()
        .is_some_and(std::collections::BTreeMap::is_empty)
    {
        meta.annotations = None;
    }
    if meta
        .finalizers
        .as_ref()
        .is_some_and(std::vec::Vec::is_empty)
    {
        meta.finalizers = None;
    }
    if meta
        .owner_references
        .as_ref()
        .is_some_and(std::vec::Vec::is_empty)
    {
        meta.owner_references = None;
    }
}

/// Object names are DNS-1123 subdomains, as for most Kubernetes kinds.
fn check_name(name: &str) -> Result<(), &'static str> {
    if name.len() > 253 {
        return Err("must be at most 253 characters");
    }
    check_dns_chars(name, true)
}

/// Namespaces are DNS-1123 labels.
fn check_namespace(name: &str) -> Result<(), &'static str> {
    if name.len() > 63 {
        return Err("must be at most 63 characters");
    }
    check_dns_chars(name, false)
}

fn check_dns_chars(name: &str, dots: bool) -> Result<(), &'static str> {
    let allowed =
        |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || (dots && c == '.');
    let alnum = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    if !name.chars().all(allowed) {
        return Err("must consist of lower case letters, digits, '-' (and '.' in names)");
    }
    if !alnum(name.chars().next()) || !alnum(name.chars().last()) {
        return Err("must start and end with a lower case letter or digit");
    }
    Ok(())
}

fn invalid(key: &ObjectKey, reason: &str) -> Error {
    Error::Invalid {
        key: key.clone(),
        reason: reason.to_string(),
    }
}

#[cfg(test)]
mod tests;
