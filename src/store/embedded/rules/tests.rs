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
        let got = prepare_create(&work, &object(input), &fresh(), false);
        match (got, want) {
            (Ok(obj), Ok(name)) => {
                assert_eq!(obj.metadata.name.as_deref(), Some(name), "{case}");
                assert_eq!(obj.metadata.uid.as_deref(), Some("uid-1"), "{case}");
                assert_eq!(obj.metadata.generation, Some(1), "{case}");
                assert_eq!(obj.metadata.creation_timestamp, Some(fresh().now), "{case}");
                assert_eq!(obj.types, Some(types_of(&work)), "{case}");
            }
            (Err(Error::Invalid { reason, .. }), Err(want)) => {
                assert!(reason.contains(want), "{case}: {reason}");
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
    let got = prepare_create(&kind("Work"), &input, &fresh(), false).expect("valid");
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
    let deleting = json!({"finalizers": ["a", "b"], "deletionTimestamp": "2023-11-14T22:13:20Z"});
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
