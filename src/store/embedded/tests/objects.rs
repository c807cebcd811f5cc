//! Objects as written and read: identity, listing and selection, scope, generation, status
//! apart from spec, conflicts.

use super::*;

#[tokio::test]
async fn open_creates_the_database_and_reopens_it() {
    let home = tempfile::tempdir().expect("tempdir");
    let home = home.path().join("nested").join("home");
    let store = EmbeddedStore::open(&home).expect("open");
    assert!(home.join(DATABASE_FILE).is_file());
    store
        .create(&work(), &new_work("default", "a", json!({})))
        .await
        .expect("create");
    drop(store);

    let store = EmbeddedStore::open(&home).expect("reopen");
    assert!(store
        .get(&work(), Some("default"), "a")
        .await
        .expect("get")
        .is_some());
    let mode: String = store
        .inner
        .with_connection(|conn| {
            conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))
                .map_err(backend("read journal mode"))
        })
        .expect("pragma");
    assert_eq!(mode, "wal");
}

#[tokio::test]
async fn create_assigns_identity_and_get_returns_it() {
    let (_home, store) = store();
    let created = store
        .create(&work(), &new_work("default", "a", json!({"x": "1"})))
        .await
        .expect("create");
    let meta = &created.metadata;
    assert!(
        uuid::Uuid::parse_str(meta.uid.as_deref().unwrap_or_default()).is_ok(),
        "{meta:?}"
    );
    assert_eq!(meta.generation, Some(1));
    assert!(meta.creation_timestamp.is_some());
    let rv = meta.resource_version.clone().expect("resourceVersion");
    assert_eq!(store.current_resource_version().await.expect("rv"), rv);

    let got = get_work(&store, "a").await;
    assert_eq!(got, created);
    let json = serde_json::to_value(&got).expect("json");
    assert_eq!(json["apiVersion"], "platform.kratix.io/v1alpha1");
    assert_eq!(json["kind"], "Work");

    let again = store
        .create(&work(), &new_work("default", "a", json!({})))
        .await;
    assert!(
        matches!(again, Err(Error::AlreadyExists { .. })),
        "{again:?}"
    );
    let missing = store.get(&work(), Some("other"), "a").await.expect("get");
    assert!(missing.is_none());
}

#[tokio::test]
async fn list_filters_by_namespace_and_selector_in_order() {
    let (_home, store) = store();
    for (ns, name, labels) in [
        ("team-b", "z", json!({"env": "dev"})),
        ("team-a", "y", json!({"env": "prod"})),
        ("team-a", "x", json!({"env": "dev", "tier": "web"})),
        ("default", "w", json!({})),
    ] {
        store
            .create(&work(), &new_work(ns, name, labels))
            .await
            .expect("create");
    }
    store
        .create(
            &promise(),
            &object(json!({"metadata": {"name": "p", "labels": {"env": "dev"}}})),
        )
        .await
        .expect("create promise");

    let cases: &[(Option<&str>, &str, &[&str])] = &[
        (None, "", &["default/w", "team-a/x", "team-a/y", "team-b/z"]),
        (Some("team-a"), "", &["team-a/x", "team-a/y"]),
        (None, "env=dev", &["team-a/x", "team-b/z"]),
        (Some("team-a"), "env=dev", &["team-a/x"]),
        (None, "env", &["team-a/x", "team-a/y", "team-b/z"]),
        (None, "!env", &["default/w"]),
        (None, "env in (prod),tier", &[]),
        (None, "env=dev,tier=web", &["team-a/x"]),
        (None, "tier=web,env=dev", &["team-a/x"]),
        (None, "env=dev,env=prod", &[]),
        (None, "env=dev,tier!=web", &["team-b/z"]),
        (None, "env=staging", &[]),
        (Some("nowhere"), "", &[]),
    ];
    for (namespace, selector, want) in cases {
        let selector = Selector::parse(selector).expect("selector");
        let got = store
            .list(&work(), *namespace, &selector)
            .await
            .expect("list");
        assert_eq!(names(&got), *want, "{namespace:?} {selector}");
    }
    let promises = store
        .list(&promise(), None, &Selector::everything())
        .await
        .expect("list promises");
    assert_eq!(names(&promises), ["-/p"]);
}

