//! Works: turning a pipeline's output (or a Promise's static dependencies) into the pipeline's
//! Work, scheduling Works onto Destinations as WorkPlacements, and reporting whether they are
//! written.

mod conditions;
mod controller;
mod create;
mod delete;
pub(crate) mod destinations;
pub(crate) mod error;
pub(crate) mod from_output;
mod landed;
mod query;
pub(crate) mod schedule;
pub(crate) mod state;

pub(crate) use controller::reconcile;
pub(crate) use create::{promise_selectors, upsert_work, NewWork, Upsert};
pub(crate) use create::{sync_static_dependencies, Refusal};
pub(crate) use delete::{delete_all_of_promise, delete_works, remove_with_reason};
pub(crate) use landed::where_files_landed;
pub(crate) use query::works_of;
