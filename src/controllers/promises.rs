//! The Promise controller: static dependencies, the promise configure workflow, availability,
//! and the ordered teardown (requests first, then the promise delete workflow, then its Works).

use serde_json::{json, Value};

use crate::api::hash::spec_hash;
use crate::api::pipeline::Pipeline;
use crate::api::{labels, promise_api, KindInfo, Object, ObjectKey, Promise, GROUP};
use crate::store::Selector;
use crate::workflow::{self, Action, Step, WorkflowType};

use super::workflows::{self, Subject};
use super::{status, works, Error, Next, Runtime};

pub const FINALIZER: &str = "kratix.io/workflows-cleanup";

pub async fn get(rt: &Runtime, name: &str) -> Result<Option<Object>, Error> {
    Ok(rt.cp.get(&rt.kind("Promise"), None, name).await?)
}

/// The request kind a Promise defines, if it exists and defines one.
pub async fn request_kind_of(rt: &Runtime, promise_name: &str) -> Result<Option<KindInfo>, Error> {
    let Some(obj) = get(rt, promise_name).await? else {
        return Ok(None);
    };
    Ok(promise_api::kinds_from_promises(std::slice::from_ref(&obj))
        .into_iter()
        .next())
}

/// Keys of every request of a Promise.
pub async fn request_keys(rt: &Runtime, promise_name: &str) -> Result<Vec<ObjectKey>, Error> {
    let Some(kind) = request_kind_of(rt, promise_name).await? else {
        return Ok(vec![]);
    };
    Ok(rt
        .cp
        .list(&kind, None, &Selector::everything())
        .await?
        .iter()
        .map(ObjectKey::of)
        .collect())
}

fn typed(obj: &Object) -> Result<Promise, Error> {
    crate::api::object::to_typed(obj).map_err(|e| Error::Malformed {
        key: ObjectKey::of(obj),
        kind: "Promise".into(),
        reason: e.to_string(),
    })
}

/// The pipelines of one of a Promise's workflows.
pub fn pipelines(
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
    Pipeline::parse_list(&path, list).map_err(|e| Error::Malformed {
        key: ObjectKey::new(
            GROUP,
            "Promise",
            None,
            promise.metadata.name.as_deref().unwrap_or_default(),
        ),
        kind: "Promise".into(),
        reason: e.to_string(),
    })
}

