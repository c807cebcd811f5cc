//! Objects over time: finalizers and deletion, the change feed and its pruning, several handles
//! and writers on one database, copies of a home.

use super::*;

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
