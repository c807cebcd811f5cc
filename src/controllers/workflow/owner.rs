//! The one reconcile Promises and requests share. Both go through the same gate (migrate a flat
//! status, pause, resume, tear down, configure) and the same configure skeleton: prepare (the
//! kind's own finalizer and preconditions) → observe the workflow's runs and Works → plan →
//! decide (pure, in the kind's `decide.rs`) → act (the object's one status write, the plan's run
//! and Work deletions, events, its labels). What differs between the kinds is an [`Owner`].

use std::future::Future;

use crate::api::pipeline::Pipeline;
use crate::api::{Action, Object, WorkflowType};
use crate::controllers::now_ms;
use crate::controllers::subject::Subject;
use crate::controllers::workflow::decide::carry_over::{self, CarryOver};
use crate::controllers::workflow::decide::gate::{self, ExitStatus, Gate};
use crate::controllers::workflow::decide::{migrated, pausing, RunRecord};
use crate::controllers::workflow::runs::runs_of;
use crate::controllers::workflow::{self, intervals, keyed_status, Configured};
use crate::controllers::{Error, Next, Runtime};

/// What the configure skeleton observed and planned, for the owner's decision.
pub(crate) struct Planned {
    /// The configure workflow's pipelines, and their names.
    pub(crate) pipelines: Vec<Pipeline>,
    pub(crate) names: Vec<String>,
    /// The object's runs, as read.
    pub(crate) runs: Vec<(Object, RunRecord)>,
    pub(crate) configured: Configured,
    /// The periodic re-run: the delay until it is due, or whether it is due now.
    pub(crate) interval: (Option<std::time::Duration>, bool),
    pub(crate) retry_failures: bool,
    pub(crate) now_ms: i64,
}

impl Planned {
    /// The `status.yaml` files the runs recorded, for the status to carry over.
    pub(crate) fn carried(&self) -> CarryOver<'_> {
        carried(&self.runs)
    }

    /// Carries out the plan but for the object's own status and labels: the run it starts,
    /// pruning, and the Works of removed pipelines. After the owner's status write, before its
    /// labels.
    pub(crate) async fn carry_out(&self, rt: &Runtime, subject: &Subject) -> Result<(), Error> {
        workflow::carry_out_configure(rt, subject, &self.pipelines, &self.configured, &self.runs)
            .await
    }
}

/// The `status.yaml` files `runs` recorded, for the status to carry over.
pub(crate) fn carried(runs: &[(Object, RunRecord)]) -> CarryOver<'_> {
    CarryOver::of(
        runs.iter()
            .map(|(run, r)| (r.sequence, carry_over::recorded(run))),
    )
}

/// Where the configure skeleton goes after the owner's own preconditions.
pub(crate) enum Prepared<R> {
    /// On with the workflow: the object as stored now, and what the preconditions found.
    Ready(Box<Subject>, R),
    /// The reconcile ends here (the owner wrote what it had to).
    Done(Next),
}

/// What a Promise's or a request's reconcile does its own way.
pub(crate) trait Owner: Sync {
    /// What its preconditions found, for its decision.
    type Ready: Send;

    /// The pipelines of its workflow for `action`.
    fn pipelines(&self, action: Action) -> Result<Vec<Pipeline>, Error>;

    /// The Promise (or revision) whose reconciliation interval the workflow's re-runs follow.
    fn interval_source<'a>(&'a self, subject: &'a Subject) -> &'a Object;

    /// Writes the status of an early end of the reconcile.
    fn exit(
        &self,
        rt: &Runtime,
        obj: &Object,
        status: ExitStatus<'_>,
    ) -> impl Future<Output = Result<Next, Error>> + Send;

    /// One step of its teardown.
    fn teardown(
        &self,
        rt: &Runtime,
        subject: &Subject,
    ) -> impl Future<Output = Result<Next, Error>> + Send;

