//! Embedded control plane: one SQLite database, `<home>/state.db`, shared by every process that
//! opens the home.
//!
//! Objects keep Kubernetes semantics (see `rules`); each write runs in one `BEGIN IMMEDIATE`
//! transaction that appends to the change feed and stores the feed position as the object's
//! `resourceVersion`, as etcd's revision works. Watchers poll the feed, so they see the writes of
//! other processes too. Old feed entries are pruned; a watch from before the kept range ends with
//! [`Error::Expired`](crate::store::Error::Expired): take `current_resource_version()`, list
//! again, and watch from that position. A watch from `""` or `"0"` starts at the feed's beginning.
//!
//! As on the API server: `create` drops `status` (kinds have a status subresource, written by
//! `update_status` only); a write that changes nothing is skipped, keeping the `resourceVersion`
//! and emitting no change, so a controller rewriting an identical status does not wake itself;
//! marking an object as being deleted bumps its generation.

mod columns;
mod db;
mod index;
mod lock;
mod rules;
mod schema;
mod watch;

#[cfg(test)]
mod tests;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, TryLockError};
use std::time::Duration;

use futures::stream::BoxStream;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use rusqlite::{Connection, Transaction, TransactionBehavior};

pub use lock::HomeLock;

use self::rules::{Fresh, Outcome};
use crate::api::object::labels;
use crate::api::{KindInfo, Object, ObjectKey};
use crate::store::{Change, ChangeType, ControlPlane, Error, Result, Selector};

/// The database file inside the home folder.
pub(crate) const DATABASE_FILE: &str = "state.db";

/// Tuning of an [`EmbeddedStore`]; the defaults suit every real use.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    /// How many of the newest changes the feed keeps; older watch positions expire.
    pub retain_changes: i64,
    /// How often a watch reads the feed for other processes' writes (this handle's own wake its
    /// watches at once). A read of an idle feed is one indexed query.
    pub poll_interval: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            retain_changes: 100_000,
            poll_interval: Duration::from_millis(50),
        }
    }
}

/// The control plane of one home folder. Cheap to clone; clones share one connection.
#[derive(Clone)]
pub struct EmbeddedStore {
    inner: Arc<Inner>,
}

struct Inner {
    home: PathBuf,
    options: Options,
    /// One connection per handle: SQLite statements are short, and a single writer per process
    /// is what SQLite allows anyway.
    conn: Mutex<Connection>,
    /// Told of every write through this handle, so that its watches look at once.
    written: tokio::sync::watch::Sender<()>,
}

impl fmt::Debug for EmbeddedStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EmbeddedStore")
            .field("home", &self.inner.home)
            .finish_non_exhaustive()
    }
}

impl EmbeddedStore {
    /// Opens the home's control plane, creating the folder and the database if needed.
    pub fn open(home: &Path) -> Result<EmbeddedStore> {
        Self::open_with(home, Options::default())
    }

    pub(crate) fn open_with(home: &Path, options: Options) -> Result<EmbeddedStore> {
        std::fs::create_dir_all(home).map_err(|source| Error::Backend {
            context: format!("create home folder {}", home.display()),
            source: Box::new(source),
        })?;
        let database = home.join(DATABASE_FILE);
        owner_only(&database).map_err(|source| Error::Backend {
            context: format!("restrict {} to its owner", database.display()),
            source: Box::new(source),
        })?;
        let mut conn = schema::open(&database)?;
        schema::migrate(&mut conn)?;
        Ok(EmbeddedStore {
            inner: Arc::new(Inner {
                home: home.to_path_buf(),
                options,
                conn: Mutex::new(conn),
                written: tokio::sync::watch::Sender::new(()),
            }),
        })
    }

    pub fn home(&self) -> &Path {
        &self.inner.home
    }

    /// Writes a consistent copy of the whole control plane as the database of `home` (which
    /// must not have one yet), from one read transaction: writers in other processes carry on.
    pub async fn copy_into(&self, home: &Path) -> Result<()> {
        let target = home.join(DATABASE_FILE);
        self.run(move |conn| {
            let shown = target.display().to_string();
            conn.execute("VACUUM INTO ?1", [shown.as_str()])
                .map(drop)
                .map_err(|source| Error::Backend {
                    context: format!("copy the control plane into {shown}"),
                    source: Box::new(source),
                })
        })
        .await
    }

