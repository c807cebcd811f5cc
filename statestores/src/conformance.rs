//! The behaviour every backend must show, as `pub async fn` cases over `&dyn StateStore`, and
//! [`conformance_suite!`](crate::conformance_suite) to stamp one `#[tokio::test]` per case for a
//! backend, so that a failure names both the case and the backend.
//!
//! Every case expects a fresh, empty store.

use crate::error_chain::ErrorChain;
use crate::{Change, Key, StateStore, WriteInfo, WriteOutcome};
use bytes::Bytes;

/// The number of files of [`many_files_land_in_one_write`]: enough that a backend which costs
/// one round trip or one commit per file shows it.
pub const MANY_FILES: usize = 3000;

/// A key from a literal; panics on an invalid one because cases only use valid literals.
pub fn key(path: &str) -> Key {
    Key::parse(path).expect("conformance cases use valid keys")
}

pub fn put(path: &str, content: &str) -> Change {
    Change::Put(key(path), Bytes::from(content.to_owned()))
}

pub fn delete(path: &str) -> Change {
    Change::Delete(key(path))
}

pub fn info(message: &str) -> WriteInfo {
    WriteInfo {
        message: format!("{message}\n\nConformance-Case: yes\n"),
        author_name: "conformance".to_string(),
        author_email: "conformance@example.invalid".to_string(),
    }
}

async fn write(store: &dyn StateStore, changes: &[Change], what: &str) -> WriteOutcome {
    match store.write(changes, &info(what)).await {
        Ok(outcome) => outcome,
        Err(err) => panic!(
            "{}: write {what:?} failed: {}",
            store.kind(),
            ErrorChain(&err)
        ),
    }
}

async fn read(store: &dyn StateStore, path: &str) -> Option<String> {
    match store.read(&key(path)).await {
        Ok(content) => content.map(|b| String::from_utf8_lossy(&b).into_owned()),
        Err(err) => panic!(
            "{}: read {path:?} failed: {}",
            store.kind(),
            ErrorChain(&err)
        ),
    }
}

async fn list(store: &dyn StateStore, prefix: &str) -> Vec<String> {
    match store.list(&key(prefix)).await {
        Ok(keys) => keys.iter().map(|k| k.as_str().to_owned()).collect(),
        Err(err) => panic!(
            "{}: list {prefix:?} failed: {}",
            store.kind(),
            ErrorChain(&err)
        ),
    }
}

fn keys(paths: &[&str]) -> Vec<Key> {
    paths.iter().map(|p| key(p)).collect()
}

async fn snapshot(store: &dyn StateStore, prefix: &str) -> crate::Snapshot {
    match store.snapshot(&key(prefix)).await {
        Ok(snapshot) => snapshot,
        Err(err) => panic!("{}: snapshot failed: {}", store.kind(), ErrorChain(&err)),
    }
}

pub async fn write_then_read_and_list(store: &dyn StateStore) {
    let kind = store.kind();
    let outcome = write(
        store,
        &[put("d/a.yaml", "A\n"), put("d/sub/b.yaml", "B\n")],
        "first write",
    )
    .await;
    assert!(
        outcome.version.is_some(),
        "{kind}: a changing write has a version"
    );
    assert_eq!(
        outcome.written,
        keys(&["d/a.yaml", "d/sub/b.yaml"]),
        "{kind}"
    );
    assert!(outcome.deleted.is_empty(), "{kind}");
    assert_eq!(
        read(store, "d/a.yaml").await.as_deref(),
        Some("A\n"),
        "{kind}"
    );
    assert_eq!(
        read(store, "d/sub/b.yaml").await.as_deref(),
        Some("B\n"),
        "{kind}"
    );
    assert_eq!(
        list(store, "").await,
        ["d/a.yaml", "d/sub/b.yaml"],
        "{kind}"
    );
    assert_eq!(list(store, "d/sub").await, ["d/sub/b.yaml"], "{kind}");
}

