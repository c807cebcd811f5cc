//! The controller of every Promise-defined request kind: runs the request's configure workflow
//! once its Promise is available, reports where each pipeline's files landed, and on deletion
//! runs the delete workflow and removes the request's files before letting it go.

pub(crate) mod binding;
mod decide;
pub(crate) mod health;
pub(crate) mod health_index;

use crate::events::{self, Reason};

use crate::api::hash::{resource_hash, spec_hash};
use crate::api::object::label;
use crate::api::versions::run_version;
use crate::api::Action;
use crate::api::WorkflowType;
use crate::api::{finalizers, labels, promise_api, KindInfo, Object, ObjectKey, Promise};

use decide::Decision;

use crate::controllers::lookups;
use crate::controllers::now_ms;
use crate::controllers::promise;
use crate::controllers::status;
use crate::controllers::subject::Subject;
use crate::controllers::work;
use crate::controllers::workflow;
use crate::controllers::workflow::decide::carry_over::{self, CarryOver};
use crate::controllers::workflow::decide::gate::{self, ExitStatus, Gate};
use crate::controllers::workflow::decide::{migrated, RunRecord};
use crate::controllers::workflow::intervals;
use crate::controllers::workflow::keyed_status;
use crate::controllers::workflow::pausing;
use crate::controllers::workflow::runs::runs_of;
use crate::controllers::Error;
use crate::controllers::Next;
use crate::controllers::Runtime;

/// The Promise that defines a request kind.
async fn promise_for(rt: &Runtime, kind: &KindInfo, obj: &Object) -> Result<Option<Object>, Error> {
    if let Some(name) = label(obj, labels::PROMISE_NAME) {
        if let Some(p) = lookups::promise(rt, name).await? {
            return Ok(Some(p));
        }
    }
    for p in rt.platform.promises().await? {
        if promise_api::kinds_from_promises(std::slice::from_ref(&p))
            .iter()
            .any(|k| k == kind)
        {
            return Ok(Some(p));
        }
    }
    Ok(None)
}

pub(crate) async fn reconcile(rt: &Runtime, kind: &KindInfo, obj: Object) -> Result<Next, Error> {
    let Some(promise_obj) = promise_for(rt, kind, &obj).await? else {
        // A request whose Promise is gone can only be let go.
        if obj.metadata.deletion_timestamp.is_some() {
            status::remove_finalizer(rt.cp.as_ref(), kind, &obj, finalizers::WORKFLOWS).await?;
        }
        return Ok(Next::Done);
    };
    let promise_name = promise_obj.metadata.name.clone().unwrap_or_default();
    // A versioned Promise's requests run with the revision their binding names.
    let pinned = match binding::pinned(rt, &promise_obj, &obj).await? {
        Ok(pinned) => pinned,
        Err(unresolved) if obj.metadata.deletion_timestamp.is_none() => {
            let decision = decide::unresolved(unresolved.to_string());
            return act(rt, kind, &obj, &decision).await;
        }
        // A request going away is not held up by a missing revision.
        Err(_) => binding::Pinned {
            promise: promise_obj.clone(),
            bound: None,
        },
    };
    let promise: Promise = crate::api::object::to_typed(&pinned.promise)
        .map_err(|source| Error::malformed(&promise_obj, "Promise", source))?;
    let subject = Subject {
        kind: kind.clone(),
        promise_name: promise_name.clone(),
        workflow_type: WorkflowType::Resource,
        hash: resource_hash(&spec_hash(&pinned.promise.data), &spec_hash(&obj.data)),
        promise_version: run_version(pinned.version()).to_string(),
        object: obj.clone(),
    };
    let deleting = obj.metadata.deletion_timestamp.is_some();
    // Paused (by its own label or its Promise's) before anything else, deletion included; a
    // status of the earlier flat layout is migrated first.
    let gate = gate::gate(
        gate::has_flat_status(&obj),
        pausing::decision_for(&obj, Some(&promise_obj)),
        deleting,
    );
    match gate {
        Gate::Migrate => {
            let action = if deleting {
                Action::Delete
            } else {
                Action::Configure
            };
            let current = promise::pipelines(&promise, WorkflowType::Resource, action)?;
            let runs = records(runs_of(rt, &subject).await?);
            let workflow = migrated(action, &keyed_status::names(&current), &runs);
            tracing::info!(object = %subject.key(), %action, "migrating the flat workflow status to the keyed layout");
            let decision = decide::exit(ExitStatus::Migrated { action, workflow });
            act(rt, kind, &obj, &decision).await
        }
        Gate::Pause(by) => {
            tracing::info!(object = %subject.key(), ?by, "reconciliation paused");
            let runs = runs_of(rt, &subject).await?;
            let decision = decide::exit(ExitStatus::Paused {
                is_promise: false,
                carried: carried(&runs),
            });
            act(rt, kind, &obj, &decision).await
        }
        Gate::Resume => {
            tracing::info!(object = %subject.key(), "unpaused; the configure workflow runs again");
            act(rt, kind, &obj, &decide::exit(ExitStatus::Unpaused)).await
        }
        Gate::Teardown => teardown(rt, &subject, &promise).await,
        Gate::Configure => configure(rt, subject, &promise_obj, &promise, &pinned).await,
    }
}

/// The records of runs as read.
fn records(runs: Vec<(Object, RunRecord)>) -> Vec<RunRecord> {
    runs.into_iter().map(|(_, record)| record).collect()
}

/// The `status.yaml` files the runs recorded, for the status to carry over.
fn carried(runs: &[(Object, RunRecord)]) -> CarryOver<'_> {
    CarryOver::of(
        runs.iter()
            .map(|(run, r)| (r.sequence, carry_over::recorded(run))),
    )
}