/// The label index follows every write: relabelled objects move between selections, removed
/// ones leave them, and a database from before the index gets one for the objects it holds.
#[tokio::test]
async fn label_selection_follows_relabelling_removal_and_migration() {
    let (home, store) = store();
    for name in ["a", "b"] {
        store
            .create(&work(), &new_work("default", name, json!({"env": "dev"})))
            .await
            .expect("create");
    }
    let dev = Selector::parse("env=dev").expect("selector");
    let prod = Selector::parse("env=prod").expect("selector");
    let list = |selector: Selector| {
        let store = store.clone();
        async move { names(&store.list(&work(), None, &selector).await.expect("list")) }
    };
    let mut a = get_work(&store, "a").await;
    a.metadata.labels = Some([("env".to_string(), "prod".to_string())].into());
    store.update(&work(), &a).await.expect("relabel");
    assert_eq!(list(dev.clone()).await, ["default/b"]);
    assert_eq!(list(prod.clone()).await, ["default/a"]);
    store
        .delete(&work(), Some("default"), "b")
        .await
        .expect("delete");
    assert!(list(dev.clone()).await.is_empty());

    // The same objects in a database of the first schema version, without the index.
    drop(store);
    let conn =
        rusqlite::Connection::open(home.path().join("home").join(DATABASE_FILE)).expect("open");
    conn.execute_batch("DROP TABLE labels; UPDATE schema_version SET version = 1;")
        .expect("downgrade");
    drop(conn);
    let store = EmbeddedStore::open(&home.path().join("home")).expect("reopen");
    let got = store.list(&work(), None, &prod).await.expect("list");
    assert_eq!(names(&got), ["default/a"]);
}

#[tokio::test]
async fn scope_is_enforced() {
    let (_home, store) = store();
    let cluster_with_ns = object(json!({"metadata": {"name": "p", "namespace": "default"}}));
    let namespaced_without = object(json!({"metadata": {"name": "w"}}));
    let got = store.create(&promise(), &cluster_with_ns).await;
    assert!(matches!(got, Err(Error::Invalid { .. })), "{got:?}");
    let got = store.create(&work(), &namespaced_without).await;
    assert!(matches!(got, Err(Error::Invalid { .. })), "{got:?}");
    let got = store.get(&promise(), Some("default"), "p").await;
    assert!(matches!(got, Err(Error::Invalid { .. })), "{got:?}");
    let got = store.get(&work(), None, "w").await;
    assert!(matches!(got, Err(Error::Invalid { .. })), "{got:?}");
    let got = store
        .list(&promise(), Some("default"), &Selector::everything())
        .await;
    assert!(matches!(got, Err(Error::Invalid { .. })), "{got:?}");
    let got = store.delete(&work(), None, "w").await;
    assert!(matches!(got, Err(Error::Invalid { .. })), "{got:?}");
}

#[tokio::test]
async fn generation_follows_spec_changes_only() {
    let (_home, store) = store();
    let mut obj = store
        .create(&work(), &new_work("default", "a", json!({})))
        .await
        .expect("create");

    // (step, change, generation after)
    type Step = fn(&mut Object);
    let steps: &[(&str, Step, bool, i64)] = &[
        (
            "labels",
            |o| o.metadata.labels = Some(BTreeMap::from([("a".into(), "b".into())])),
            false,
            1,
        ),
        (
            "annotations",
            |o| o.metadata.annotations = Some(BTreeMap::from([("n".into(), "v".into())])),
            false,
            1,
        ),
        (
            "finalizers",
            |o| o.metadata.finalizers = Some(vec!["kratix.io/x".into()]),
            false,
            1,
        ),
        (
            "status",
            |o| o.data["status"] = json!({"phase": "Running"}),
            true,
            1,
        ),
        (
            "spec",
            |o| o.data["spec"] = json!({"replicas": 2}),
            false,
            2,
        ),
        (
            "spec again",
            |o| o.data["spec"]["extra"] = json!(true),
            false,
            3,
        ),
        (
            "status again",
            |o| o.data["status"] = json!({"phase": "Done"}),
            true,
            3,
        ),
    ];
    for (step, change, status, generation) in steps {
        let before: i64 = obj
            .metadata
            .resource_version
            .as_deref()
            .and_then(|rv| rv.parse().ok())
            .expect("resourceVersion");
        change(&mut obj);
        obj = if *status {
            store.update_status(&work(), &obj).await
        } else {
            store.update(&work(), &obj).await
        }
        .expect(step);
        assert_eq!(obj.metadata.generation, Some(*generation), "{step}");
        let after: i64 = obj
            .metadata
            .resource_version
            .as_deref()
            .and_then(|rv| rv.parse().ok())
            .expect("resourceVersion");
        assert!(
            after > before,
            "{step}: resourceVersion {before} -> {after}"
        );
        assert_eq!(
            get_work(&store, "a").await,
            obj,
            "{step}: stored as returned"
        );
    }
}

