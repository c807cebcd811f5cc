//! The Promise controller: static dependencies, the promise configure workflow, availability,
//! and the ordered teardown (requests first, then the promise delete workflow, then its Works).

mod decide;
pub(crate) mod error;
pub(crate) mod release;
pub(crate) mod requirements;
pub(crate) mod revision;
pub(crate) mod summary;

use crate::events::{self, Reason};
use crate::platform::builtin;

use crate::api::hash::spec_hash;
use crate::api::object::label;
use crate::api::pipeline::Pipeline;
use crate::api::promise::RequiredBy;
use crate::api::versions::run_version;
use crate::api::Action;
use crate::api::WorkflowType;
use crate::api::{
    finalizers, labels, promise_api, Object, ObjectKey, Promise, PromiseStatus, GROUP,
};
use crate::store::Selector;

use crate::controllers::lookups;
use crate::controllers::promise::requirements::Installed;
use crate::controllers::promise::requirements::Requirements;
use crate::controllers::status;
use crate::controllers::subject::Subject;
use crate::controllers::work;
use crate::controllers::workflow;
use crate::controllers::workflow::decide::gate::{self, ExitStatus};
use crate::controllers::workflow::owner::{self, Owner, Planned, Prepared};
use crate::controllers::workflow::pausing;
use crate::controllers::Error;
use crate::controllers::Next;
use crate::controllers::Runtime;

fn typed(obj: &Object) -> Result<Promise, Error> {
    crate::api::object::to_typed(obj).map_err(|source| Error::malformed(obj, "Promise", source))
}

/// The pipelines of one of a Promise's workflows.
pub(crate) fn pipelines(
    promise: &Promise,
    ty: WorkflowType,
    action: Action,
) -> Result<Vec<Pipeline>, Error> {
    let Some(workflows) = &promise.spec.workflows else {
        return Ok(vec![]);
    };
    let actions = match ty {
        WorkflowType::Promise => &workflows.promise,
        WorkflowType::Resource => &workflows.resource,
    };
    let Some(actions) = actions else {
        return Ok(vec![]);
    };
    let list = match action {
        Action::Configure => &actions.configure,
        Action::Delete => &actions.delete,
    };
    let path = format!("spec.workflows.{}.{}", ty.as_str(), action.as_str());
    Pipeline::parse_list(&path, list).map_err(|source| {
        error::Error::InvalidWorkflows {
            key: ObjectKey::new(
                GROUP,
                "Promise",
                None,
                promise.metadata.name.as_deref().unwrap_or_default(),
            ),
            source,
        }
        .into()
    })
}

pub(crate) async fn reconcile(rt: &Runtime, obj: Object) -> Result<Next, Error> {
    let promise = typed(&obj)?;
    let name = obj.metadata.name.clone().unwrap_or_default();
    let subject = Subject {
        kind: builtin(crate::api::Builtin::Promise),
        promise_name: name,
        workflow_type: WorkflowType::Promise,
        hash: spec_hash(&obj.data),
        promise_version: run_version(label(&obj, labels::PROMISE_VERSION)).to_string(),
        object: obj.clone(),
    };
    let pause = pausing::decision_for(&obj, None);
    owner::reconcile(rt, &PromiseOwner { promise }, subject, pause).await
}

/// Writes what the reconcile decided about the Promise (its one status write, and its labels).
async fn act(
    rt: &Runtime,
    obj: &Object,
    decision: &gate::Decision<decide::StatusChange<'_>>,
) -> Result<Next, Error> {
    let kind = builtin(crate::api::Builtin::Promise);
    workflow::write(rt, &kind, obj, decision, decide::StatusChange::apply).await?;
    Ok(decision.next)
}

/// A Promise, as the shared reconcile sees it.
struct PromiseOwner {
    promise: Promise,
}

/// What a Promise's preconditions found.
struct Ready {
    before: PromiseStatus,
    requirements: Requirements,
    required_by: Vec<RequiredBy>,
    version: String,
}

impl Owner for PromiseOwner {
    type Ready = Ready;

    fn pipelines(&self, action: Action) -> Result<Vec<Pipeline>, Error> {
        pipelines(&self.promise, WorkflowType::Promise, action)
    }

    fn interval_source<'a>(&'a self, subject: &'a Subject) -> &'a Object {
        &subject.object
    }

    async fn exit(
        &self,
        rt: &Runtime,
        obj: &Object,
        status: ExitStatus<'_>,
    ) -> Result<Next, Error> {
        act(rt, obj, &decide::exit(status)).await
    }

    async fn teardown(&self, rt: &Runtime, subject: &Subject) -> Result<Next, Error> {
        teardown(rt, subject, &self.promise).await
    }

