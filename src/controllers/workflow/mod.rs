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

use crate::api::pipeline::Pipeline;
use crate::api::Action;
use crate::api::{Condition, Object};
use crate::controllers::work::WorksState;
use crate::controllers::workflow::decide::RunRecord;
use crate::controllers::workflow::decide::Step;

use crate::controllers::status;
use crate::controllers::subject::Subject;
use crate::controllers::work;
use crate::controllers::workflow::drive::Decided;
use crate::controllers::workflow::runs::runs_of;
use crate::controllers::Error;
use crate::controllers::Next;
use crate::controllers::Runtime;

/// Where a configure workflow stands after this look, and what the look does about it.
#[derive(Debug)]
pub(crate) struct Configured {
    pub(crate) decided: Decided,
    /// The runs' records as the object's status shows them: as read, and the run this look
    /// starts.
    pub(crate) records: Vec<RunRecord>,
    /// The Works the workflow produced (those of removed pipelines too).
    pub(crate) works: Vec<Object>,
    /// The Works of removed pipelines this look deletes (once the workflow has finished).
    pub(crate) obsolete: Vec<Object>,
    pub(crate) works_state: WorksState,
    /// The workflow's conditions (`ConfigureWorkflowCompleted`, `Reconciled`, ...).
    pub(crate) conditions: Vec<Condition>,
}

impl Configured {
    pub(crate) fn step(&self) -> &Step {
        &self.decided.step
    }
}

/// Whether a workflow has nothing left to run.
pub(crate) fn finished(step: &Step) -> bool {
    matches!(step, Step::Completed { .. } | Step::NothingToRun)
}

/// What the configure workflow of `subject` does at this look, from its runs and Works (pure):
/// the step, the run it starts, the Works of removed pipelines that go once it has finished
/// (with no pipelines left it is finished at once), and its conditions.
pub(crate) fn plan_configure(
    subject: &Subject,
    names: &[String],
    runs: &[(Object, RunRecord)],
    works: &[Object],
    retry_failures: bool,
    now_ms: i64,
) -> Configured {
    let mut records: Vec<RunRecord> = runs.iter().map(|(_, r)| r.clone()).collect();
    let decided = drive::decide(
        subject,
        Action::Configure,
        names,
        &records,
        retry_failures,
        now_ms,
    );
    // The failure is reported from the runs as read: what this look starts is not a failure.
    let exit_reason = drive::failure_reason(runs, &decided.step);
    records.extend(drive::started_record(
        &decided,
        subject,
        Action::Configure,
        names,
        &records,
    ));
    let obsolete = if finished(&decided.step) {
        obsolete_works(works, names)
    } else {
        Vec::new()
    };
    let works_state = work::works_state_with(works, &obsolete);
    let conditions = decide::configure_conditions(&decided.step, &exit_reason, works_state);
    Configured {
        decided,
        records,
        works: works.to_vec(),
        obsolete,
        works_state,
        conditions,
    }
}

/// The Works of pipelines no longer in the workflow that are not going yet (pure).
fn obsolete_works(works: &[Object], pipelines: &[String]) -> Vec<Object> {
    works
        .iter()
        .filter(|w| crate::api::WorkType::of(w) != Some(crate::api::WorkType::StaticDependency))
        .filter(|w| {
            let pipeline = crate::api::object::label(w, crate::api::labels::PIPELINE_NAME)
                .unwrap_or_default()
                .to_string();
            !decide::obsolete_pipelines(&[pipeline], pipelines).is_empty()
        })
        .filter(|w| w.metadata.deletion_timestamp.is_none())
        .cloned()
        .collect()
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finished_only_when_nothing_is_left_to_run() {
        let cases = [
            (Step::NothingToRun, true),
            (
                Step::Completed {
                    last_run_sequence: 3,
                },
                true,
            ),
            (Step::Wait, false),
            (
                Step::Failed {
                    index: 0,
                    pipeline: "p".into(),
                    attempts: 1,
                    retry_at_ms: Some(0),
                },
                false,
            ),
            (
                Step::Suspended {
                    index: 0,
                    retry_at_ms: None,
                    message: String::new(),
                },
                false,
            ),
        ];
        for (step, want) in cases {
            assert_eq!(finished(&step), want, "{step:?}");
        }
    }
}
