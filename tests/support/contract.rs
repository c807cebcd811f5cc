//! The `ControlPlane` contract as one table of cases, run on every backend: the embedded store
//! (tests/embedded_store.rs) and the Kubernetes one (tests/kubernetes.rs). Each case gets its own
//! namespace, which exists on the backend.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::StreamExt;
use kratix::api::{Builtin, KindInfo, Object};
use kratix::store::{Change, ChangeType, ControlPlane, Error, Selector};
use serde_json::json;

/// Generous bound for a change to arrive; never a timing assertion.
const PATIENCE: Duration = Duration::from_secs(30);

pub(crate) type Case = for<'a> fn(&'a dyn ControlPlane, &'a str) -> BoxFuture<'a, ()>;

/// Every case, by name.
pub(crate) const CASES: &[(&str, Case)] = &[
    ("create assigns identity", |cp, ns| {
        Box::pin(create_assigns_identity(cp, ns))
    }),
    ("list filters and sorts", |cp, ns| {
        Box::pin(list_filters_and_sorts(cp, ns))
    }),
    ("stale writes conflict", |cp, ns| {
        Box::pin(stale_writes_conflict(cp, ns))
    }),
    ("status is written on its own", |cp, ns| {
        Box::pin(status_subresource(cp, ns))
    }),
    ("create with status keeps it", |cp, ns| {
        Box::pin(create_with_status_keeps_it(cp, ns))
    }),
    ("generation follows spec only", |cp, ns| {
        Box::pin(generation_follows_spec(cp, ns))
    }),
    ("finalizers hold deletion", |cp, ns| {
        Box::pin(finalizers_hold_deletion(cp, ns))
    }),
    ("watch yields every change from since", |cp, ns| {
        Box::pin(watch_from_since(cp, ns))
    }),
    ("sequences only grow", |cp, _| {
        Box::pin(sequences_only_grow(cp))
    }),
];

/// Runs every case, each in the namespace `make_namespace` returns for its index.
pub(crate) async fn run_all(cp: &dyn ControlPlane, make_namespace: impl Fn(usize) -> String) {
    for (i, (name, case)) in CASES.iter().enumerate() {
        let ns = make_namespace(i);
        eprintln!("contract: {name}");
        case(cp, &ns).await;
    }
}

fn work() -> KindInfo {
    Builtin::Work.info()
}

fn new_work(ns: &str, name: &str, labels: &[(&str, &str)]) -> Object {
    let labels: BTreeMap<&str, &str> = labels.iter().copied().collect();
    serde_json::from_value(json!({
        "apiVersion": "platform.kratix.io/v1alpha1", "kind": "Work",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {"promiseName": "p", "resourceName": "r1"}
    }))
    .expect("a valid object")
}

async fn create(cp: &dyn ControlPlane, obj: &Object) -> Object {
    cp.create(&work(), obj).await.expect("create")
}

async fn get(cp: &dyn ControlPlane, ns: &str, name: &str) -> Option<Object> {
    cp.get(&work(), Some(ns), name).await.expect("get")
}

fn rv(obj: &Object) -> String {
    obj.metadata
        .resource_version
        .clone()
        .expect("resourceVersion")
}

async fn create_assigns_identity(cp: &dyn ControlPlane, ns: &str) {
    let created = create(cp, &new_work(ns, "a", &[])).await;
    assert!(created.metadata.uid.is_some(), "uid");
    assert!(
        created.metadata.creation_timestamp.is_some(),
        "creationTimestamp"
    );
    assert_eq!(created.metadata.generation, Some(1));
    assert!(!rv(&created).is_empty());
    assert_eq!(get(cp, ns, "a").await.as_ref(), Some(&created));
    assert_eq!(get(cp, ns, "missing").await, None);
    let again = cp.create(&work(), &new_work(ns, "a", &[])).await;
    assert!(
        matches!(again, Err(Error::AlreadyExists { .. })),
        "{again:?}"
    );
    let unscoped = new_work(ns, "b", &[]);
    let mut unscoped = unscoped;
    unscoped.metadata.namespace = None;
    let got = cp.create(&work(), &unscoped).await;
    assert!(matches!(got, Err(Error::Invalid { .. })), "{got:?}");
}