pub async fn reading_an_absent_key_is_none(store: &dyn StateStore) {
    let kind = store.kind();
    assert_eq!(
        read(store, "nothing/here.yaml").await,
        None,
        "{kind}: empty store"
    );
    write(store, &[put("d/a.yaml", "A")], "seed").await;
    assert_eq!(read(store, "d/b.yaml").await, None, "{kind}: sibling");
    assert_eq!(
        read(store, "d/a.yaml/x").await,
        None,
        "{kind}: below a file"
    );
    assert!(
        list(store, "nothing").await.is_empty(),
        "{kind}: list of absent prefix"
    );
}

pub async fn put_replaces_content(store: &dyn StateStore) {
    let kind = store.kind();
    let first = write(store, &[put("f.yaml", "one")], "first").await;
    let second = write(store, &[put("f.yaml", "two")], "second").await;
    assert_eq!(second.written, keys(&["f.yaml"]), "{kind}");
    assert!(second.version.is_some(), "{kind}");
    assert_ne!(
        first.version, second.version,
        "{kind}: a new version per change"
    );
    assert_eq!(
        read(store, "f.yaml").await.as_deref(),
        Some("two"),
        "{kind}"
    );
}

pub async fn delete_removes_and_absent_delete_is_noop(store: &dyn StateStore) {
    let kind = store.kind();
    write(store, &[put("x/a", "a"), put("x/b", "b")], "seed").await;
    let outcome = write(store, &[delete("x/a"), delete("x/missing")], "delete").await;
    assert_eq!(
        outcome.deleted,
        keys(&["x/a"]),
        "{kind}: only the present key"
    );
    assert!(outcome.written.is_empty(), "{kind}");
    assert!(outcome.version.is_some(), "{kind}");
    assert_eq!(read(store, "x/a").await, None, "{kind}");
    assert_eq!(list(store, "").await, ["x/b"], "{kind}");

    let again = write(store, &[delete("x/a"), delete("x/missing")], "delete again").await;
    assert_eq!(
        again,
        WriteOutcome::default(),
        "{kind}: deleting absent keys is a no-op"
    );

    let last = write(store, &[delete("x/b")], "delete last").await;
    assert_eq!(last.deleted, keys(&["x/b"]), "{kind}");
    assert!(
        list(store, "").await.is_empty(),
        "{kind}: store is empty again"
    );
}

pub async fn identical_write_is_noop(store: &dyn StateStore) {
    let kind = store.kind();
    let changes = [put("n/a", "A"), put("n/b", "B")];
    let first = write(store, &changes, "first").await;
    assert!(first.version.is_some(), "{kind}");
    let second = write(store, &changes, "same again").await;
    assert_eq!(second, WriteOutcome::default(), "{kind}: nothing written");

    let mixed = write(store, &[put("n/a", "A"), put("n/b", "B2")], "one differs").await;
    assert_eq!(
        mixed.written,
        keys(&["n/b"]),
        "{kind}: only the differing key"
    );
    assert!(mixed.version.is_some(), "{kind}");

    let empty = write(store, &[], "no changes at all").await;
    assert_eq!(empty, WriteOutcome::default(), "{kind}");
}

pub async fn list_respects_segment_boundaries_and_is_sorted(store: &dyn StateStore) {
    let kind = store.kind();
    write(
        store,
        &[
            put("dest/z.yaml", "z"),
            put("dest/a/2.yaml", "2"),
            put("dest/a/1.yaml", "1"),
            put("dest-other/x.yaml", "x"),
            put("des/y.yaml", "y"),
            put("dest.yaml", "d"),
        ],
        "seed",
    )
    .await;
    assert_eq!(
        list(store, "dest").await,
        ["dest/a/1.yaml", "dest/a/2.yaml", "dest/z.yaml"],
        "{kind}"
    );
    assert_eq!(list(store, "des").await, ["des/y.yaml"], "{kind}");
    assert_eq!(
        list(store, "").await,
        [
            "des/y.yaml",
            "dest-other/x.yaml",
            "dest.yaml",
            "dest/a/1.yaml",
            "dest/a/2.yaml",
            "dest/z.yaml",
        ],
        "{kind}: sorted by key"
    );
    assert_eq!(
        list(store, "dest/a/1.yaml").await,
        ["dest/a/1.yaml"],
        "{kind}"
    );
}

