//! The store end to end, on a real database in a temporary home.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::StreamExt;
use serde_json::{json, Value};

use super::*;
use crate::api::kinds::builtin_kinds;

/// Generous bound for anything that polls; never a timing assertion.
const PATIENCE: Duration = Duration::from_secs(30);

fn kind(name: &str) -> KindInfo {
    builtin_kinds()
        .into_iter()
        .find(|k| k.kind == name)
        .expect("a built-in kind")
}

fn work() -> KindInfo {
    kind("Work")
}

fn promise() -> KindInfo {
    kind("Promise")
}

fn object(value: Value) -> Object {
    serde_json::from_value(value).expect("a valid object")
}

fn new_work(namespace: &str, name: &str, labels: Value) -> Object {
    object(json!({
        "apiVersion": "platform.kratix.io/v1alpha1", "kind": "Work",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"replicas": 1}
    }))
}

fn store() -> (tempfile::TempDir, EmbeddedStore) {
    let home = tempfile::tempdir().expect("tempdir");
    let store = EmbeddedStore::open(&home.path().join("home")).expect("open store");
    (home, store)
}

fn names(objects: &[Object]) -> Vec<String> {
    objects
        .iter()
        .map(|o| {
            format!(
                "{}/{}",
                o.metadata.namespace.as_deref().unwrap_or("-"),
                o.metadata.name.as_deref().unwrap_or_default()
            )
        })
        .collect()
}

async fn get_work(store: &EmbeddedStore, name: &str) -> Object {
    store
        .get(&work(), Some("default"), name)
        .await
        .expect("get")
        .expect("exists")
}

/// Reads `stream` until `want` changes arrived.
async fn take_changes(stream: &mut BoxStream<'static, Result<Change>>, want: usize) -> Vec<Change> {
    let mut changes = Vec::new();
    while changes.len() < want {
        let next = tokio::time::timeout(PATIENCE, stream.next())
            .await
            .expect("a change within the bound")
            .expect("the stream goes on");
        changes.push(next.expect("a change, not an error"));
    }
    changes
}

fn summary(changes: &[Change]) -> Vec<(ChangeType, String)> {
    changes
        .iter()
        .map(|c| (c.change_type, c.key.name.clone()))
        .collect()
}

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

#[tokio::test]
async fn finalizers_hold_deletion_until_removed() {
    let (_home, store) = store();
    let since = store.current_resource_version().await.expect("rv");
    let mut stream = store.watch(&[work()], &since);

    let mut obj = new_work("default", "a", json!({}));
    obj.metadata.finalizers = Some(vec!["kratix.io/one".into(), "kratix.io/two".into()]);
    store.create(&work(), &obj).await.expect("create");

    let marked = store
        .delete(&work(), Some("default"), "a")
        .await
        .expect("delete")
        .expect("held by finalizers");
    let deleted_at = marked
        .metadata
        .deletion_timestamp
        .clone()
        .expect("deletionTimestamp");
    let again = store
        .delete(&work(), Some("default"), "a")
        .await
        .expect("delete again")
        .expect("still held");
    assert_eq!(
        again.metadata.deletion_timestamp,
        Some(deleted_at),
        "set once"
    );
    assert_eq!(
        again.metadata.resource_version,
        marked.metadata.resource_version
    );

    let mut one_left = marked.clone();
    one_left.metadata.finalizers = Some(vec!["kratix.io/two".into()]);
    let one_left = store.update(&work(), &one_left).await.expect("remove one");
    assert!(store
        .get(&work(), Some("default"), "a")
        .await
        .expect("get")
        .is_some());

    let mut added = one_left.clone();
    added.metadata.finalizers = Some(vec!["kratix.io/two".into(), "kratix.io/new".into()]);
    let got = store.update(&work(), &added).await;
    assert!(matches!(got, Err(Error::Invalid { .. })), "{got:?}");

    let mut none_left = one_left.clone();
    none_left.metadata.finalizers = None;
    store
        .update(&work(), &none_left)
        .await
        .expect("remove last");
    assert!(store
        .get(&work(), Some("default"), "a")
        .await
        .expect("get")
        .is_none());

    let changes = take_changes(&mut stream, 4).await;
    assert_eq!(
        summary(&changes),
        [
            (ChangeType::Added, "a".to_string()),
            (ChangeType::Modified, "a".to_string()),
            (ChangeType::Modified, "a".to_string()),
            (ChangeType::Deleted, "a".to_string()),
        ]
    );

    let got = store.delete(&work(), Some("default"), "a").await;
    assert!(matches!(got, Err(Error::NotFound { .. })), "{got:?}");
}