/// Writes what the reconcile decided about the request (its one status write, and its labels).
async fn act(
    rt: &Runtime,
    kind: &KindInfo,
    obj: &Object,
    decision: &Decision<'_>,
) -> Result<Next, Error> {
    workflow::write(rt, kind, obj, decision, |change, s| change.apply(s)).await?;
    Ok(decision.next)
}

/// The configure workflow: observe → plan → decide → carry out → the status in one write.
async fn configure(
    rt: &Runtime,
    subject: Subject,
    promise_obj: &Object,
    promise: &Promise,
    pinned: &binding::Pinned,
) -> Result<Next, Error> {
    let kind = &subject.kind.clone();
    let promise_name = subject.promise_name.clone();
    let obj = subject.object.clone();
    let key = ObjectKey::of(&obj);
    // Requests carry their Promise's name, as Kratix labels them, however they were stored
    // (kubectl sets no such label): their deletion must wake the Promise. Written together
    // with the finalizer, in one write.
    let Some(obj) = status::add_finalizer_and_label(
        rt.cp.as_ref(),
        kind,
        &obj,
        finalizers::WORKFLOWS,
        (labels::PROMISE_NAME, &promise_name),
    )
    .await?
    else {
        return Ok(Next::Done);
    };
    let subject = Subject {
        object: obj.clone(),
        ..subject
    };
    let generation = obj.metadata.generation;

    if !crate::api::promise::is_available(promise_obj) {
        // The Promise's change wakes its requests again once it is available.
        let runs = runs_of(rt, &subject).await?;
        let decision = decide::waiting_for(&promise_name, carried(&runs));
        return act(rt, kind, &obj, &decision).await;
    }
    // Observe: the workflow's runs and Works.
    let (runs, request_works) = workflow::observe_configure(rt, &subject).await?;

    let configure = promise::pipelines(promise, WorkflowType::Resource, Action::Configure)?;
    let names = keyed_status::names(&configure);
    let now = now_ms();
    let retry_failures = rt.settings.intervals.after_failure;
    let configured =
        workflow::plan_configure(&subject, &names, &runs, &request_works, retry_failures, now);
    // Observe further: where its files landed, the request's health.
    let landed = work::where_files_landed(&configured.works);
    let health = health::health_status(rt, &promise_name, pinned.version(), &obj).await?;
    // Decide.
    let outcome = decide::binding_outcome(&configured);
    let decision = decide::decide(&decide::Observed {
        configured: &configured,
        names: &names,
        hash: &subject.hash,
        generation,
        promise_name: &promise_name,
        promise_generation: promise_obj.metadata.generation,
        landed: &landed,
        health: health.as_ref(),
        versions: binding::request_versions(pinned, outcome),
        // The interval of the revision the request runs with, as in Kratix.
        interval: intervals::plan(
            &pinned.promise,
            &rt.settings.intervals,
            configured.step(),
            &configured.records,
            subject.manual_reconcile(),
            now,
        ),
        retry_failures,
        now_ms: now,
        carried: carried(&runs),
        asks: (intervals::asks(promise_obj), intervals::asks(&obj)),
        reconciled_before: obj.data.pointer("/status/observedGeneration").is_some(),
    });
    // Act: the run it starts and the Works that go, the binding, then the request's status in
    // one write, and last its labels (whoever waits for the manual-reconciliation label to go
    // must then see the re-run in progress, not the previous run's outcome).
    workflow::carry_out_configure(rt, &subject, &configure, &configured, &runs).await?;
    binding::record(rt, &obj, pinned, outcome, health.as_ref()).await?;
    if decision.labels.rerun {
        tracing::info!(object = %key, "reconciliation interval passed; running the workflow again");
    }
    let stored = workflow::write(rt, kind, &obj, &decision, |change, s| change.apply(s)).await?;
    if let Some(stored) =
        stored.filter(|s| s.metadata.resource_version != obj.metadata.resource_version)
    {
        rt.wrote_own_status(&stored);
    }
    Ok(decision.next)
}

/// Delete workflow, then the request's Works (their files leave the stores), then its runs and
/// finally the finalizer.
async fn teardown(rt: &Runtime, subject: &Subject, promise: &Promise) -> Result<Next, Error> {
    let delete = promise::pipelines(promise, WorkflowType::Resource, Action::Delete)?;
    let look = workflow::look_at_delete(rt, subject, &delete).await?;
    let decision = look.decision(
        &subject.hash,
        subject.object.metadata.generation,
        rt.settings.intervals.after_failure,
        now_ms(),
    );
    workflow::write(
        rt,
        &subject.kind,
        &subject.object,
        &decision,
        |change, s| change.apply(s),
    )
    .await?;
    if !look.finished() {
        return Ok(decision.next);
    }
    let request_works = work::works_of(rt, subject).await?;
    if !request_works.is_empty() {
        // Each Work's deletion wakes this request again (the runtime remembers owners).
        work::delete_works(rt, &request_works, "delete").await?;
        return Ok(Next::Done);
    }
    crate::controllers::workflow::runs::delete_runs(rt, subject).await?;
    rt.pipelines.sweep(&subject.owner()).await?;
    binding::delete_of(rt, &subject.promise_name, &subject.object).await?;
    status::remove_finalizer(
        rt.cp.as_ref(),
        &subject.kind,
        &subject.object,
        finalizers::WORKFLOWS,
    )
    .await?;
    events::record(
        &rt.cp,
        &subject.object,
        Reason::Deleted,
        "delete workflow ran and every file of the request was removed",
    )
    .await;
    Ok(Next::Done)
}