pub async fn snapshot_reads_a_prefix_at_one_version(store: &dyn StateStore) {
    let kind = store.kind();
    write(
        store,
        &[
            put("dest/b.yaml", "b"),
            put("dest/a/1.yaml", "1"),
            put("dest-other/x.yaml", "x"),
        ],
        "seed",
    )
    .await;
    let first = snapshot(store, "dest").await;
    let files: Vec<(&str, &[u8])> = first
        .files
        .iter()
        .map(|(k, b)| (k.as_str(), b.as_ref()))
        .collect();
    assert_eq!(
        files,
        [("dest/a/1.yaml", &b"1"[..]), ("dest/b.yaml", &b"b"[..])],
        "{kind}: the prefix's files, sorted"
    );
    assert!(first.version.is_some(), "{kind}: a version");
    let again = snapshot(store, "dest").await;
    assert_eq!(again.version, first.version, "{kind}: stable");
    write(store, &[put("dest/b.yaml", "changed")], "change").await;
    let moved = snapshot(store, "dest").await;
    assert_ne!(moved.version, first.version, "{kind}: moved");
}

pub async fn many_files_land_in_one_write(store: &dyn StateStore) {
    let kind = store.kind();
    let changes: Vec<Change> = (0..MANY_FILES)
        .map(|i| {
            put(
                &format!("many/{:02}/{i:05}.yaml", i % 50),
                &format!("n: {i}\n"),
            )
        })
        .collect();
    let outcome = write(store, &changes, "many files").await;
    assert!(outcome.version.is_some(), "{kind}");
    assert_eq!(outcome.written.len(), MANY_FILES, "{kind}");
    assert_eq!(list(store, "many").await.len(), MANY_FILES, "{kind}");
    assert_eq!(
        read(store, "many/07/00107.yaml").await.as_deref(),
        Some("n: 107\n"),
        "{kind}"
    );
    let again = write(store, &changes, "many files again").await;
    assert_eq!(
        again,
        WriteOutcome::default(),
        "{kind}: re-writing is a no-op"
    );
}

pub async fn untouched_keys_survive(store: &dyn StateStore) {
    let kind = store.kind();
    write(
        store,
        &[put("keep/a", "a"), put("keep/b", "b"), put("mine/c", "c")],
        "seed",
    )
    .await;
    write(
        store,
        &[put("mine/c", "c2"), put("mine/d", "d")],
        "update mine",
    )
    .await;
    write(store, &[delete("mine/c")], "delete mine").await;
    assert_eq!(read(store, "keep/a").await.as_deref(), Some("a"), "{kind}");
    assert_eq!(read(store, "keep/b").await.as_deref(), Some("b"), "{kind}");
    assert_eq!(
        list(store, "").await,
        ["keep/a", "keep/b", "mine/d"],
        "{kind}"
    );
}

/// How many writes each handle makes in [`concurrent_writers_lose_nothing`]: few enough that a
/// backend retrying on contention with its default retries always gets through.
const CONCURRENT_WRITES: usize = 4;

async fn write_many(handle: &dyn StateStore, name: &str) {
    for i in 0..CONCURRENT_WRITES {
        write(
            handle,
            &[
                put(&format!("conc/{name}/{i}"), name),
                put("conc/shared", &format!("{name}-{i}")),
            ],
            &format!("{name} write {i}"),
        )
        .await;
    }
}