#[tokio::test]
async fn delete_without_finalizers_removes() {
    let (_home, store) = store();
    store
        .create(&promise(), &object(json!({"metadata": {"name": "p"}})))
        .await
        .expect("create");
    let got = store.delete(&promise(), None, "p").await.expect("delete");
    assert!(got.is_none());
    assert!(store
        .get(&promise(), None, "p")
        .await
        .expect("get")
        .is_none());
    // The name is free again, for a new object.
    let again = store
        .create(&promise(), &object(json!({"metadata": {"name": "p"}})))
        .await
        .expect("re-create");
    assert_eq!(again.metadata.generation, Some(1));
}

#[tokio::test]
async fn watch_yields_changes_in_order_from_since() {
    let (_home, store) = store();
    let a = store
        .create(&work(), &new_work("default", "a", json!({})))
        .await
        .expect("create");
    let after_a = a.metadata.resource_version.clone().expect("rv");
    store
        .create(&promise(), &object(json!({"metadata": {"name": "p"}})))
        .await
        .expect("create");
    let mut b = store
        .create(&work(), &new_work("default", "b", json!({})))
        .await
        .expect("create");
    b.data["spec"] = json!({"replicas": 4});
    store.update(&work(), &b).await.expect("update");
    store
        .delete(&work(), Some("default"), "a")
        .await
        .expect("delete");

    let mut all = store.watch(&[], "0");
    let changes = take_changes(&mut all, 5).await;
    assert_eq!(
        summary(&changes),
        [
            (ChangeType::Added, "a".to_string()),
            (ChangeType::Added, "p".to_string()),
            (ChangeType::Added, "b".to_string()),
            (ChangeType::Modified, "b".to_string()),
            (ChangeType::Deleted, "a".to_string()),
        ]
    );
    let versions: Vec<i64> = changes
        .iter()
        .map(|c| c.resource_version.parse().expect("numeric"))
        .collect();
    assert!(versions.windows(2).all(|w| w[0] < w[1]), "{versions:?}");
    assert_eq!(changes[0].resource_version, after_a);
    assert_eq!(changes[1].key.namespace, None);

    let mut works_after_a = store.watch(&[work()], &after_a);
    let changes = take_changes(&mut works_after_a, 3).await;
    assert_eq!(
        summary(&changes),
        [
            (ChangeType::Added, "b".to_string()),
            (ChangeType::Modified, "b".to_string()),
            (ChangeType::Deleted, "a".to_string()),
        ]
    );

    // Later writes arrive on the open stream.
    store
        .create(&work(), &new_work("default", "c", json!({})))
        .await
        .expect("create");
    let changes = take_changes(&mut works_after_a, 1).await;
    assert_eq!(summary(&changes), [(ChangeType::Added, "c".to_string())]);
}

#[tokio::test]
async fn two_handles_see_each_others_writes() {
    let home = tempfile::tempdir().expect("tempdir");
    let first = EmbeddedStore::open(home.path()).expect("open");
    let second = EmbeddedStore::open(home.path()).expect("open again");
    let since = second.current_resource_version().await.expect("rv");
    let mut stream = second.watch(&[work()], &since);

    first
        .create(&work(), &new_work("default", "from-first", json!({})))
        .await
        .expect("create");
    let changes = take_changes(&mut stream, 1).await;
    assert_eq!(
        summary(&changes),
        [(ChangeType::Added, "from-first".to_string())]
    );
    assert!(second
        .get(&work(), Some("default"), "from-first")
        .await
        .expect("get")
        .is_some());
}

#[tokio::test]
async fn pruned_positions_expire() {
    let home = tempfile::tempdir().expect("tempdir");
    let options = Options {
        retain_changes: 5,
        ..Options::default()
    };
    let store = EmbeddedStore::open_with(home.path(), options).expect("open");
    for i in 0..20 {
        store
            .create(&work(), &new_work("default", &format!("w{i}"), json!({})))
            .await
            .expect("create");
    }
    let mut old = store.watch(&[], "1");
    let got = tokio::time::timeout(PATIENCE, old.next())
        .await
        .expect("an answer within the bound")
        .expect("an item");
    assert!(matches!(got, Err(Error::Expired { .. })), "{got:?}");
    assert!(
        old.next().await.is_none(),
        "the stream ends after the error"
    );

    let current = store.current_resource_version().await.expect("rv");
    assert_eq!(current, "20");
    let mut recent = store.watch(&[], "18");
    let changes = take_changes(&mut recent, 2).await;
    assert_eq!(
        summary(&changes),
        [
            (ChangeType::Added, "w18".to_string()),
            (ChangeType::Added, "w19".to_string())
        ]
    );

    let got = store.watch(&[], "not-a-version").next().await;
    assert!(matches!(got, Some(Err(Error::Backend { .. }))), "{got:?}");
}

