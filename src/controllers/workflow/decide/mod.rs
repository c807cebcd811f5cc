//! The workflow engine's decisions: given an object's pipelines, spec hash and run records,
//! which pipeline runs next. Pure functions only (no I/O, clocks or store): the controllers
//! read PipelineRun records, call [`next_step`], and act on the [`Step`].
//!
//! Progress comes only from run records ordered by their stored `sequence`: pipeline `i + 1`
//! starts only after pipeline `i` succeeded for the current hash in the current attempt, and
//! nothing starts while any run of the object is pending or running.

mod backoff;
pub(crate) mod carry_over;
mod cleanup;
mod conditions;
pub(crate) mod deleting;
pub(crate) mod gate;
mod history;
pub(crate) mod intervals;
mod keyed;
pub(crate) mod keyed_status;
mod model;
mod next_step;
pub(crate) mod pausing;
pub(crate) mod plan;
mod prune;
mod status;
pub(crate) mod suspended_label;

#[cfg(test)]
mod tests;

pub(crate) use cleanup::obsolete_pipelines;
pub(crate) use conditions::{
    configure_conditions, delete_condition, CONFIGURE_WORKFLOW_COMPLETED, RECONCILED,
};
pub(crate) use keyed::{has_flat_layout, migrated, workflow_status, KeyedInputs};
pub(crate) use model::{Observed, RunPhase, RunRecord, Step, Suspension};
pub(crate) use next_step::{next_step, run_attempt};
pub(crate) use prune::{prunes_after, runs_to_prune};
pub(crate) use status::pipeline_statuses;
// Named by the tables of cases only.
#[cfg(test)]
pub(crate) use backoff::{retry_backoff_ms, RETRY_BACKOFF_MAX_MS};
#[cfg(test)]
pub(crate) use conditions::{reconciled, DELETE_WORKFLOW_COMPLETED};
#[cfg(test)]
pub(crate) use model::StartReason;
#[cfg(test)]
pub(crate) use status::{PipelinePhase, PipelineStatus};