#[tokio::test]
async fn status_and_spec_are_written_separately() {
    let (_home, store) = store();
    let created = store
        .create(&work(), &new_work("default", "a", json!({})))
        .await
        .expect("create");
    let mut with_status = created.clone();
    with_status.data["status"] = json!({"phase": "Running"});
    let with_status = store
        .update_status(&work(), &with_status)
        .await
        .expect("status");

    // update carries a different status: the stored one is kept.
    let mut edit = with_status.clone();
    edit.data["spec"] = json!({"replicas": 5});
    edit.data["status"] = json!({"phase": "Forged"});
    let updated = store.update(&work(), &edit).await.expect("update");
    assert_eq!(updated.data["status"], json!({"phase": "Running"}));
    assert_eq!(updated.data["spec"], json!({"replicas": 5}));

    // update_status carries a different spec: the stored one is kept.
    let mut status_edit = updated.clone();
    status_edit.data["spec"] = json!({"replicas": 99});
    status_edit.metadata.labels = Some(BTreeMap::from([("sneaky".into(), "yes".into())]));
    status_edit.data["status"] = json!({"phase": "Done"});
    let done = store
        .update_status(&work(), &status_edit)
        .await
        .expect("status");
    assert_eq!(done.data["spec"], json!({"replicas": 5}));
    assert_eq!(done.metadata.labels, None);
    assert_eq!(done.data["status"], json!({"phase": "Done"}));
    assert_eq!(get_work(&store, "a").await, done);
}

#[tokio::test]
async fn stale_writes_conflict() {
    let (_home, store) = store();
    let created = store
        .create(&work(), &new_work("default", "a", json!({})))
        .await
        .expect("create");
    let mut fresh = created.clone();
    fresh.data["spec"] = json!({"replicas": 2});
    store
        .update(&work(), &fresh)
        .await
        .expect("first update wins");

    let mut stale = created.clone();
    stale.data["spec"] = json!({"replicas": 3});
    let got = store.update(&work(), &stale).await;
    assert!(matches!(got, Err(Error::Conflict { .. })), "{got:?}");
    stale.data["status"] = json!({"phase": "x"});
    let got = store.update_status(&work(), &stale).await;
    assert!(matches!(got, Err(Error::Conflict { .. })), "{got:?}");

    // Without a resourceVersion the write is unconditional.
    stale.metadata.resource_version = None;
    let written = store.update(&work(), &stale).await.expect("unconditional");
    assert_eq!(written.data["spec"], json!({"replicas": 3}));

    let absent = new_work("default", "missing", json!({}));
    let got = store.update(&work(), &absent).await;
    assert!(matches!(got, Err(Error::NotFound { .. })), "{got:?}");
    let got = store.update_status(&work(), &absent).await;
    assert!(matches!(got, Err(Error::NotFound { .. })), "{got:?}");
}

#[tokio::test]
async fn unchanged_writes_take_no_resource_version() {
    let (_home, store) = store();
    let created = store
        .create(&work(), &new_work("default", "a", json!({})))
        .await
        .expect("create");
    let before = store.current_resource_version().await.expect("rv");
    let same = store.update(&work(), &created).await.expect("update");
    let same_status = store.update_status(&work(), &same).await.expect("status");
    assert_eq!(same_status, created);
    assert_eq!(store.current_resource_version().await.expect("rv"), before);
}