    /// Its finalizer, its request kind, its current revision, then its requirements.
    async fn prepare(&self, rt: &Runtime, subject: Subject) -> Result<Prepared<Ready>, Error> {
        let promise = &self.promise;
        let name = &subject.promise_name;
        let Some(obj) = status::add_finalizer(
            rt.cp.as_ref(),
            &subject.kind,
            &subject.object,
            finalizers::WORKFLOWS,
        )
        .await?
        else {
            return Ok(Prepared::Done(Next::Done));
        };
        // Requests of the Promise's kind can be stored once the control plane knows the kind,
        // even while the Promise waits for its requirements (they wait with it), as in Kratix.
        if let (Some(api), Ok(Some(_))) = (&promise.spec.api, promise_api::request_kind(promise)) {
            rt.cp.register_kind(name, api).await?;
        }
        // Its current version's revision, before any request looks for it.
        revision::sync(rt, &obj).await?;

        let version = summary::version_of(&obj);
        let requirements = requirements_of(rt, promise, &obj).await?;
        let before: PromiseStatus = status::status_or_default(&obj);
        let required_by = summary::required_by(name, &lookups::typed_promises(rt).await?);
        if !requirements.fulfilled() {
            if let Some(message) = newly_unfulfilled(&before, &requirements) {
                events::record(&rt.cp, &obj, Reason::RequirementsNotFulfilled, &message).await;
            }
            let decision = decide::unfulfilled(&decide::Unfulfilled {
                requirements: &requirements,
                generation: obj.metadata.generation,
                version: &version,
                required_by: &required_by,
                before: &before,
            });
            return Ok(Prepared::Done(act(rt, &obj, &decision).await?));
        }
        work::sync_static_dependencies(rt, promise).await?;
        let subject = Subject {
            object: obj,
            ..subject
        };
        let ready = Ready {
            before,
            requirements,
            required_by,
            version,
        };
        Ok(Prepared::Ready(Box::new(subject), ready))
    }

    /// Its decision; then its status in one write, the plan carried out, its event, and its
    /// labels.
    async fn conclude(
        &self,
        rt: &Runtime,
        subject: &Subject,
        ready: Ready,
        planned: &Planned,
    ) -> Result<Next, Error> {
        let obj = &subject.object;
        let decision = decide::decide(&decide::Observed {
            configured: &planned.configured,
            names: &planned.names,
            hash: &subject.hash,
            generation: obj.metadata.generation,
            before: &ready.before,
            requirements: &ready.requirements,
            required_by: &ready.required_by,
            version: &ready.version,
            api: promise_api::request_kind(&self.promise)
                .ok()
                .flatten()
                .map(|api| {
                    (
                        api.kind.kind.clone(),
                        api.kind.api_version().to_ascii_lowercase(),
                    )
                }),
            interval: planned.interval,
            retry_failures: planned.retry_failures,
            now_ms: planned.now_ms,
            carried: planned.carried(),
            reconcile_resources: label(obj, labels::RECONCILE_RESOURCES) == Some("true"),
        });
        let (kind, name) = (&subject.kind, &subject.promise_name);
        let write = &decision.write;
        if write.labels.rerun {
            tracing::info!(promise = %name, "reconciliation interval passed; running the workflow again");
        }
        // The status first: the run the plan starts reads the Promise as stored, with what
        // the pipelines before it wrote in their status.yaml carried over. Then the run and
        // the Works that go, the event, and last the labels.
        workflow::write(rt, kind, obj, &write.status_only(), |change, s| {
            change.apply(s);
        })
        .await?;
        planned.carry_out(rt, subject).await?;
        if decision.became_available {
            events::record(
                &rt.cp,
                obj,
                Reason::PromiseAvailable,
                "Ready to fulfil resource requests",
            )
            .await;
        }
        if write.labels.clear_reconcile_resources {
            // Its change wakes every request, which labels itself for the re-run.
            tracing::info!(promise = %name, "every request runs its workflow again");
        }
        workflow::write(rt, kind, obj, &write.labels_only(), |(), _| {}).await?;
        Ok(write.next)
    }
}

/// The message of a `RequirementsNotFulfilled` event when the requirements were fulfilled (or
/// said something else) before; `None` when nothing changed.
fn newly_unfulfilled(before: &PromiseStatus, requirements: &Requirements) -> Option<String> {
    let now = requirements.condition.as_ref()?;
    let was = before
        .conditions
        .iter()
        .find(|c| c.type_ == requirements::REQUIREMENTS_FULFILLED);
    match was {
        Some(c) if c.status == now.status && c.message == now.message => None,
        _ => Some(now.message.clone()),
    }
}

