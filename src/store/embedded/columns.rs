//! How object keys are stored in the tables' columns.

use rusqlite::{params, Connection};

use crate::api::ObjectKey;

/// Cluster-scoped objects are stored under the empty namespace so the primary key has no NULLs.
pub(super) fn namespace_column(key: &ObjectKey) -> &str {
    key.namespace.as_deref().unwrap_or_default()
}

pub(super) fn namespace_key(column: &str) -> Option<&str> {
    (!column.is_empty()).then_some(column)
}

/// Deletes the rows of `key` from `table`, one of the tables keyed by an object's columns
/// (`objects`, `labels`).
pub(super) fn delete_rows(
    conn: &Connection,
    table: &'static str,
    key: &ObjectKey,
) -> rusqlite::Result<usize> {
    conn.prepare_cached(&format!(
        r#"DELETE FROM {table} WHERE "group" = ?1 AND kind = ?2 AND namespace = ?3 AND name = ?4"#
    ))?
    .execute(params![
        key.group,
        key.kind,
        namespace_column(key),
        key.name
    ])
}