async fn create_with_status_keeps_it(cp: &dyn ControlPlane, ns: &str) {
    let mut with_status = new_work(ns, "s", &[]);
    if let Some(map) = with_status.data.as_object_mut() {
        map.insert("status".into(), json!({"observedGeneration": 1}));
    }
    // A plain create drops the status, as the API server does.
    let plain = create(cp, &with_status).await;
    assert_eq!(plain.data.get("status"), None, "{plain:?}");
    with_status.metadata.name = Some("t".into());
    let created = cp
        .create_with_status(&work(), &with_status)
        .await
        .expect("create with status");
    assert_eq!(created.data["status"], json!({"observedGeneration": 1}));
    assert_eq!(created.metadata.generation, Some(1));
    assert_eq!(get(cp, ns, "t").await.as_ref(), Some(&created));
    let again = cp.create_with_status(&work(), &with_status).await;
    assert!(
        matches!(again, Err(Error::AlreadyExists { .. })),
        "{again:?}"
    );
}

async fn list_filters_and_sorts(cp: &dyn ControlPlane, ns: &str) {
    for (name, tier) in [("c", "web"), ("a", "web"), ("b", "db")] {
        create(cp, &new_work(ns, name, &[("tier", tier)])).await;
    }
    let names = |objs: Vec<Object>| -> Vec<String> {
        objs.into_iter().filter_map(|o| o.metadata.name).collect()
    };
    let cases = [
        ("", vec!["a", "b", "c"]),
        ("tier=web", vec!["a", "c"]),
        ("tier!=web", vec!["b"]),
        ("tier in (db)", vec!["b"]),
        ("nope", vec![]),
    ];
    for (selector, want) in cases {
        let sel = Selector::parse(selector).expect("selector");
        let got = names(cp.list(&work(), Some(ns), &sel).await.expect("list"));
        assert_eq!(got, want, "{selector:?}");
    }
}

async fn stale_writes_conflict(cp: &dyn ControlPlane, ns: &str) {
    let created = create(cp, &new_work(ns, "a", &[])).await;
    let mut fresh = created.clone();
    fresh.data["spec"]["resourceName"] = json!("r2");
    cp.update(&work(), &fresh).await.expect("first update wins");

    let mut stale = created.clone();
    stale.data["spec"]["resourceName"] = json!("r3");
    let got = cp.update(&work(), &stale).await;
    assert!(matches!(got, Err(Error::Conflict { .. })), "{got:?}");
    stale.data["status"] = json!({"workPlacements": 1});
    let got = cp.update_status(&work(), &stale).await;
    assert!(matches!(got, Err(Error::Conflict { .. })), "{got:?}");

    // Without a resourceVersion the write is unconditional.
    stale.metadata.resource_version = None;
    let written = cp.update(&work(), &stale).await.expect("unconditional");
    assert_eq!(written.data["spec"]["resourceName"], json!("r3"));

    let absent = new_work(ns, "missing", &[]);
    let got = cp.update(&work(), &absent).await;
    assert!(matches!(got, Err(Error::NotFound { .. })), "{got:?}");
}

