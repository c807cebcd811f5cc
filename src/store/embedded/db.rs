//! The SQL: reading and writing object rows, the change feed, and named counters. Callers hold
//! the transaction; nothing here decides what to write.

use rusqlite::{params, Connection, OptionalExtension, Row, ToSql};

use super::columns::{delete_rows, namespace_column, namespace_key};
use super::{backend, index};
use crate::api::{KindInfo, Object, ObjectKey};
use crate::store::{Change, ChangeType, Error, Result};

/// A position on the change feed (a `changes.seq`), which is also a `resourceVersion`.
pub(super) type Seq = i64;

pub(super) fn read_object(conn: &Connection, key: &ObjectKey) -> Result<Option<Object>> {
    // Prepared once per connection: reads of single objects are the store's commonest query.
    let json: Option<String> = conn
        .prepare_cached(
            r#"SELECT json FROM objects WHERE "group" = ?1 AND kind = ?2 AND namespace = ?3 AND name = ?4"#,
        )
        .and_then(|mut statement| {
            statement
                .query_row(
                    params![key.group, key.kind, namespace_column(key), key.name],
                    |row| row.get(0),
                )
                .optional()
        })
        .map_err(backend(format!("read {key}")))?;
    json.map(|json| parse_object(&json, key)).transpose()
}

/// Objects of `kind`, in `namespace` or all, sorted by namespace and name; only those labelled
/// `label = value` when `through` names one (read through the label index).
pub(super) fn list_objects(
    conn: &Connection,
    kind: &KindInfo,
    namespace: Option<&str>,
    through: Option<&(String, String)>,
) -> Result<Vec<Object>> {
    let what = format!("list {}", kind.plural);
    let sql = if through.is_some() {
        r#"SELECT o.namespace, o.name, o.json FROM labels l JOIN objects o
             ON o."group" = l."group" AND o.kind = l.kind AND o.namespace = l.namespace
                AND o.name = l.name
           WHERE l."group" = ?1 AND l.kind = ?2 AND (?3 IS NULL OR l.namespace = ?3)
             AND l.key = ?4 AND l.value = ?5
           ORDER BY l.namespace, l.name"#
    } else {
        r#"SELECT namespace, name, json FROM objects
           WHERE "group" = ?1 AND kind = ?2 AND (?3 IS NULL OR namespace = ?3)
           ORDER BY namespace, name"#
    };
    let mut args: Vec<&dyn ToSql> = vec![&kind.group, &kind.kind, &namespace];
    if let Some((label, value)) = through {
        args.extend([label as &dyn ToSql, value]);
    }
    let mut statement = conn.prepare_cached(sql).map_err(backend(what.clone()))?;
    let rows = statement
        .query_map(args.as_slice(), |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
            ))
        })
        .map_err(backend(what.clone()))?;
    let mut objects = Vec::new();
    for row in rows {
        let (namespace, name, json) = row.map_err(backend(what.clone()))?;
        let key = ObjectKey::new(&kind.group, &kind.kind, namespace_key(&namespace), &name);
        objects.push(parse_object(&json, &key)?);
    }
    Ok(objects)
}

/// Stores `obj` under `seq`, which becomes its `resourceVersion`.
pub(super) fn write_object(
    conn: &Connection,
    key: &ObjectKey,
    obj: &mut Object,
    seq: Seq,
) -> Result<()> {
    obj.metadata.resource_version = Some(seq.to_string());
    let json = serde_json::to_string(&*obj).map_err(|source| Error::Backend {
        context: format!("encode {key}"),
        source: Box::new(source),
    })?;
    conn.prepare_cached(
        r#"INSERT INTO objects ("group", kind, namespace, name, uid, resource_version, generation, json)
           VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
           ON CONFLICT ("group", kind, namespace, name) DO UPDATE SET
               uid = excluded.uid, resource_version = excluded.resource_version,
               generation = excluded.generation, json = excluded.json"#,
    )
    .and_then(|mut statement| {
        statement.execute(params![
            key.group,
            key.kind,
            namespace_column(key),
            key.name,
            obj.metadata.uid.as_deref().unwrap_or_default(),
            seq,
            obj.metadata.generation.unwrap_or(0),
            json
        ])
    })
    .map_err(backend(format!("write {key}")))?;
    index::write_labels(conn, key, obj)
}

pub(super) fn remove_object(conn: &Connection, key: &ObjectKey) -> Result<()> {
    delete_rows(conn, "objects", key).map_err(backend(format!("remove {key}")))?;
    index::remove_labels(conn, key)
}

