//! The workflow sequences Promises and requests share: configure (run the workflow, clean up
//! the Works of removed pipelines, decide the conditions) and delete (run the delete workflow
//! and report it until it is done, with its pipelines under its own key of
//! `status.kratix.workflows`).

pub(crate) mod decide;
pub(crate) mod drive;
pub(crate) mod error;
pub(crate) mod intervals;
pub(crate) mod keyed_status;
pub(crate) mod pausing;
pub(crate) mod runs;

pub(crate) use decide::plan::{finished, plan_configure, Configured};

use crate::api::pipeline::Pipeline;
use crate::api::Action;
use crate::api::Object;
use crate::controllers::workflow::decide::RunRecord;

use crate::controllers::status;
use crate::controllers::subject::Subject;
use crate::controllers::work;
use crate::controllers::workflow::runs::runs_of;
use crate::controllers::Error;
use crate::controllers::Next;
use crate::controllers::Runtime;

/// Reads what [`plan_configure`] decides from: the subject's runs and Works.
pub(crate) async fn observe_configure(
    rt: &Runtime,
    subject: &Subject,
) -> Result<(Vec<(Object, RunRecord)>, Vec<Object>), Error> {
    let runs = runs_of(rt, subject).await?;
    let works = work::works_of(rt, subject).await?;
    Ok((runs, works))
}

/// Carries out a [`plan_configure`] but for the object's own status and labels: the run it
/// starts, pruning, and the Works of removed pipelines.
pub(crate) async fn carry_out_configure(
    rt: &Runtime,
    subject: &Subject,
    pipelines: &[Pipeline],
    configured: &Configured,
    runs: &[(Object, RunRecord)],
) -> Result<(), Error> {
    drive::carry_out(
        rt,
        subject,
        Action::Configure,
        pipelines,
        &configured.decided,
        runs,
    )
    .await?;
    work::delete_works(rt, &configured.obsolete, "configure").await?;
    Ok(())
}

/// Drives the subject's delete workflow one step and reports it. Returns what to ask for next
/// while it has not finished; `None` once it has.
pub(crate) async fn delete(
    rt: &Runtime,
    subject: &Subject,
    pipelines: &[Pipeline],
) -> Result<Option<Next>, Error> {
    let (step, runs) = drive::drive(rt, subject, Action::Delete, pipelines).await?;
    let condition = decide::delete_condition(&step, &drive::failure_reason(&runs, &step));
    let records: Vec<RunRecord> = runs.into_iter().map(|(_, r)| r).collect();
    let names = keyed_status::names(pipelines);
    let keyed = keyed_status::inputs(rt, subject, Action::Delete, &names, &records, &step);
    status::update_status(rt.cp.as_ref(), &subject.kind, &subject.key(), |_, s| {
        status::set_conditions(s, [condition.clone()]);
        keyed_status::update(s, &keyed);
    })
    .await?;
    if finished(&step) {
        return Ok(None);
    }
    Ok(Some(
        drive::wake_after(&step).map_or(Next::Done, Next::After),
    ))
}