async fn status_subresource(cp: &dyn ControlPlane, ns: &str) {
    let created = create(cp, &new_work(ns, "a", &[])).await;
    let mut with_status = created.clone();
    with_status.data["status"] = json!({"workPlacements": 1});
    let with_status = cp
        .update_status(&work(), &with_status)
        .await
        .expect("status");
    assert_eq!(
        with_status.metadata.generation,
        Some(1),
        "status keeps generation"
    );

    // update carries a different status: the stored one is kept.
    let mut edit = with_status.clone();
    edit.data["spec"]["resourceName"] = json!("r5");
    edit.data["status"] = json!({"workPlacements": 7});
    let updated = cp.update(&work(), &edit).await.expect("update");
    assert_eq!(updated.data["status"], json!({"workPlacements": 1}));
    assert_eq!(updated.data["spec"]["resourceName"], json!("r5"));

    // update_status carries a different spec and labels: the stored ones are kept.
    let mut status_edit = updated.clone();
    status_edit.data["spec"]["resourceName"] = json!("r99");
    status_edit.metadata.labels = Some(BTreeMap::from([("sneaky".into(), "yes".into())]));
    status_edit.data["status"] = json!({"workPlacements": 2});
    let done = cp
        .update_status(&work(), &status_edit)
        .await
        .expect("status");
    assert_eq!(done.data["spec"]["resourceName"], json!("r5"));
    assert!(done.metadata.labels.unwrap_or_default().is_empty());
    assert_eq!(done.data["status"], json!({"workPlacements": 2}));
}

/// A change to an object before it is written.
type Edit = fn(&mut Object);

async fn generation_follows_spec(cp: &dyn ControlPlane, ns: &str) {
    let mut obj = create(cp, &new_work(ns, "a", &[])).await;
    // (what changes, generation after)
    let steps: [(&str, Edit, i64); 4] = [
        (
            "labels",
            |o| o.metadata.labels = Some(BTreeMap::from([("x".into(), "1".into())])),
            1,
        ),
        (
            "annotations",
            |o| o.metadata.annotations = Some(BTreeMap::from([("a".into(), "1".into())])),
            1,
        ),
        ("spec", |o| o.data["spec"]["resourceName"] = json!("r2"), 2),
        (
            "spec again",
            |o| o.data["spec"]["promiseName"] = json!("q"),
            3,
        ),
    ];
    for (what, change, want) in steps {
        change(&mut obj);
        obj = cp.update(&work(), &obj).await.expect(what);
        assert_eq!(
            obj.metadata.generation,
            Some(want),
            "after a change of {what}"
        );
    }
    let before = rv(&obj);
    let same = cp.update(&work(), &obj).await.expect("unchanged update");
    assert_eq!(
        rv(&same),
        before,
        "an unchanged write takes no resourceVersion"
    );
}

async fn finalizers_hold_deletion(cp: &dyn ControlPlane, ns: &str) {
    let mut obj = new_work(ns, "a", &[]);
    obj.metadata.finalizers = Some(vec!["kratix.io/one".into(), "kratix.io/two".into()]);
    create(cp, &obj).await;
    let marked = cp
        .delete(&work(), Some(ns), "a")
        .await
        .expect("delete")
        .expect("held by finalizers");
    assert!(marked.metadata.deletion_timestamp.is_some());
    let again = cp
        .delete(&work(), Some(ns), "a")
        .await
        .expect("delete again")
        .expect("still held");
    assert_eq!(
        again.metadata.deletion_timestamp,
        marked.metadata.deletion_timestamp
    );

    let mut one_left = again.clone();
    one_left.metadata.finalizers = Some(vec!["kratix.io/two".into()]);
    let one_left = cp.update(&work(), &one_left).await.expect("remove one");
    assert!(get(cp, ns, "a").await.is_some());

    let mut added = one_left.clone();
    added.metadata.finalizers = Some(vec!["kratix.io/two".into(), "kratix.io/new".into()]);
    let got = cp.update(&work(), &added).await;
    assert!(matches!(got, Err(Error::Invalid { .. })), "{got:?}");

    let mut none_left = one_left.clone();
    none_left.metadata.finalizers = None;
    cp.update(&work(), &none_left).await.expect("remove last");
    assert!(get(cp, ns, "a").await.is_none());
    let got = cp.delete(&work(), Some(ns), "a").await;
    assert!(matches!(got, Err(Error::NotFound { .. })), "{got:?}");

    create(cp, &new_work(ns, "b", &[])).await;
    let gone = cp.delete(&work(), Some(ns), "b").await.expect("delete");
    assert!(gone.is_none());
    assert!(get(cp, ns, "b").await.is_none());
}

