//! What a reconcile answers: nothing more until something changes, or another look after a
//! delay.

use std::time::Duration;

/// What a reconcile asks for next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    /// Nothing until something changes.
    Done,
    /// Look again after this long even if nothing changes.
    After(Duration),
}
