//! The label index: one row per label of every object, kept in the transaction that writes the
//! object, so that a label selector reads only the objects it can select.

use rusqlite::{params, Connection};

use super::backend;
use super::columns::{delete_rows, namespace_column};
use crate::api::{KindInfo, Object, ObjectKey};
use crate::store::Result;

/// Above this many objects, an equality is no more selective than another for our purposes:
/// counting stops there, so choosing costs a bounded number of index reads.
const COUNT_CAP: i64 = 64;

/// Replaces the labels of `key` with those of `obj`.
pub(super) fn write_labels(conn: &Connection, key: &ObjectKey, obj: &Object) -> Result<()> {
    remove_labels(conn, key)?;
    let Some(labels) = &obj.metadata.labels else {
        return Ok(());
    };
    let mut insert = conn
        .prepare_cached(
            r#"INSERT INTO labels ("group", kind, namespace, name, key, value)
               VALUES (?1, ?2, ?3, ?4, ?5, ?6)"#,
        )
        .map_err(backend(format!("index the labels of {key}")))?;
    for (label, value) in labels {
        insert
            .execute(params![
                key.group,
                key.kind,
                namespace_column(key),
                key.name,
                label,
                value
            ])
            .map_err(backend(format!("index the labels of {key}")))?;
    }
    Ok(())
}

pub(super) fn remove_labels(conn: &Connection, key: &ObjectKey) -> Result<()> {
    delete_rows(conn, "labels", key).map_err(backend(format!("remove the labels of {key}")))?;
    Ok(())
}

/// Of the `label = value` requirements of a selector, the one that selects the fewest objects of
/// `kind` (counted up to [`COUNT_CAP`]), to read the objects through.
pub(super) fn narrowest<'a>(
    conn: &Connection,
    kind: &KindInfo,
    namespace: Option<&str>,
    equalities: &'a [(String, String)],
) -> Result<Option<&'a (String, String)>> {
    if equalities.len() < 2 {
        return Ok(equalities.first());
    }
    let mut count = conn
        .prepare_cached(
            r#"SELECT count(*) FROM (SELECT 1 FROM labels
               WHERE "group" = ?1 AND kind = ?2 AND key = ?3 AND value = ?4
                 AND (?5 IS NULL OR namespace = ?5)
               LIMIT ?6)"#,
        )
        .map_err(backend(format!("count {}", kind.plural)))?;
    let mut counted = Vec::with_capacity(equalities.len());
    for pair in equalities {
        let n: i64 = count
            .query_row(
                params![kind.group, kind.kind, pair.0, pair.1, namespace, COUNT_CAP],
                |row| row.get(0),
            )
            .map_err(backend(format!("count {}", kind.plural)))?;
        counted.push((n, pair));
    }
    Ok(counted
        .into_iter()
        .min_by_key(|(n, _)| *n)
        .map(|(_, pair)| pair))
}
