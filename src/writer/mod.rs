//! WorkPlacement -> changes for a state store: where each file goes (`layout`) and what to put
//! and delete given what we wrote before (`plan`). Both are pure; the controllers do the I/O.

pub mod layout;
pub mod plan;