pub async fn reconcile(rt: &Runtime, obj: Object) -> Result<Next, Error> {
    let promise = typed(&obj)?;
    let name = obj.metadata.name.clone().unwrap_or_default();
    let kind = rt.kind("Promise");
    let subject = Subject {
        kind: kind.clone(),
        promise_name: name.clone(),
        workflow_type: WorkflowType::Promise,
        hash: spec_hash(&obj.data),
        object: obj.clone(),
    };
    if obj.metadata.deletion_timestamp.is_some() {
        return teardown(rt, &subject, &promise).await;
    }
    let Some(obj) = status::add_finalizer(rt.cp.as_ref(), &kind, &obj, FINALIZER).await? else {
        return Ok(Next::Done);
    };
    let subject = Subject {
        object: obj.clone(),
        ..subject
    };

    works::sync_static_dependencies(rt, &promise).await?;

    let configure = pipelines(&promise, WorkflowType::Promise, Action::Configure)?;
    let (step, records) = workflows::drive(rt, &subject, Action::Configure, &configure).await?;
    let runs = workflows::runs_of(rt, &subject).await?;
    let mut promise_works = works::works_of(rt, &subject).await?;
    // With no pipelines left the workflow is done at once: the Works of the removed ones go too.
    if matches!(step, Step::Completed { .. } | Step::NothingToRun)
        && works::delete_obsolete(rt, &promise_works, &configure).await?
    {
        promise_works = works::works_of(rt, &subject).await?;
    }
    let works_state = works::works_state(&promise_works);
    let exit_reason = workflows::failure_reason(&runs, &step);
    let mut conditions = workflow::configure_conditions(&step, &exit_reason, works_state);
    let available = matches!(step, Step::Completed { .. } | Step::NothingToRun);
    conditions.push(crate::api::Condition::new(
        "Available",
        if available {
            crate::api::ConditionStatus::True
        } else {
            crate::api::ConditionStatus::False
        },
        if available {
            "PromiseAvailable"
        } else {
            "PromiseUnavailable"
        },
        if available {
            "Ready to fulfil resource requests"
        } else {
            "Promise configure workflow has not completed"
        },
    ));
    conditions.push(works::works_succeeded_condition(works_state));
    let api = promise_api::request_kind(&promise).ok().flatten();
    let generation = obj.metadata.generation;
    let pipelines_status =
        workflows::pipelines_status(Action::Configure, &configure, &records, &subject.hash);
    let version = crate::api::object::label(&obj, labels::PROMISE_VERSION)
        .unwrap_or("not-set")
        .to_string();
    status::update_status(rt.cp.as_ref(), &kind, &subject.key(), |_, s| {
        status::set_conditions(s, conditions.clone());
        status::set_field(s, "observedGeneration", json!(generation));
        status::set_field(
            s,
            "status",
            json!(if available {
                "Available"
            } else {
                "Unavailable"
            }),
        );
        status::set_field(s, "version", json!(version));
        if let Some(api) = &api {
            status::set_field(s, "kind", json!(api.kind.kind));
            status::set_field(
                s,
                "apiVersion",
                json!(api.kind.api_version().to_ascii_lowercase()),
            );
        }
        status::set_field(s, "workflows", json!(configure.len()));
        status::set_field(s, "pipelines", pipelines_status.clone());
        if matches!(step, Step::Completed { .. }) {
            status::set_field(s, "message", json!("Promise configured"));
        }
    })
    .await?;
    Ok(workflows::wake_after(&step).map_or(Next::Done, Next::After))
}

/// Requests first (their delete workflows need the Promise), then the promise delete workflow,
/// then every Work of the Promise (their files leave the state stores), then the finalizer.
async fn teardown(rt: &Runtime, subject: &Subject, promise: &Promise) -> Result<Next, Error> {
    let kind = rt.kind("Promise");
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
            set_message(
                rt,
                subject,
                &format!("deleting {} requests", requests.len()),
            )
            .await?;
            // Each request's deletion wakes this Promise again.
            return Ok(Next::Done);
        }
    }
    let delete = pipelines(promise, WorkflowType::Promise, Action::Delete)?;
    let (step, _) = workflows::drive(rt, subject, Action::Delete, &delete).await?;
    let runs = workflows::runs_of(rt, subject).await?;
    let condition = workflow::delete_condition(&step, &workflows::failure_reason(&runs, &step));
    status::update_status(rt.cp.as_ref(), &kind, &subject.key(), |_, s| {
        status::set_conditions(s, [condition.clone()]);
    })
    .await?;
    match step {
        Step::Completed { .. } | Step::NothingToRun => {}
        other => return Ok(workflows::wake_after(&other).map_or(Next::Done, Next::After)),
    }
    let remaining = works::delete_all_of_promise(rt, &subject.promise_name).await?;
    if remaining > 0 {
        set_message(rt, subject, &format!("removing files of {remaining} Works")).await?;
        // Each Work's deletion wakes this Promise again.
        return Ok(Next::Done);
    }
    works::delete_runs(rt, subject).await?;
    status::remove_finalizer(rt.cp.as_ref(), &kind, &subject.object, FINALIZER).await?;
    Ok(Next::Done)
}

async fn set_message(rt: &Runtime, subject: &Subject, message: &str) -> Result<(), Error> {
    status::update_status(rt.cp.as_ref(), &subject.kind, &subject.key(), |_, s| {
        status::set_field(s, "message", Value::String(message.to_string()));
    })
    .await?;
    Ok(())
}