    /// `update` and `update_status`: read the stored object, let `rule` decide what the write
    /// becomes, and apply it, all in one transaction.
    async fn modify(
        &self,
        kind: &KindInfo,
        obj: &Object,
        what: &'static str,
        rule: fn(&KindInfo, &Object, &Object) -> Result<Outcome>,
    ) -> Result<Object> {
        let key = rules::key_of(kind, obj)?;
        let (kind, obj) = (kind.clone(), obj.clone());
        let retain = self.inner.options.retain_changes;
        self.run_write(move |conn| {
            write(conn, &format!("{what} {key}"), |tx| {
                let stored = db::read_object(tx, &key)?.ok_or_else(|| not_found(&key))?;
                let outcome = rule(&kind, &stored, &obj)?;
                Ok(apply(tx, &key, outcome, retain)?.into_object())
            })
        })
        .await
    }

    /// `create` and `create_with_status`: one transaction, one change.
    async fn insert(&self, kind: &KindInfo, obj: &Object, keep_status: bool) -> Result<Object> {
        let fresh = Fresh {
            uid: uuid::Uuid::new_v4().to_string(),
            now: now(),
            name_suffix: random_name_suffix(),
        };
        let mut obj = rules::prepare_create(kind, obj, &fresh, keep_status)?;
        let key = rules::key_of(kind, &obj)?;
        let retain = self.inner.options.retain_changes;
        self.run_write(move |conn| {
            write(conn, &format!("create {key}"), |tx| {
                if db::read_object(tx, &key)?.is_some() {
                    return Err(Error::AlreadyExists { key: key.clone() });
                }
                let seq = db::record_change(tx, &key, ChangeType::Added, retain)?;
                db::write_object(tx, &key, &mut obj, seq)?;
                Ok(obj)
            })
        })
        .await
    }

