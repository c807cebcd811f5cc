//! The untyped object every control-plane backend stores, and how objects are named.

use std::fmt;

use serde::de::DeserializeOwned;
use serde::Serialize;

/// Any object: `apiVersion`, `kind`, Kubernetes `metadata`, and the rest (`spec`, `status`, `data`…)
/// as JSON. Kubernetes' own unstructured type, so the embedded and Kubernetes backends share it.
pub type Object = kube::core::DynamicObject;

/// Identifies one object: its kind (by group and kind name), namespace and name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    pub group: String,
    pub kind: String,
    /// `None` for cluster-scoped kinds.
    pub namespace: Option<String>,
    pub name: String,
}

impl ObjectKey {
    pub fn new(group: &str, kind: &str, namespace: Option<&str>, name: &str) -> Self {
        Self {
            group: group.to_string(),
            kind: kind.to_string(),
            namespace: namespace.map(str::to_string),
            name: name.to_string(),
        }
    }

    /// The key of a stored object.
    pub fn of(obj: &Object) -> Self {
        let (group, kind) = group_kind(obj);
        Self {
            group,
            kind,
            namespace: obj.metadata.namespace.clone(),
            name: obj.metadata.name.clone().unwrap_or_default(),
        }
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{} {}/{}", self.kind, ns, self.name),
            None => write!(f, "{} {}", self.kind, self.name),
        }
    }
}

/// `(group, kind)` of an object from its `apiVersion` and `kind`.
pub fn group_kind(obj: &Object) -> (String, String) {
    let types = obj.types.clone().unwrap_or_default();
    let group = match types.api_version.rsplit_once('/') {
        Some((group, _version)) => group.to_string(),
        None => String::new(),
    };
    (group, types.kind)
}

/// Parses an untyped object into a typed view (e.g. [`crate::api::Promise`]).
pub fn to_typed<T: DeserializeOwned>(obj: &Object) -> Result<T, serde_json::Error> {
    serde_json::from_value(serde_json::to_value(obj)?)
}

/// Turns a typed object back into the untyped form the control plane stores.
pub fn from_typed<T: Serialize>(typed: &T) -> Result<Object, serde_json::Error> {
    serde_json::from_value(serde_json::to_value(typed)?)
}

/// A typed object in the untyped form, with `spec` as given (see [`stored_spec`]).
pub fn from_typed_with_spec<T: Serialize>(
    typed: &T,
    spec: serde_json::Value,
) -> Result<Object, serde_json::Error> {
    let mut obj = from_typed(typed)?;
    if let Some(map) = obj.data.as_object_mut() {
        map.insert("spec".into(), spec);
    }
    Ok(obj)
}

/// `spec` serialized, with each of `empty` that serialization left out put back. The controllers
/// have always stored these fields even when empty, while the typed specs leave them out so that
/// applied documents keep their own shape.
pub fn stored_spec<T: Serialize>(
    spec: &T,
    empty: &[(&str, serde_json::Value)],
) -> Result<serde_json::Value, serde_json::Error> {
    let mut value = serde_json::to_value(spec)?;
    if let Some(map) = value.as_object_mut() {
        for (field, empty_value) in empty {
            map.entry(*field).or_insert_with(|| empty_value.clone());
        }
    }
    Ok(value)
}

/// A field of the object's free-form part (`spec`, `status`, `data`, …).
pub fn field<'a>(obj: &'a Object, name: &str) -> Option<&'a serde_json::Value> {
    obj.data.get(name)
}

/// The object's labels (empty when it has none).
pub fn labels(obj: &Object) -> std::collections::BTreeMap<String, String> {
    obj.metadata.labels.clone().unwrap_or_default()
}

/// One label's value.
pub fn label<'a>(obj: &'a Object, key: &str) -> Option<&'a str> {
    obj.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(key))
        .map(String::as_str)
}

/// A reference to `owner` (a platform kind, named `kind`) as its controller: on Kubernetes the
/// owned object goes with it. `block_owner_deletion` as the owning controller sets it.
pub fn controller_reference(
    owner: &Object,
    kind: &str,
    block_owner_deletion: Option<bool>,
) -> k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
    k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
        api_version: super::API_VERSION.into(),
        kind: kind.into(),
        name: owner.metadata.name.clone().unwrap_or_default(),
        uid: owner.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion,
    }
}

/// One annotation's value.
pub fn annotation<'a>(obj: &'a Object, key: &str) -> Option<&'a str> {
    obj.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .map(String::as_str)
}
