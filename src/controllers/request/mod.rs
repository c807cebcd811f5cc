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
use crate::api::pipeline::Pipeline;
use crate::api::versions::run_version;
use crate::api::Action;
use crate::api::WorkflowType;
use crate::api::{finalizers, labels, promise_api, KindInfo, Object, Promise};

use decide::Decision;

use crate::controllers::lookups;
use crate::controllers::promise;
use crate::controllers::status;
use crate::controllers::subject::Subject;
use crate::controllers::work;
use crate::controllers::workflow;
use crate::controllers::workflow::decide::gate::ExitStatus;
use crate::controllers::workflow::intervals;
use crate::controllers::workflow::owner::{self, Owner, Planned, Prepared};
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
        promise_name,
        workflow_type: WorkflowType::Resource,
        hash: resource_hash(&spec_hash(&pinned.promise.data), &spec_hash(&obj.data)),
        promise_version: run_version(pinned.version()).to_string(),
        object: obj.clone(),
    };
    // Paused by its own label or its Promise's.
    let pause = pausing::decision_for(&obj, Some(&promise_obj));
    let owner = Request {
        kind,
        promise_obj: &promise_obj,
        promise,
        pinned,
    };
    owner::reconcile(rt, &owner, subject, pause).await
}

/// Writes what the reconcile decided about the request (its one status write, and its labels).
async fn act(
    rt: &Runtime,
    kind: &KindInfo,
    obj: &Object,
    decision: &Decision<'_>,
) -> Result<Next, Error> {
    workflow::write(rt, kind, obj, decision, decide::StatusChange::apply).await?;
    Ok(decision.next)
}

/// A request, as the shared reconcile sees it: its Promise as stored, and the revision it runs
/// with.
struct Request<'p> {
    kind: &'p KindInfo,
    promise_obj: &'p Object,
    promise: Promise,
    pinned: binding::Pinned,
}

impl Owner for Request<'_> {
    type Ready = ();

    fn pipelines(&self, action: Action) -> Result<Vec<Pipeline>, Error> {
        promise::pipelines(&self.promise, WorkflowType::Resource, action)
    }

    /// The interval of the revision the request runs with, as in Kratix.
    fn interval_source<'a>(&'a self, _: &'a Subject) -> &'a Object {
        &self.pinned.promise
    }

    async fn exit(
        &self,
        rt: &Runtime,
        obj: &Object,
        status: ExitStatus<'_>,
    ) -> Result<Next, Error> {
        act(rt, self.kind, obj, &decide::exit(status)).await
    }

    async fn teardown(&self, rt: &Runtime, subject: &Subject) -> Result<Next, Error> {
        teardown(rt, subject, &self.promise).await
    }

    async fn prepare(&self, rt: &Runtime, subject: Subject) -> Result<Prepared<()>, Error> {
        let kind = &subject.kind;
        // Requests carry their Promise's name, as Kratix labels them, however they were stored
        // (kubectl sets no such label): their deletion must wake the Promise. Written together
        // with the finalizer, in one write.
        let Some(obj) = status::add_finalizer_and_label(
            rt.cp.as_ref(),
            kind,
            &subject.object,
            finalizers::WORKFLOWS,
            (labels::PROMISE_NAME, &subject.promise_name),
        )
        .await?
        else {
            return Ok(Prepared::Done(Next::Done));
        };
        let subject = Subject {
            object: obj,
            ..subject
        };
        if !crate::api::promise::is_available(self.promise_obj) {
            // The Promise's change wakes its requests again once it is available.
            let runs = runs_of(rt, &subject).await?;
            let decision = decide::waiting_for(&subject.promise_name, owner::carried(&runs));
            let next = act(rt, &subject.kind, &subject.object, &decision).await?;
            return Ok(Prepared::Done(next));
        }
        Ok(Prepared::Ready(Box::new(subject), ()))
    }

    /// Where its files landed and its health, the decision; then the binding, the request's
    /// status in one write, the plan carried out, and last its labels (whoever waits for the
    /// manual-reconciliation label to go must then see the re-run in progress, not the previous
    /// run's outcome).
    async fn conclude(
        &self,
        rt: &Runtime,
        subject: &Subject,
        (): (),
        planned: &Planned,
    ) -> Result<Next, Error> {
        let obj = &subject.object;
        let configured = &planned.configured;
        let landed = work::where_files_landed(&configured.works);
        let health =
            health::health_status(rt, &subject.promise_name, self.pinned.version(), obj).await?;
        let outcome = decide::binding_outcome(configured);
        let decision = decide::decide(&decide::Observed {
            configured,
            names: &planned.names,
            hash: &subject.hash,
            generation: obj.metadata.generation,
            promise_name: &subject.promise_name,
            promise_generation: self.promise_obj.metadata.generation,
            landed: &landed,
            health: health.as_ref(),
            versions: binding::request_versions(&self.pinned, outcome),
            interval: planned.interval,
            retry_failures: planned.retry_failures,
            now_ms: planned.now_ms,
            carried: planned.carried(),
            asks: (intervals::asks(self.promise_obj), intervals::asks(obj)),
            reconciled_before: obj.data.pointer("/status/observedGeneration").is_some(),
        });
        binding::record(rt, obj, &self.pinned, outcome, health.as_ref()).await?;
        if decision.labels.rerun {
            tracing::info!(object = %subject.key(), "reconciliation interval passed; running the workflow again");
        }
        // The status first: the run the plan starts reads the request as stored, with what the
        // pipelines before it wrote in their status.yaml carried over.
        let stored = workflow::write(rt, &subject.kind, obj, &decision.status_only(), |c, s| {
            c.apply(s);
        })
        .await?;
        if let Some(stored) =
            stored.filter(|s| s.metadata.resource_version != obj.metadata.resource_version)
        {
            rt.wrote_own_status(&stored);
        }
        planned.carry_out(rt, subject).await?;
        workflow::write(rt, &subject.kind, obj, &decision.labels_only(), |(), _| {}).await?;
        Ok(decision.next)
    }
}

/// Delete workflow, then the request's Works (their files leave the stores), then its runs and
/// finally the finalizer.
async fn teardown(rt: &Runtime, subject: &Subject, promise: &Promise) -> Result<Next, Error> {
    let delete = promise::pipelines(promise, WorkflowType::Resource, Action::Delete)?;
    if let workflow::DeleteStep::Running(next) = workflow::delete_step(rt, subject, &delete).await?
    {
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