    /// [`EmbeddedStore::run`] for work that writes: wakes this handle's watches once it is done.
    async fn run_write<T, F>(&self, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T> + Send + 'static,
    {
        let result = self.run(work).await;
        self.inner.written.send_replace(());
        result
    }

    /// Runs blocking database work off the async threads.
    async fn run<T, F>(&self, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T> + Send + 'static,
    {
        self.inner.clone().run(work).await
    }
}

impl Inner {
    fn with_connection<T>(&self, work: impl FnOnce(&mut Connection) -> Result<T>) -> Result<T> {
        // A panic while holding the lock cannot leave a half-done write: the open transaction
        // is rolled back when it is dropped. The connection stays usable.
        let mut conn = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        work(&mut conn)
    }

    /// Runs `work` at once if the connection is free; `None` (and nothing run) if it is busy.
    fn try_with_connection<T>(
        &self,
        work: impl FnOnce(&mut Connection) -> Result<T>,
    ) -> Option<Result<T>> {
        let mut conn = match self.conn.try_lock() {
            Ok(conn) => conn,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => return None,
        };
        Some(work(&mut conn))
    }

    async fn run<T, F>(self: Arc<Self>, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T> + Send + 'static,
    {
        tokio::task::spawn_blocking(move || self.with_connection(work))
            .await
            .map_err(|source| Error::Backend {
                context: "run a database task".to_string(),
                source: Box::new(source),
            })?
    }
}

#[async_trait::async_trait]
impl ControlPlane for EmbeddedStore {
    async fn get(
        &self,
        kind: &KindInfo,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<Object>> {
        let key = rules::address(kind, namespace, name)?;
        tracing::trace!(op = "get", kind = %kind.kind, "control plane");
        // Reading one row takes microseconds: when no other task holds the connection, that
        // is less than handing the read to a blocking thread and back.
        if let Some(read) = self
            .inner
            .try_with_connection(|conn| db::read_object(conn, &key))
        {
            return read;
        }
        self.run(move |conn| db::read_object(conn, &key)).await
    }

    async fn list(
        &self,
        kind: &KindInfo,
        namespace: Option<&str>,
        selector: &Selector,
    ) -> Result<Vec<Object>> {
        let namespace = rules::list_scope(kind, namespace)?;
        // What the controllers read, for counting (`KRATIX_LOG=kratix::store=trace`).
        tracing::trace!(op = "list", kind = %kind.kind, selector = %selector, "control plane");
        let (kind, selector) = (kind.clone(), selector.clone());
        self.run(move |conn| {
            let equalities = selector.equalities();
            let through = index::narrowest(conn, &kind, namespace.as_deref(), &equalities)?;
            let objects = db::list_objects(conn, &kind, namespace.as_deref(), through)?;
            Ok(objects
                .into_iter()
                .filter(|obj| selector.matches(&labels(obj)))
                .collect())
        })
        .await
    }

    async fn create(&self, kind: &KindInfo, obj: &Object) -> Result<Object> {
        self.insert(kind, obj, false).await
    }

    async fn create_with_status(&self, kind: &KindInfo, obj: &Object) -> Result<Object> {
        self.insert(kind, obj, true).await
    }

    async fn update(&self, kind: &KindInfo, obj: &Object) -> Result<Object> {
        self.modify(kind, obj, "update", rules::prepare_update)
            .await
    }

    async fn update_status(&self, kind: &KindInfo, obj: &Object) -> Result<Object> {
        self.modify(kind, obj, "update status of", rules::prepare_status_update)
            .await
    }

    async fn delete(
        &self,
        kind: &KindInfo,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<Object>> {
        let key = rules::address(kind, namespace, name)?;
        let now = now();
        let retain = self.inner.options.retain_changes;
        self.run_write(move |conn| {
            write(conn, &format!("delete {key}"), |tx| {
                let stored = db::read_object(tx, &key)?.ok_or_else(|| not_found(&key))?;
                Ok(
                    match apply(tx, &key, rules::prepare_delete(&stored, &now), retain)? {
                        Applied::Kept(obj) => Some(obj),
                        Applied::Removed(_) => None,
                    },
                )
            })
        })
        .await
    }

    async fn current_resource_version(&self) -> Result<String> {
        let seq = self.run(|conn| db::newest_seq(conn)).await?;
        Ok(seq.to_string())
    }

    fn watch(&self, kinds: &[KindInfo], since: &str) -> BoxStream<'static, Result<Change>> {
        watch::watch(self.inner.clone(), kinds, since)
    }

    async fn next_sequence(&self, name: &str) -> Result<i64> {
        self.inner.with_connection(|conn| {
            write(conn, "advance a sequence", |tx| db::next_sequence(tx, name))
        })
    }
}

/// What a write left behind.
enum Applied {
    Kept(Object),
    Removed(Object),
}

impl Applied {
    fn into_object(self) -> Object {
        match self {
            Applied::Kept(obj) | Applied::Removed(obj) => obj,
        }
    }
}

/// Persists an outcome of the rules: a new `resourceVersion` and a feed entry for each change.
fn apply(tx: &Transaction<'_>, key: &ObjectKey, outcome: Outcome, retain: i64) -> Result<Applied> {
    match outcome {
        Outcome::Store(mut obj) => {
            let seq = db::record_change(tx, key, ChangeType::Modified, retain)?;
            db::write_object(tx, key, &mut obj, seq)?;
            Ok(Applied::Kept(obj))
        }
        Outcome::Remove(mut obj) => {
            let seq = db::record_change(tx, key, ChangeType::Deleted, retain)?;
            db::remove_object(tx, key)?;
            obj.metadata.resource_version = Some(seq.to_string());
            Ok(Applied::Removed(obj))
        }
        Outcome::Unchanged(obj) => Ok(Applied::Kept(obj)),
    }
}

/// Runs `work` in a `BEGIN IMMEDIATE` transaction: it takes the write lock up front, so two
/// processes never both read a row and then both write it. Rolled back when `work` fails.
fn write<T>(
    conn: &mut Connection,
    what: &str,
    work: impl FnOnce(&Transaction<'_>) -> Result<T>,
) -> Result<T> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(backend(format!("begin transaction to {what}")))?;
    let result = work(&tx)?;
    tx.commit()
        .map_err(backend(format!("commit transaction to {what}")))?;
    Ok(result)
}

/// Maps a database failure to the store's error, naming the operation that failed.
fn backend(context: impl Into<String>) -> impl FnOnce(rusqlite::Error) -> Error {
    let context = context.into();
    move |source| Error::Backend {
        context,
        source: Box::new(source),
    }
}

fn not_found(key: &ObjectKey) -> Error {
    Error::NotFound { key: key.clone() }
}

/// The current time at the API server's precision (seconds).
fn now() -> Time {
    let seconds = Timestamp::now().as_second();
    Time(Timestamp::from_second(seconds).expect("the current time is within jiff's range"))
}

/// Five characters for a `generateName`, from the API server's alphabet (no vowels, no
/// look-alike digits, so no words and no confusion).
fn random_name_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    uuid::Uuid::new_v4()
        .as_bytes()
        .iter()
        .take(5)
        .map(|b| char::from(ALPHABET[usize::from(*b) % ALPHABET.len()]))
        .collect()
}

/// Makes the database (and SQLite's `-wal`/`-shm` files next to it) readable by its owner only:
/// it holds Secrets. SQLite gives the files it creates later the database's own mode.
fn owner_only(database: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(database)?;
    for suffix in ["", "-wal", "-shm"] {
        let mut path = database.as_os_str().to_owned();
        path.push(suffix);
        match std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)) {
            // Absent, or not ours to change (another user's home we may only read).
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied
                ) => {}
            other => other?,
        }
    }
    Ok(())
}
