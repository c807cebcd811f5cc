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
pub(super) fn prepare_create(kind: &KindInfo, obj: &Object, fresh: &Fresh) -> Result<Object> {
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
    data.remove("status");
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
    if meta.labels.as_ref().is_some_and(|m| m.is_empty()) {
        meta.labels = None;
    }
    if meta.annotations.as_ref().is_some_and(|m| m.is_empty()) {
        meta.annotations = None;
    }
    if meta.finalizers.as_ref().is_some_and(|f| f.is_empty()) {
        meta.finalizers = None;
    }
    if meta.owner_references.as_ref().is_some_and(|o| o.is_empty()) {
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
mod tests {
    use serde_json::json;

    use super::*;
    use crate::api::kinds::builtin_kinds;

    fn kind(name: &str) -> KindInfo {
        builtin_kinds()
            .into_iter()
            .find(|k| k.kind == name)
            .expect("a built-in kind")
    }

    fn object(value: Value) -> Object {
        serde_json::from_value(value).expect("a valid object")
    }

    fn fresh() -> Fresh {
        Fresh {
            uid: "uid-1".to_string(),
            now: Time(k8s_openapi::jiff::Timestamp::from_second(1_700_000_000).expect("valid")),
            name_suffix: "x7k2p".to_string(),
        }
    }

    /// A stored Work, as `prepare_create` would leave it plus a resourceVersion.
    fn stored_work(extra_meta: Value, status: Option<Value>) -> Object {
        let mut meta = json!({
            "name": "w", "namespace": "default", "uid": "uid-1", "resourceVersion": "5",
            "generation": 3, "creationTimestamp": "2023-11-14T22:13:20Z"
        });
        if let (Some(meta), Some(extra)) = (meta.as_object_mut(), extra_meta.as_object()) {
            meta.extend(extra.clone());
        }
        let mut value = json!({
            "apiVersion": "platform.kratix.io/v1alpha1", "kind": "Work",
            "metadata": meta, "spec": {"replicas": 1}
        });
        if let Some(status) = status {
            value["status"] = status;
        }
        object(value)
    }

    #[test]
    fn scope_of_addresses() {
        let (work, promise) = (kind("Work"), kind("Promise"));
        let cases: &[(&KindInfo, Option<&str>, bool)] = &[
            (&work, Some("default"), true),
            (&work, None, false),
            (&work, Some(""), false),
            (&promise, None, true),
            (&promise, Some(""), true),
            (&promise, Some("default"), false),
        ];
        for (kind, ns, ok) in cases {
            let got = address(kind, *ns, "n");
            assert_eq!(got.is_ok(), *ok, "{} {ns:?}: {got:?}", kind.kind);
            if !ok {
                assert!(matches!(got, Err(Error::Invalid { .. })));
            }
        }
    }

    #[test]
    fn create_assigns_identity_and_refuses_bad_input() {
        let work = kind("Work");
        let cases: Vec<(&str, Value, Result<&str, &str>)> = vec![
            (
                "plain",
                json!({"metadata": {"name": "a", "namespace": "ns"}, "spec": {}}),
                Ok("a"),
            ),
            (
                "generateName",
                json!({"metadata": {"generateName": "run-", "namespace": "ns"}}),
                Ok("run-x7k2p"),
            ),
            (
                "no name",
                json!({"metadata": {"namespace": "ns"}}),
                Err("metadata.name is required"),
            ),
            (
                "no namespace",
                json!({"metadata": {"name": "a"}}),
                Err("namespace is required"),
            ),
            (
                "bad name",
                json!({"metadata": {"name": "A_b", "namespace": "ns"}}),
                Err("metadata.name must consist"),
            ),
            (
                "bad namespace",
                json!({"metadata": {"name": "a", "namespace": "a.b"}}),
                Err("metadata.namespace must consist"),
            ),
            (
                "resourceVersion set",
                json!({"metadata": {"name": "a", "namespace": "ns", "resourceVersion": "3"}}),
                Err("resourceVersion must not be set"),
            ),
            (
                "other kind",
                json!({"apiVersion": "platform.kratix.io/v1alpha1", "kind": "Promise",
                       "metadata": {"name": "a", "namespace": "ns"}}),
                Err("do not match"),
            ),
            (
                "other group",
                json!({"apiVersion": "v1", "kind": "Work", "metadata": {"name": "a", "namespace": "ns"}}),
                Err("do not match"),
            ),
        ];
        for (case, input, want) in cases {
            let got = prepare_create(&work, &object(input), &fresh());
            match (got, want) {
                (Ok(obj), Ok(name)) => {
                    assert_eq!(obj.metadata.name.as_deref(), Some(name), "{case}");
                    assert_eq!(obj.metadata.uid.as_deref(), Some("uid-1"), "{case}");
                    assert_eq!(obj.metadata.generation, Some(1), "{case}");
                    assert_eq!(obj.metadata.creation_timestamp, Some(fresh().now), "{case}");
                    assert_eq!(obj.types, Some(types_of(&work)), "{case}");
                }
                (Err(Error::Invalid { reason, .. }), Err(want)) => {
                    assert!(reason.contains(want), "{case}: {reason}")
                }
                (got, want) => panic!("{case}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn create_drops_status_deletion_and_empty_metadata() {
        let input = object(json!({
            "metadata": {"name": "a", "namespace": "ns", "labels": {}, "finalizers": [],
                         "deletionTimestamp": "2023-11-14T22:13:20Z", "uid": "mine", "generation": 9},
            "spec": {"x": 1}, "status": {"phase": "Done"}
        }));
        let got = prepare_create(&kind("Work"), &input, &fresh()).expect("valid");
        assert_eq!(got.data, json!({"spec": {"x": 1}}));
        assert_eq!(got.metadata.labels, None);
        assert_eq!(got.metadata.finalizers, None);
        assert_eq!(got.metadata.deletion_timestamp, None);
        assert_eq!(got.metadata.uid.as_deref(), Some("uid-1"));
        assert_eq!(got.metadata.generation, Some(1));
    }

    #[test]
    fn update_bumps_generation_on_spec_changes_only() {
        let stored = stored_work(json!({}), Some(json!({"phase": "Done"})));
        let cases: Vec<(&str, Value, Option<i64>)> = vec![
            // (case, incoming, generation after; None = unchanged write)
            (
                "same",
                json!({"metadata": {}, "spec": {"replicas": 1}}),
                None,
            ),
            (
                "spec changed",
                json!({"metadata": {}, "spec": {"replicas": 2}}),
                Some(4),
            ),
            (
                "field added",
                json!({"metadata": {}, "spec": {"replicas": 1}, "data": {"a": "b"}}),
                Some(4),
            ),
            ("spec removed", json!({"metadata": {}}), Some(4)),
            (
                "labels",
                json!({"metadata": {"labels": {"a": "b"}}, "spec": {"replicas": 1}}),
                Some(3),
            ),
            (
                "annotations",
                json!({"metadata": {"annotations": {"a": "b"}}, "spec": {"replicas": 1}}),
                Some(3),
            ),
            (
                "finalizers",
                json!({"metadata": {"finalizers": ["f"]}, "spec": {"replicas": 1}}),
                Some(3),
            ),
            (
                "status only",
                json!({"metadata": {}, "spec": {"replicas": 1}, "status": {"phase": "X"}}),
                None,
            ),
        ];
        for (case, incoming, want) in cases {
            let mut incoming = incoming;
            incoming["metadata"]["name"] = json!("w");
            incoming["metadata"]["namespace"] = json!("default");
            let got = prepare_update(&kind("Work"), &stored, &object(incoming)).expect(case);
            match (got, want) {
                (Outcome::Unchanged(obj), None) => assert_eq!(obj, stored, "{case}"),
                (Outcome::Store(obj), Some(generation)) => {
                    assert_eq!(obj.metadata.generation, Some(generation), "{case}");
                    assert_eq!(
                        obj.data["status"],
                        json!({"phase": "Done"}),
                        "{case}: status kept"
                    );
                    assert_eq!(obj.metadata.uid.as_deref(), Some("uid-1"), "{case}");
                }
                (got, want) => panic!("{case}: got {got:?}, want generation {want:?}"),
            }
        }
    }

    #[test]
    fn preconditions_refuse_stale_writes() {
        let stored = stored_work(json!({}), None);
        let cases: &[(&str, Value, bool)] = &[
            ("no resourceVersion", json!({}), true),
            (
                "empty resourceVersion",
                json!({"resourceVersion": ""}),
                true,
            ),
            ("current", json!({"resourceVersion": "5"}), true),
            ("stale", json!({"resourceVersion": "4"}), false),
            ("same uid", json!({"uid": "uid-1"}), true),
            ("other uid", json!({"uid": "uid-2"}), false),
        ];
        for (case, meta, ok) in cases {
            let mut incoming =
                json!({"metadata": meta.clone(), "spec": {"replicas": 2}, "status": {"a": 1}});
            incoming["metadata"]["name"] = json!("w");
            incoming["metadata"]["namespace"] = json!("default");
            let incoming = object(incoming);
            for (op, got) in [
                ("update", prepare_update(&kind("Work"), &stored, &incoming)),
                (
                    "status",
                    prepare_status_update(&kind("Work"), &stored, &incoming),
                ),
            ] {
                match got {
                    Ok(Outcome::Store(_)) => assert!(ok, "{case} {op}"),
                    Err(Error::Conflict { .. }) => assert!(!ok, "{case} {op}"),
                    other => panic!("{case} {op}: {other:?}"),
                }
            }
        }
    }

    #[test]
    fn status_update_writes_status_only() {
        let stored = stored_work(json!({"labels": {"a": "b"}}), Some(json!({"phase": "Old"})));
        let cases: Vec<(&str, Value, Option<Value>)> = vec![
            (
                "new status",
                json!({"phase": "New"}),
                Some(json!({"phase": "New"})),
            ),
            ("same status", json!({"phase": "Old"}), None),
            ("cleared", Value::Null, Some(Value::Null)),
        ];
        for (case, status, want) in cases {
            let incoming = object(json!({
                "metadata": {"name": "w", "namespace": "default", "labels": {"c": "d"}},
                "spec": {"replicas": 7}, "status": status
            }));
            let got = prepare_status_update(&kind("Work"), &stored, &incoming).expect(case);
            match (got, want) {
                (Outcome::Unchanged(_), None) => {}
                (Outcome::Store(obj), Some(status)) => {
                    assert_eq!(
                        obj.data.get("status").cloned().unwrap_or(Value::Null),
                        status,
                        "{case}"
                    );
                    assert_eq!(
                        obj.data["spec"],
                        json!({"replicas": 1}),
                        "{case}: spec kept"
                    );
                    assert_eq!(obj.metadata, stored.metadata, "{case}: metadata kept");
                }
                (got, want) => panic!("{case}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn finalizers_govern_deletion() {
        let now = fresh().now;
        let deleting =
            json!({"finalizers": ["a", "b"], "deletionTimestamp": "2023-11-14T22:13:20Z"});
        let cases: Vec<(&str, Value, Value, &str)> = vec![
            // (case, stored metadata, incoming finalizers, outcome)
            (
                "live, finalizer removed",
                json!({"finalizers": ["a"]}),
                json!([]),
                "store",
            ),
            (
                "deleting, one removed",
                deleting.clone(),
                json!(["a"]),
                "store",
            ),
            (
                "deleting, all removed",
                deleting.clone(),
                json!([]),
                "remove",
            ),
            (
                "deleting, none sent",
                deleting.clone(),
                Value::Null,
                "remove",
            ),
            (
                "deleting, finalizer added",
                deleting.clone(),
                json!(["a", "b", "c"]),
                "invalid",
            ),
        ];
        for (case, meta, finalizers, want) in cases {
            let stored = stored_work(meta, None);
            let incoming = object(json!({
                "metadata": {"name": "w", "namespace": "default", "finalizers": finalizers},
                "spec": {"replicas": 1}
            }));
            let got = prepare_update(&kind("Work"), &stored, &incoming);
            let outcome = match &got {
                Ok(Outcome::Store(_)) => "store",
                Ok(Outcome::Remove(_)) => "remove",
                Ok(Outcome::Unchanged(_)) => "unchanged",
                Err(Error::Invalid { .. }) => "invalid",
                Err(_) => "error",
            };
            assert_eq!(outcome, want, "{case}: {got:?}");
        }

        let cases: Vec<(&str, Value, &str)> = vec![
            ("no finalizers", json!({}), "remove"),
            ("finalizers", json!({"finalizers": ["a"]}), "mark"),
            ("already deleting", deleting, "unchanged"),
        ];
        for (case, meta, want) in cases {
            let stored = stored_work(meta, None);
            match (prepare_delete(&stored, &now), want) {
                (Outcome::Remove(_), "remove") | (Outcome::Unchanged(_), "unchanged") => {}
                (Outcome::Store(obj), "mark") => {
                    assert_eq!(obj.metadata.deletion_timestamp, Some(now.clone()), "{case}");
                    assert_eq!(obj.metadata.generation, Some(4), "{case}");
                }
                (got, want) => panic!("{case}: got {got:?}, want {want}"),
            }
        }
    }
}