/// Appends a change and returns its position. Every `prune_every` positions, drops changes older
/// than the newest `retain` (at least one is always kept, so the feed's start stays known).
pub(super) fn record_change(
    conn: &Connection,
    key: &ObjectKey,
    change_type: ChangeType,
    retain: i64,
) -> Result<Seq> {
    let seq = conn
        .prepare_cached(
            r#"INSERT INTO changes ("group", kind, namespace, name, change_type)
               VALUES (?1, ?2, ?3, ?4, ?5) RETURNING seq"#,
        )
        .and_then(|mut statement| {
            statement.query_row(
                params![
                    key.group,
                    key.kind,
                    namespace_column(key),
                    key.name,
                    change_type_name(change_type)
                ],
                |row| row.get::<_, Seq>(0),
            )
        })
        .map_err(backend(format!("record change to {key}")))?;
    let retain = retain.max(1);
    let prune_every = (retain / 10).max(1);
    if seq % prune_every == 0 {
        conn.execute("DELETE FROM changes WHERE seq <= ?1", [seq - retain])
            .map_err(backend("prune the change feed"))?;
    }
    Ok(seq)
}

/// The newest position of the change feed (0 before the first write).
pub(super) fn newest_seq(conn: &Connection) -> Result<Seq> {
    conn.prepare_cached("SELECT COALESCE(MAX(seq), 0) FROM changes")
        .and_then(|mut statement| statement.query_row([], |row| row.get(0)))
        .map_err(backend("read the change feed position"))
}

/// The oldest position a watch can resume from: changes after it are all still stored. Positions
/// are contiguous (each comes from a committed insert) and pruning removes only the oldest.
pub(super) fn oldest_resumable_seq(conn: &Connection) -> Result<Seq> {
    let oldest: Option<Seq> = conn
        .prepare_cached("SELECT MIN(seq) FROM changes")
        .and_then(|mut statement| statement.query_row([], |row| row.get(0)))
        .map_err(backend("read the change feed start"))?;
    Ok(oldest.map_or(0, |seq| seq - 1))
}

/// Up to `limit` changes after `since`, oldest first, with their positions.
pub(super) fn changes_after(
    conn: &Connection,
    since: Seq,
    limit: i64,
) -> Result<Vec<(Seq, Change)>> {
    let what = "read the change feed";
    let mut statement = conn
        .prepare_cached(
            r#"SELECT seq, "group", kind, namespace, name, change_type FROM changes
               WHERE seq > ?1 ORDER BY seq LIMIT ?2"#,
        )
        .map_err(backend(what))?;
    let rows = statement
        .query_map(params![since, limit], change_from_row)
        .map_err(backend(what))?;
    rows.collect::<rusqlite::Result<Vec<_>>>()
        .map_err(backend(what))
}

/// Increments the counter `name` (created at 1) and returns its new value.
pub(super) fn next_sequence(conn: &Connection, name: &str) -> Result<i64> {
    conn.prepare_cached(
        "INSERT INTO sequences (name, value) VALUES (?1, 1)
         ON CONFLICT (name) DO UPDATE SET value = value + 1 RETURNING value",
    )
    .and_then(|mut statement| statement.query_row([name], |row| row.get(0)))
    .map_err(backend(format!("advance sequence {name:?}")))
}

fn change_from_row(row: &Row<'_>) -> rusqlite::Result<(Seq, Change)> {
    let seq: Seq = row.get(0)?;
    let namespace: String = row.get(3)?;
    let change_type: String = row.get(5)?;
    let change_type = parse_change_type(&change_type).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(
            5,
            rusqlite::types::Type::Text,
            Box::new(UnknownChangeType(change_type)),
        )
    })?;
    let key = ObjectKey {
        group: row.get(1)?,
        kind: row.get(2)?,
        namespace: namespace_key(&namespace).map(str::to_string),
        name: row.get(4)?,
    };
    Ok((
        seq,
        Change {
            change_type,
            key,
            resource_version: seq.to_string(),
            object: None,
        },
    ))
}

fn parse_object(json: &str, key: &ObjectKey) -> Result<Object> {
    serde_json::from_str(json).map_err(|source| Error::Backend {
        context: format!("decode stored {key}"),
        source: Box::new(source),
    })
}

fn change_type_name(change_type: ChangeType) -> &'static str {
    match change_type {
        ChangeType::Added => "Added",
        ChangeType::Modified => "Modified",
        ChangeType::Deleted => "Deleted",
    }
}

fn parse_change_type(name: &str) -> Option<ChangeType> {
    match name {
        "Added" => Some(ChangeType::Added),
        "Modified" => Some(ChangeType::Modified),
        "Deleted" => Some(ChangeType::Deleted),
        _ => None,
    }
}

/// A change row whose type this program does not know.
#[derive(Debug, thiserror::Error)]
#[error("unknown change type {0:?}")]
struct UnknownChangeType(String);
