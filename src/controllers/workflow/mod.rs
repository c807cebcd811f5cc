//! The workflow sequences Promises and requests share: configure (run the workflow, clean up
//! the Works of removed pipelines, decide the conditions) and delete (run the delete workflow
//! and report it until it is done, with its pipelines under its own key of
//! `status.kratix.workflows`).

pub(crate) mod decide;
pub(crate) mod drive;
pub(crate) mod error;
pub(crate) mod keyed_status;
pub(crate) mod owner;
pub(crate) mod runs;

pub(crate) use decide::plan::{plan_configure, Configured};
pub(crate) use decide::{intervals, pausing};

use crate::api::pipeline::Pipeline;
use crate::api::Action;
use crate::api::{KindInfo, Object, ObjectKey};
use crate::controllers::workflow::decide::deleting::DeleteLook;
use crate::controllers::workflow::decide::gate;
use crate::controllers::workflow::decide::RunRecord;
use crate::platform::builtin;
use serde_json::Value;

use crate::controllers::now_ms;
use crate::controllers::status;
use crate::controllers::subject::Subject;
use crate::controllers::work;
use crate::controllers::workflow::runs::runs_of;
use crate::controllers::Error;
use crate::controllers::Next;
use crate::controllers::Runtime;

/// Acts on what a Promise's or request's reconcile decided about its object (see
/// [`gate::Decision`]): its one status write (`status` applied to the status as stored, again
/// to a newer one should another write get there first) and its labels, in the decided order.
/// The object as the status write stored it (`None` when nothing was written or it is gone).
pub(crate) async fn write<S: Sync>(
    rt: &Runtime,
    kind: &KindInfo,
    obj: &Object,
    decision: &gate::Decision<S>,
    status: impl Fn(&S, &mut Value) + Sync,
) -> Result<Option<Object>, Error> {
    let labels = decision.labels;
    let write_labels = || async {
        if labels.change_anything() {
            status::update_object(rt.cp.as_ref(), kind, &ObjectKey::of(obj), |o| {
                labels.apply(o);
            })
            .await?;
        }
        Ok::<(), Error>(())
    };
    if decision.labels_first {
        write_labels().await?;
    }
    let mut stored = None;
    if let Some(change) = &decision.status {
        // After a labels write the object as read is stale: the write reads it again.
        stored = if decision.labels_first && labels.change_anything() {
            status::update_status(rt.cp.as_ref(), kind, &ObjectKey::of(obj), |_, s| {
                status(change, s);
            })
            .await?
        } else {
            status::update_status_of(rt.cp.as_ref(), kind, obj, |_, s| status(change, s)).await?
        };
    }
    if !decision.labels_first {
        write_labels().await?;
    }
    Ok(stored)
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

/// Where a teardown is after one step of its object's delete workflow.
pub(crate) enum DeleteStep {
    /// The workflow has more to run: look again then.
    Running(Next),
    /// It has finished (or was skipped): the object as its status write stored it, if it wrote.
    Finished(Option<Box<Object>>),
}

/// One step of the delete workflow of `subject` (its `pipelines`): the runs looked at, the next
/// one started, and the step's status written; skipped when its runs' namespace is being deleted
/// (see [`decide::deleting::namespace_terminating`]), which is said in the log (such a namespace
/// takes no events either).
pub(crate) async fn delete_step(
    rt: &Runtime,
    subject: &Subject,
    pipelines: &[Pipeline],
) -> Result<DeleteStep, Error> {
    let namespace = subject.run_namespace();
    let kind = builtin(crate::api::Builtin::Namespace);
    let stored = rt.cp.get(&kind, None, &namespace).await?;
    if decide::deleting::namespace_terminating(stored.as_ref()) {
        tracing::warn!(object = %subject.key(), %namespace, "its namespace is being deleted: the delete workflow cannot run there and is skipped");
        return Ok(DeleteStep::Finished(None));
    }
    let look = look_at_delete(rt, subject, pipelines).await?;
    let decision = look.decision(
        &subject.hash,
        subject.object.metadata.generation,
        rt.settings.intervals.after_failure,
        now_ms(),
    );
    let stored = write(
        rt,
        &subject.kind,
        &subject.object,
        &decision,
        gate::ExitStatus::apply,
    )
    .await?;
    Ok(if look.finished() {
        DeleteStep::Finished(stored.map(Box::new))
    } else {
        DeleteStep::Running(decision.next)
    })
}

/// Looks at the subject's delete workflow: reads its runs, decides what it does next, and
/// starts the run it starts (and prunes). What the step writes about the object is its
/// reconcile's: see [`decide::deleting::DeleteLook::decision`].
async fn look_at_delete(
    rt: &Runtime,
    subject: &Subject,
    pipelines: &[Pipeline],
) -> Result<DeleteLook, Error> {
    let runs = runs_of(rt, subject).await?;
    let records: Vec<RunRecord> = runs.iter().map(|(_, r)| r.clone()).collect();
    let names = keyed_status::names(pipelines);
    let decided = drive::decide(
        subject,
        Action::Delete,
        &names,
        &records,
        rt.settings.intervals.after_failure,
        now_ms(),
    );
    drive::carry_out(rt, subject, Action::Delete, pipelines, &decided, &runs).await?;
    Ok(DeleteLook {
        runs,
        records,
        names,
        decided,
    })
}