/// The changes of namespace `ns` on `stream`, until `want` arrived; `Err` when the feed
/// expired (which the contract allows at any time: the caller lists again and watches anew).
async fn take_changes(
    stream: &mut BoxStream<'static, kratix::store::Result<Change>>,
    ns: &str,
    want: usize,
) -> Result<Vec<(ChangeType, String)>, Error> {
    let mut changes = Vec::new();
    while changes.len() < want {
        let next = tokio::time::timeout(PATIENCE, stream.next())
            .await
            .expect("a change within the bound")
            .expect("the stream goes on");
        let next = match next {
            Ok(change) => change,
            Err(expired @ Error::Expired { .. }) => return Err(expired),
            Err(other) => panic!("a change, not an error: {other:?}"),
        };
        if next.key.namespace.as_deref() == Some(ns) {
            changes.push((next.change_type, next.key.name));
        }
    }
    Ok(changes)
}

async fn watch_from_since(cp: &dyn ControlPlane, ns: &str) {
    // A backend may expire a position at any time (an API server rebuilding its watch cache);
    // the contract then asks for a fresh start, so the case starts again with fresh objects.
    for attempt in 0..3 {
        match watch_attempt(cp, ns, &format!("-{attempt}")).await {
            Ok(()) => return,
            Err(err) => eprintln!("contract: the feed expired ({err}); starting again"),
        }
    }
    panic!("the change feed expired three times in a row");
}

async fn watch_attempt(cp: &dyn ControlPlane, ns: &str, suffix: &str) -> Result<(), Error> {
    let (a, b, c) = (
        format!("a{suffix}"),
        format!("b{suffix}"),
        format!("c{suffix}"),
    );
    let since = cp.current_resource_version().await.expect("rv");
    let created_a = create(cp, &new_work(ns, &a, &[])).await;
    let after_a = rv(&created_a);
    let mut created_b = create(cp, &new_work(ns, &b, &[])).await;
    created_b.data["spec"]["resourceName"] = json!("r4");
    cp.update(&work(), &created_b).await.expect("update");
    cp.delete(&work(), Some(ns), &a).await.expect("delete");
    let s = |t, n: &str| (t, n.to_string());
    let all = [
        s(ChangeType::Added, &a),
        s(ChangeType::Added, &b),
        s(ChangeType::Modified, &b),
        s(ChangeType::Deleted, &a),
    ];

    let mut from_start = cp.watch(&[work()], &since);
    assert_eq!(take_changes(&mut from_start, ns, 4).await?, all);

    // Resuming from a change's position yields only what came after it.
    let mut resumed = cp.watch(&[work()], &after_a);
    assert_eq!(take_changes(&mut resumed, ns, 3).await?, all[1..]);

    // Changes made while watching arrive too, on a feed of every kind.
    let mut everything = cp.watch(&[], &cp.current_resource_version().await.expect("rv"));
    create(cp, &new_work(ns, &c, &[])).await;
    assert_eq!(
        take_changes(&mut everything, ns, 1).await?,
        [s(ChangeType::Added, &c)]
    );
    cp.delete(&work(), Some(ns), &b).await.expect("delete");
    cp.delete(&work(), Some(ns), &c).await.expect("delete");
    Ok(())
}

async fn sequences_only_grow(cp: &dyn ControlPlane) {
    let name = format!("contract-{}", uuid::Uuid::new_v4().simple());
    let mut last = 0;
    for _ in 0..5 {
        let next = cp.next_sequence(&name).await.expect("sequence");
        assert!(next > last, "{next} after {last}");
        last = next;
    }
    assert_eq!(last, 5, "a new counter starts at 1 and grows by one");
}
