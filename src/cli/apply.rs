//! `apply`: documents are admitted by [`crate::admission`] (every one checked before any is
//! stored); what the command adds is its warnings.

mod warnings;

pub(crate) use crate::admission::{prepare, store_all, Error, Known, Prepared};
pub(crate) use warnings::requirement_warnings;
