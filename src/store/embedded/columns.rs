//! How object keys are stored in the tables' columns.

use crate::api::ObjectKey;

/// Cluster-scoped objects are stored under the empty namespace so the primary key has no NULLs.
pub(super) fn namespace_column(key: &ObjectKey) -> &str {
    key.namespace.as_deref().unwrap_or_default()
}

pub(super) fn namespace_key(column: &str) -> Option<&str> {
    (!column.is_empty()).then_some(column)
}