#[tokio::test]
async fn sequences_increase_across_handles() {
    let home = tempfile::tempdir().expect("tempdir");
    let first = EmbeddedStore::open(home.path()).expect("open");
    let second = EmbeddedStore::open(home.path()).expect("open again");
    assert_eq!(first.next_sequence("runs").await.expect("seq"), 1);
    assert_eq!(second.next_sequence("runs").await.expect("seq"), 2);
    assert_eq!(second.next_sequence("other").await.expect("seq"), 1);
    assert_eq!(first.next_sequence("runs").await.expect("seq"), 3);
    drop((first, second));
    let reopened = EmbeddedStore::open(home.path()).expect("reopen");
    assert_eq!(reopened.next_sequence("runs").await.expect("seq"), 4);
}

/// Read-modify-write with retry on conflict, the way controllers write.
async fn increment(store: &EmbeddedStore) -> usize {
    let mut conflicts = 0;
    loop {
        let mut obj = get_work(store, "counter").await;
        let count = obj.data["spec"]["count"].as_i64().unwrap_or(0);
        obj.data["spec"]["count"] = json!(count + 1);
        match store.update(&work(), &obj).await {
            Ok(_) => return conflicts,
            Err(Error::Conflict { .. }) => conflicts += 1,
            Err(err) => panic!("update failed: {err}"),
        }
    }
}

#[test]
fn concurrent_writers_lose_no_update() {
    const WRITERS: usize = 4;
    const INCREMENTS: usize = 50;
    let home = tempfile::tempdir().expect("tempdir");
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let store = EmbeddedStore::open(home.path()).expect("open");
        let mut counter = new_work("default", "counter", json!({}));
        counter.data["spec"] = json!({"count": 0});
        store.create(&work(), &counter).await.expect("create");
    });

    // Each writer has its own handle (its own connection) and its own runtime on its own thread,
    // as separate processes would.
    let writers: Vec<_> = (0..WRITERS)
        .map(|_| {
            let home = home.path().to_path_buf();
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("runtime");
                runtime.block_on(async {
                    let store = EmbeddedStore::open(&home).expect("open");
                    let mut conflicts = 0;
                    for _ in 0..INCREMENTS {
                        conflicts += increment(&store).await;
                    }
                    conflicts
                })
            })
        })
        .collect();
    let conflicts: usize = writers
        .into_iter()
        .map(|w| w.join().expect("writer thread"))
        .sum();

    runtime.block_on(async {
        let store = EmbeddedStore::open(home.path()).expect("open");
        let counter = get_work(&store, "counter").await;
        let want = i64::try_from(WRITERS * INCREMENTS).expect("small");
        assert_eq!(
            counter.data["spec"]["count"],
            json!(want),
            "after {conflicts} conflicts"
        );
        assert_eq!(counter.metadata.generation, Some(want + 1));
    });
}

#[tokio::test]
async fn a_copy_holds_every_object_and_changes_apart_from_the_original() {
    let (dir, original) = store();
    let first = original
        .create(&work(), &new_work("default", "one", json!({"x": "1"})))
        .await
        .expect("create");
    let copy_home = dir.path().join("copy");
    std::fs::create_dir_all(&copy_home).expect("copy home");
    original.copy_into(&copy_home).await.expect("copy");
    let copy = EmbeddedStore::open(&copy_home).expect("open the copy");

    let everything = Selector::everything();
    assert_eq!(
        get_work(&copy, "one").await,
        first,
        "the same object, identity included"
    );
    copy.create(&work(), &new_work("default", "two", json!({})))
        .await
        .expect("create in the copy");
    assert_eq!(
        names(
            &original
                .list(&work(), None, &everything)
                .await
                .expect("list")
        ),
        ["default/one"],
        "the original does not see the copy's writes"
    );
    assert_eq!(
        names(&copy.list(&work(), None, &everything).await.expect("list")),
        ["default/one", "default/two"]
    );
    let selected = Selector::parse("x=1").expect("selector");
    assert_eq!(
        names(&copy.list(&work(), None, &selected).await.expect("list")),
        ["default/one"],
        "labels are indexed in the copy too"
    );
    assert!(
        original.copy_into(&copy_home).await.is_err(),
        "an existing database is never overwritten"
    );
}
