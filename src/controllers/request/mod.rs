//! The controller of every Promise-defined request kind: runs the request's configure workflow
//! once its Promise is available, reports where each pipeline's files landed, and on deletion
//! runs the delete workflow and removes the request's files before letting it go.

pub(crate) mod binding;
mod decide;
pub(crate) mod health;
pub(crate) mod health_index;

use crate::events::{self, Reason};
use serde_json::json;

use crate::api::hash::{resource_hash, spec_hash};
use crate::api::object::label;
use crate::api::versions::run_version;
use crate::api::Action;
use crate::api::WorkflowType;
use crate::api::{finalizers, labels, promise_api, KindInfo, Object, ObjectKey, Promise};

use decide::{waiting_for_promise, PENDING};

use crate::controllers::lookups;
use crate::controllers::now_ms;
use crate::controllers::promise;
use crate::controllers::status;
use crate::controllers::subject::Subject;
use crate::controllers::work;
use crate::controllers::workflow;
use crate::controllers::workflow::decide::suspended_label::{self, LabelChange};
use crate::controllers::workflow::intervals;
use crate::controllers::workflow::keyed_status;
use crate::controllers::workflow::pausing;
use crate::controllers::Error;
use crate::controllers::Next;
use crate::controllers::Runtime;

/// How soon a request whose binding names no revision (yet) looks again.
const REVISION_RETRY: std::time::Duration = std::time::Duration::from_secs(5);

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
    let key = ObjectKey::of(&obj);
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
            let message = unresolved.to_string();
            status::update_status(rt.cp.as_ref(), kind, &key, |_, s| {
                status::set_field(s, "message", json!(message));
            })
            .await?;
            return Ok(Next::After(REVISION_RETRY));
        }
        // A request going away is not held up by a missing revision.
        Err(_) => binding::Pinned {
            promise: promise_obj.clone(),
            bound: None,
        },
    };
    let promise: Promise = crate::api::object::to_typed(&pinned.promise)
        .map_err(|source| Error::malformed(&promise_obj, "Promise", source))?;
    let promise_generation = promise_obj.metadata.generation;
    let subject = Subject {
        kind: kind.clone(),
        promise_name: promise_name.clone(),
        workflow_type: WorkflowType::Resource,
        hash: resource_hash(&spec_hash(&pinned.promise.data), &spec_hash(&obj.data)),
        promise_version: run_version(pinned.version()).to_string(),
        object: obj.clone(),
    };
    // A status of the earlier flat layout is migrated first: the workflows go on from it.
    let action = match obj.metadata.deletion_timestamp {
        Some(_) => Action::Delete,
        None => Action::Configure,
    };
    let current = promise::pipelines(&promise, WorkflowType::Resource, action)?;
    if keyed_status::migrate(rt, &subject, action, &current).await? {
        return Ok(Next::Done);
    }
    // Paused (by its own label or its Promise's) before anything else, deletion included.
    let pause = pausing::decision_for(&obj, Some(&promise_obj));
    if let Some(next) = pausing::act(rt, &subject, pause).await? {
        return Ok(next);
    }
    if obj.metadata.deletion_timestamp.is_some() {
        return teardown(rt, &subject, &promise).await;
    }
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

    let available = crate::api::promise::is_available(&promise_obj);
    if !available {
        // The Promise's change wakes its requests again once it is available.
        let conditions = waiting_for_promise(&promise_name);
        status::update_status(rt.cp.as_ref(), kind, &key, |_, s| {
            status::set_conditions(s, conditions.clone());
            status::set_field(s, "message", json!(PENDING));
        })
        .await?;
        return Ok(Next::Done);
    }

    let configure = promise::pipelines(&promise, WorkflowType::Resource, Action::Configure)?;
    let names = keyed_status::names(&configure);
    // Observe: the workflow's runs and Works, where their files landed, the request's health.
    let (runs, request_works) = workflow::observe_configure(rt, &subject).await?;
    let now = now_ms();
    let retry_failures = rt.settings.intervals.after_failure;
    let configured =
        workflow::plan_configure(&subject, &names, &runs, &request_works, retry_failures, now);
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
        promise_generation,
        landed: &landed,
        health: health.as_ref(),
        versions: binding::request_versions(&pinned, outcome),
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
    });
    // Act: the run it starts and the Works that go, the binding, then the request's status in
    // one write, and last its labels (whoever waits for the manual-reconciliation label to go
    // must then see the re-run in progress, not the previous run's outcome).
    workflow::carry_out_configure(rt, &subject, &configure, &configured, &runs).await?;
    binding::record(rt, &obj, &pinned, outcome, health.as_ref()).await?;
    let stored =
        status::update_status_of(rt.cp.as_ref(), kind, &obj, |_, s| decision.status.apply(s))
            .await?;
    if let Some(stored) =
        stored.filter(|s| s.metadata.resource_version != obj.metadata.resource_version)
    {
        rt.wrote_own_status(&stored);
    }
    // The `kratix.io/workflow-suspended` label in the same write.
    let suspended = configured.decided.suspended_label;
    if decision.clear_manual_label || decision.rerun_label || suspended != LabelChange::Keep {
        if decision.rerun_label {
            tracing::info!(object = %key, "reconciliation interval passed; running the workflow again");
        }
        status::update_object(rt.cp.as_ref(), kind, &key, |o| {
            if decision.rerun_label {
                intervals::label_for_rerun(o);
            } else if decision.clear_manual_label {
                if let Some(l) = o.metadata.labels.as_mut() {
                    l.remove(labels::MANUAL_RECONCILIATION);
                }
            }
            suspended_label::apply(suspended, o);
        })
        .await?;
    }
    Ok(decision.next)
}

/// Delete workflow, then the request's Works (their files leave the stores), then its runs and
/// finally the finalizer.
async fn teardown(rt: &Runtime, subject: &Subject, promise: &Promise) -> Result<Next, Error> {
    let delete = promise::pipelines(promise, WorkflowType::Resource, Action::Delete)?;
    if let Some(next) = workflow::delete(rt, subject, &delete).await? {
        return Ok(next);
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