    /// Its finalizer and its preconditions, before the configure workflow.
    fn prepare(
        &self,
        rt: &Runtime,
        subject: Subject,
    ) -> impl Future<Output = Result<Prepared<Self::Ready>, Error>> + Send;

    /// The rest of its configure reconcile, from the plan: what else it observes, its decision
    /// (pure, in its kind's `decide.rs`), its status write, the plan carried out
    /// ([`Planned::carry_out`]), and its labels. The status comes before the plan's run: the run
    /// reads its object as stored, and must see what earlier pipelines wrote in their
    /// status.yaml, which this status write carries over.
    fn conclude(
        &self,
        rt: &Runtime,
        subject: &Subject,
        ready: Self::Ready,
        planned: &Planned,
    ) -> impl Future<Output = Result<Next, Error>> + Send;
}

/// The reconcile of a Promise or request: the gate, then the branch it chose. `pause` is the
/// pausing decision for the object (a request's also looks at its Promise).
pub(crate) async fn reconcile<O: Owner>(
    rt: &Runtime,
    owner: &O,
    subject: Subject,
    pause: pausing::Decision,
) -> Result<Next, Error> {
    let obj = &subject.object;
    let deleting = obj.metadata.deletion_timestamp.is_some();
    // Paused before anything else, deletion included, as in Kratix; a status of the earlier flat
    // layout is migrated first.
    match gate::gate(gate::has_flat_status(obj), pause, deleting) {
        Gate::Migrate => {
            let action = if deleting {
                Action::Delete
            } else {
                Action::Configure
            };
            let current = owner.pipelines(action)?;
            let runs: Vec<RunRecord> = runs_of(rt, &subject)
                .await?
                .into_iter()
                .map(|(_, record)| record)
                .collect();
            let workflow = migrated(action, &keyed_status::names(&current), &runs);
            let next = owner
                .exit(rt, obj, ExitStatus::Migrated { action, workflow })
                .await?;
            tracing::info!(object = %subject.key(), %action, "migrated the flat workflow status to the keyed layout");
            Ok(next)
        }
        Gate::Pause(by) => {
            tracing::info!(object = %subject.key(), ?by, "reconciliation paused");
            let runs = runs_of(rt, &subject).await?;
            let status = ExitStatus::Paused {
                is_promise: subject.workflow_type == WorkflowType::Promise,
                carried: carried(&runs),
            };
            owner.exit(rt, obj, status).await
        }
        Gate::Resume => {
            tracing::info!(object = %subject.key(), "unpaused; the configure workflow runs again");
            owner.exit(rt, obj, ExitStatus::Unpaused).await
        }
        Gate::Teardown => owner.teardown(rt, &subject).await,
        Gate::Configure => configure(rt, owner, subject).await,
    }
}

/// The configure skeleton: prepare → observe → plan → (the owner's) decide and act.
async fn configure<O: Owner>(rt: &Runtime, owner: &O, subject: Subject) -> Result<Next, Error> {
    let (subject, ready) = match owner.prepare(rt, subject).await? {
        Prepared::Ready(subject, ready) => (*subject, ready),
        Prepared::Done(next) => return Ok(next),
    };
    let pipelines = owner.pipelines(Action::Configure)?;
    let names = keyed_status::names(&pipelines);
    // Observe: the workflow's runs and Works.
    let (runs, works) = workflow::observe_configure(rt, &subject).await?;
    // Plan.
    let now = now_ms();
    let retry_failures = rt.settings.intervals.after_failure;
    let configured = workflow::plan_configure(&subject, &names, &runs, &works, retry_failures, now);
    let interval = intervals::plan(
        owner.interval_source(&subject),
        &rt.settings.intervals,
        configured.step(),
        &configured.records,
        subject.manual_reconcile(),
        now,
    );
    let planned = Planned {
        pipelines,
        names,
        runs,
        configured,
        interval,
        retry_failures,
        now_ms: now,
    };
    owner.conclude(rt, &subject, ready, &planned).await
}