/// Two handles on one underlying store write at the same time, to disjoint keys and to one
/// shared key: every disjoint write survives, and the shared key holds one of the two contents.
pub async fn concurrent_writers_lose_nothing(first: &dyn StateStore, second: &dyn StateStore) {
    let kind = first.kind();
    write(first, &[put("seed", "s")], "seed").await;
    futures::join!(write_many(first, "one"), write_many(second, "two"));

    for handle in [first, second] {
        let listed = list(handle, "conc").await;
        for store in ["one", "two"] {
            for i in 0..CONCURRENT_WRITES {
                let path = format!("conc/{store}/{i}");
                assert!(
                    listed.contains(&path),
                    "{kind}: {path} lost; have {listed:?}"
                );
                assert_eq!(read(handle, &path).await.as_deref(), Some(store), "{kind}");
            }
        }
        let last = CONCURRENT_WRITES - 1;
        let shared = read(handle, "conc/shared").await;
        assert!(
            shared == Some(format!("one-{last}")) || shared == Some(format!("two-{last}")),
            "{kind}: the shared key holds one writer's last content, got {shared:?}"
        );
        assert_eq!(read(handle, "seed").await.as_deref(), Some("s"), "{kind}");
    }

    // Overlapping deletes: both remove the same key and neither fails. At least one reports
    // it; independent handles on a store that cannot tell (S3 answers a DELETE the same either
    // way) may both report it.
    let shared = [delete("conc/shared")];
    let (a, b) = futures::join!(
        write(first, &shared, "one deletes"),
        write(second, &shared, "two deletes")
    );
    let reported = a.deleted.len() + b.deleted.len();
    assert!(
        (1..=2).contains(&reported),
        "{kind}: the shared key's deletion is reported ({a:?}, {b:?})"
    );
    assert_eq!(read(first, "conc/shared").await, None, "{kind}");
}

pub async fn check_access_leaves_nothing_behind(store: &dyn StateStore) {
    let kind = store.kind();
    if let Err(err) = store.check_access().await {
        panic!(
            "{kind}: check_access on an empty store failed: {}",
            ErrorChain(&err)
        );
    }
    assert!(
        list(store, "").await.is_empty(),
        "{kind}: empty store stays empty"
    );
    write(store, &[put("a", "a")], "seed").await;
    if let Err(err) = store.check_access().await {
        panic!("{kind}: check_access failed: {}", ErrorChain(&err));
    }
    assert_eq!(list(store, "").await, ["a"], "{kind}");
    let again = write(store, &[put("a", "a")], "same").await;
    assert_eq!(
        again,
        WriteOutcome::default(),
        "{kind}: check_access changed nothing"
    );
}

/// Stamps one `#[tokio::test]` per conformance case.
///
/// - `conformance_suite!(make)`: `make` is an expression of a future yielding a fresh, empty
///   store; it is evaluated once per test. The concurrency case then uses one handle twice.
/// - `conformance_suite!(make, reopen)`: `reopen` is a closure `|store: &S| -> impl Future<Output
///   = T>` that opens a second, independent handle (another process, in effect) on the same
///   underlying store, for the concurrency case.
///
/// ```no_run
/// mod conformance {
///     statestores::conformance_suite!(async { statestores::InMemory::new() }, |s: &statestores::InMemory| {
///         let second = s.clone();
///         async move { second }
///     });
/// }
/// ```
#[macro_export]
macro_rules! conformance_suite {
    ($make:expr) => {
        $crate::conformance_suite!(@cases $make);

        #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn concurrent_writers_lose_nothing() {
            let store = $make.await;
            $crate::conformance::concurrent_writers_lose_nothing(&store, &store).await;
        }
    };
    ($make:expr, $reopen:expr) => {
        $crate::conformance_suite!(@cases $make);

        #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn concurrent_writers_lose_nothing() {
            let first = $make.await;
            let second = ($reopen)(&first).await;
            $crate::conformance::concurrent_writers_lose_nothing(&first, &second).await;
        }
    };
    (@cases $make:expr) => {
        $crate::conformance_suite!(@case $make, write_then_read_and_list);
        $crate::conformance_suite!(@case $make, reading_an_absent_key_is_none);
        $crate::conformance_suite!(@case $make, put_replaces_content);
        $crate::conformance_suite!(@case $make, delete_removes_and_absent_delete_is_noop);
        $crate::conformance_suite!(@case $make, identical_write_is_noop);
        $crate::conformance_suite!(@case $make, list_respects_segment_boundaries_and_is_sorted);
        $crate::conformance_suite!(@case $make, snapshot_reads_a_prefix_at_one_version);
        $crate::conformance_suite!(@case $make, many_files_land_in_one_write);
        $crate::conformance_suite!(@case $make, untouched_keys_survive);
        $crate::conformance_suite!(@case $make, check_access_leaves_nothing_behind);
    };
    (@case $make:expr, $case:ident) => {
        #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $case() {
            let store = $make.await;
            $crate::conformance::$case(&store).await;
        }
    };
}
