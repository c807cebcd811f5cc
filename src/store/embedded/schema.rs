//! The database file: connection settings and the schema, migrated forward by version.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior};

use super::backend;
use crate::store::{Error, Result};

/// The database was written by a newer kratix-rs.
#[derive(Debug, thiserror::Error)]
#[error("schema version {current} is newer than the newest this program knows ({supported})")]
pub(super) struct SchemaTooNew {
    current: i64,
    supported: i64,
}

/// How long a write waits for another process's write to finish before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Each entry moves the schema from version `index` to `index + 1`. Append only: a released
/// entry never changes, so every database can be brought to the newest version.
const MIGRATIONS: &[&str] = &[
    r#"
    CREATE TABLE objects (
        "group" TEXT NOT NULL,
        kind TEXT NOT NULL,
        namespace TEXT NOT NULL,
        name TEXT NOT NULL,
        uid TEXT NOT NULL,
        resource_version INTEGER NOT NULL,
        generation INTEGER NOT NULL,
        json TEXT NOT NULL,
        PRIMARY KEY ("group", kind, namespace, name)
    );
    CREATE TABLE changes (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        "group" TEXT NOT NULL,
        kind TEXT NOT NULL,
        namespace TEXT NOT NULL,
        name TEXT NOT NULL,
        change_type TEXT NOT NULL
    );
    CREATE TABLE sequences (
        name TEXT PRIMARY KEY,
        value INTEGER NOT NULL
    );
    "#,
    // Labels of every object, so that a label selector reads the objects it selects instead of
    // every object of the kind.
    r#"
    CREATE TABLE labels (
        "group" TEXT NOT NULL,
        kind TEXT NOT NULL,
        namespace TEXT NOT NULL,
        name TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY ("group", kind, namespace, name, key)
    ) WITHOUT ROWID;
    CREATE INDEX labels_by_value ON labels ("group", kind, key, value, namespace, name);
    INSERT INTO labels ("group", kind, namespace, name, key, value)
        SELECT o."group", o.kind, o.namespace, o.name, l.key, l.value
        FROM objects o, json_each(o.json, '$.metadata.labels') l;
    "#,
];

/// Opens (creating if needed) the database at `path`, ready for several processes at once.
/// Room for every distinct statement the store runs (listings vary with their selector).
const STATEMENT_CACHE: usize = 128;

pub(super) fn open(path: &Path) -> Result<Connection> {
    let what = path.display();
    let conn = Connection::open(path).map_err(backend(format!("open database {what}")))?;
    // Set before anything else touches the file, so the pragmas below wait for other processes.
    conn.busy_timeout(BUSY_TIMEOUT)
        .map_err(backend(format!("set busy timeout on {what}")))?;
    // WAL lets readers (watchers) run while one process writes.
    conn.pragma_update(None, "journal_mode", "WAL")
        .map_err(backend(format!("enable WAL on {what}")))?;
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(backend(format!("set synchronous mode on {what}")))?;
    // Every statement is prepared once and kept: there are a few dozen, run again and again.
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    Ok(conn)
}

/// Brings the schema to the newest version. Runs in one immediate transaction, so processes
/// opening the same new home at once migrate it exactly once.
pub(super) fn migrate(conn: &mut Connection) -> Result<()> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(backend("begin schema migration"))?;
    tx.execute_batch("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
        .map_err(backend("create schema_version table"))?;
    let current: i64 = tx
        .query_row("SELECT version FROM schema_version", [], |row| row.get(0))
        .optional()
        .map_err(backend("read schema version"))?
        .unwrap_or(0);
    let target = i64::try_from(MIGRATIONS.len()).expect("the migration list is short");
    if current > target {
        return Err(Error::Backend {
            context: format!("open database at schema version {current}"),
            source: Box::new(SchemaTooNew {
                current,
                supported: target,
            }),
        });
    }
    for (version, sql) in (1..=target)
        .zip(MIGRATIONS)
        .skip(usize::try_from(current).unwrap_or(0))
    {
        tx.execute_batch(sql)
            .map_err(backend(format!("migrate schema to version {version}")))?;
    }
    if current < target {
        tx.execute("DELETE FROM schema_version", [])
            .map_err(backend("record schema version"))?;
        tx.execute("INSERT INTO schema_version (version) VALUES (?1)", [target])
            .map_err(backend("record schema version"))?;
    }
    tx.commit().map_err(backend("commit schema migration"))?;
    Ok(())
}
