//! The workflow sequences Promises and requests share: configure (run the workflow, clean up
//! the Works of removed pipelines, decide the conditions) and delete (run the delete workflow
//! and report it until it is done, with its pipelines under its own key of
//! `status.kratix.workflows`).

use crate::api::pipeline::Pipeline;
use crate::api::{Condition, Object};
use crate::workflow::{self, Action, RunRecord, Step, WorksState};

use super::subject::Subject;
use super::{keyed_status, status, workflows, works, Error, Next, Runtime};

/// Where a configure workflow stands.
#[derive(Debug)]
pub struct Configured {
    pub step: Step,
    pub records: Vec<RunRecord>,
    /// The Works the workflow produced (those of removed pipelines already going).
    pub works: Vec<Object>,
    pub works_state: WorksState,
    /// The workflow's conditions (`ConfigureWorkflowCompleted`, `Reconciled`, ...).
    pub conditions: Vec<Condition>,
}

/// Whether a workflow has nothing left to run.
pub fn finished(step: &Step) -> bool {
    matches!(step, Step::Completed { .. } | Step::NothingToRun)
}

/// Drives the subject's configure workflow one step, then removes the Works of pipelines no
/// longer in it once it has finished, and decides the workflow's conditions.
pub async fn configure(
    rt: &Runtime,
    subject: &Subject,
    pipelines: &[Pipeline],
) -> Result<Configured, Error> {
    // The runs as read before this step acted: what it started or pruned changes neither the
    // records of the status nor the newest failed run a failure is reported from.
    let (step, runs) = workflows::drive(rt, subject, Action::Configure, pipelines).await?;
    let records: Vec<RunRecord> = runs.iter().map(|(_, r)| r.clone()).collect();
    let mut subject_works = works::works_of(rt, subject).await?;
    // With no pipelines left the workflow is done at once: the Works of the removed ones go too.
    if finished(&step) && works::delete_obsolete(rt, &subject_works, pipelines).await? {
        subject_works = works::works_of(rt, subject).await?;
    }
    let works_state = works::works_state(&subject_works);
    let exit_reason = workflows::failure_reason(&runs, &step);
    let conditions = workflow::configure_conditions(&step, &exit_reason, works_state);
    Ok(Configured {
        step,
        records,
        works: subject_works,
        works_state,
        conditions,
    })
}

/// Drives the subject's delete workflow one step and reports it. Returns what to ask for next
/// while it has not finished; `None` once it has.
pub async fn delete(
    rt: &Runtime,
    subject: &Subject,
    pipelines: &[Pipeline],
) -> Result<Option<Next>, Error> {
    let (step, runs) = workflows::drive(rt, subject, Action::Delete, pipelines).await?;
    let condition = workflow::delete_condition(&step, &workflows::failure_reason(&runs, &step));
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
        workflows::wake_after(&step).map_or(Next::Done, Next::After),
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