/// Where each of the Promise's required Promises stands.
async fn requirements_of(
    rt: &Runtime,
    promise: &Promise,
    obj: &Object,
) -> Result<Requirements, Error> {
    let mut found = Vec::new();
    for required in &promise.spec.required_promises {
        if let Some(p) = lookups::promise(rt, &required.name).await? {
            found.push(p);
        }
    }
    let current: PromiseStatus = status::status_or_default(obj);
    let had_requirements = !current.required_promises.is_empty()
        || current
            .conditions
            .iter()
            .any(|c| c.type_ == requirements::REQUIREMENTS_FULFILLED);
    let installed = |name: &str| {
        found
            .iter()
            .find(|p| p.metadata.name.as_deref() == Some(name))
            .map(|p| Installed {
                version: crate::api::object::label(p, labels::PROMISE_VERSION),
                available: crate::api::promise::is_available(p),
            })
    };
    Ok(requirements::evaluate(
        &promise.spec.required_promises,
        installed,
        had_requirements,
    ))
}

/// Requests first (their delete workflows need the Promise), then the promise delete workflow,
/// then every Work of the Promise (their files leave the state stores), then the finalizer.
async fn teardown(rt: &Runtime, subject: &Subject, promise: &Promise) -> Result<Next, Error> {
    let kind = builtin(crate::api::Builtin::Promise);
    if let Some(request_kind) = promise_api::request_kind(promise)
        .ok()
        .flatten()
        .map(|a| a.kind)
    {
        let requests = rt
            .cp
            .list(&request_kind, None, &Selector::everything())
            .await?;
        if !requests.is_empty() {
            for r in &requests {
                if r.metadata.deletion_timestamp.is_none() {
                    status::delete_if_present(rt.cp.as_ref(), &request_kind, r).await?;
                }
            }
            let message = format!("deleting {} requests", requests.len());
            act(
                rt,
                &subject.object,
                &decide::exit(ExitStatus::Message(message)),
            )
            .await?;
            // Each request's deletion wakes this Promise again.
            return Ok(Next::Done);
        }
    }
    let delete = pipelines(promise, WorkflowType::Promise, Action::Delete)?;
    let stored = match workflow::delete_step(rt, subject, &delete).await? {
        workflow::DeleteStep::Running(next) => return Ok(next),
        workflow::DeleteStep::Finished(stored) => stored,
    };
    let remaining = work::delete_all_of_promise(rt, &subject.promise_name).await?;
    if remaining > 0 {
        let message = format!("removing files of {remaining} Works");
        let current = stored.as_deref().unwrap_or(&subject.object);
        act(rt, current, &decide::exit(ExitStatus::Message(message))).await?;
        // Each Work's deletion wakes this Promise again.
        return Ok(Next::Done);
    }
    crate::controllers::workflow::runs::delete_runs(rt, subject).await?;
    rt.pipelines.sweep(&subject.owner()).await?;
    if let Ok(Some(api)) = promise_api::request_kind(promise) {
        rt.cp.remove_kind(&subject.promise_name, &api.kind).await?;
    }
    revision::delete_all(rt, &subject.promise_name).await?;
    status::remove_finalizer(
        rt.cp.as_ref(),
        &kind,
        &subject.object,
        finalizers::WORKFLOWS,
    )
    .await?;
    events::record(
        &rt.cp,
        &subject.object,
        Reason::Deleted,
        "delete workflow ran and every file of the Promise was removed",
    )
    .await;
    Ok(Next::Done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{Condition, ConditionStatus};

    #[test]
    fn requirements_not_fulfilled_is_recorded_on_a_change_only() {
        let unfulfilled = |message: &str| {
            Condition::new(
                requirements::REQUIREMENTS_FULFILLED,
                ConditionStatus::False,
                "RequirementsNotInstalled",
                message,
            )
        };
        let fulfilled = Condition::new(
            requirements::REQUIREMENTS_FULFILLED,
            ConditionStatus::True,
            "RequirementsInstalled",
            "ok",
        );
        let before = |c: Option<Condition>| PromiseStatus {
            conditions: c.into_iter().collect(),
            ..PromiseStatus::default()
        };
        let now = |c: Option<Condition>| Requirements {
            statuses: vec![],
            condition: c,
        };
        let cases = [
            (
                "first time",
                before(None),
                now(Some(unfulfilled("a"))),
                Some("a"),
            ),
            (
                "was fulfilled",
                before(Some(fulfilled.clone())),
                now(Some(unfulfilled("a"))),
                Some("a"),
            ),
            (
                "same as before",
                before(Some(unfulfilled("a"))),
                now(Some(unfulfilled("a"))),
                None,
            ),
            (
                "another reason",
                before(Some(unfulfilled("a"))),
                now(Some(unfulfilled("b"))),
                Some("b"),
            ),
            ("requires nothing", before(None), now(None), None),
        ];
        for (name, before, now, want) in cases {
            assert_eq!(newly_unfulfilled(&before, &now).as_deref(), want, "{name}");
        }
    }
}
