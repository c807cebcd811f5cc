//! The controller of every Promise-defined request kind: runs the request's configure workflow
//! once its Promise is available, reports where each pipeline's files landed, and on deletion
//! runs the delete workflow and removes the request's files before letting it go.

use crate::events::{self, Reason};
use serde_json::{json, Value};

use crate::api::hash::{resource_hash, spec_hash};
use crate::api::object::label;
use crate::api::versions::run_version;
use crate::api::{
    finalizers, labels, promise_api, Condition, ConditionStatus, KindInfo, Object, ObjectKey,
    Promise,
};
use crate::workflow::{Action, Step, WorkflowType, CONFIGURE_WORKFLOW_COMPLETED};

use super::lifecycle::{self, Configured};
use super::subject::Subject;
use super::{
    bindings, health, intervals, keyed_status, lookups, pausing, promises, status, workflows,
    works, Error, Next, Runtime,
};

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

pub async fn reconcile(rt: &Runtime, kind: &KindInfo, obj: Object) -> Result<Next, Error> {
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
    let pinned = match bindings::pinned(rt, &promise_obj, &obj).await? {
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
        Err(_) => bindings::Pinned {
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
    let current = promises::pipelines(&promise, WorkflowType::Resource, action)?;
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

    let available = promise_available(
        status::condition_status(&promise_obj, "Available").is_some_and(|(s, _, _)| s == "True"),
        promise_obj.metadata.deletion_timestamp.is_some(),
    );
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

    let configure = promises::pipelines(&promise, WorkflowType::Resource, Action::Configure)?;
    let Configured {
        step,
        records,
        works: request_works,
        works_state,
        mut conditions,
    } = lifecycle::configure(rt, &subject, &configure).await?;
    let failure = crate::api::condition::find(&conditions, CONFIGURE_WORKFLOW_COMPLETED)
        .map(|c| c.message.clone())
        .unwrap_or_default();
    let health = health::health_status(rt, &promise_name, pinned.version(), &obj).await?;
    bindings::record(rt, kind, &obj, &pinned, (&step, &failure), health.as_ref()).await?;
    conditions.push(promise_available_condition(true, &promise_name));
    if lifecycle::finished(&step) {
        conditions.push(works::works_succeeded_condition(works_state));
    }
    let mut pipelines_status =
        workflows::pipelines_status(rt, Action::Configure, &configure, &records, &subject.hash);
    let mut landed = works::where_files_landed(rt, &request_works).await?;
    for entry in &mut pipelines_status {
        entry.destinations = landed.remove(&entry.name);
    }
    let pipelines_status =
        serde_json::to_value(&pipelines_status).map_err(|source| Error::Malformed {
            key: key.clone(),
            kind: kind.kind.clone(),
            source,
        })?;
    let names = keyed_status::names(&configure);
    let keyed = keyed_status::inputs(rt, &subject, Action::Configure, &names, &records, &step);
    status::update_status_of(rt.cp.as_ref(), kind, &obj, |_, s| {
        status::set_conditions(s, conditions.clone());
        keyed_status::update(s, &keyed);
        if let Some(health) = &health {
            status::set_field(s, "healthStatus", health.clone());
        }
        status::set_field(s, "observedGeneration", json!(generation));
        // Lets waiting commands tell a status written for the current Promise from an older one.
        status::set_field(s, "observedPromiseGeneration", json!(promise_generation));
        status::set_field(s, "pipelines", pipelines_status.clone());
        status::set_field(s, "workflows", json!(configure.len()));
        if let Some(message) = request_message(&step, s.get("message")) {
            status::set_field(s, "message", json!(message));
        }
    })
    .await?;
    // The interval of the revision the request runs with, as in Kratix.
    let periodic = intervals::schedule(rt, &subject, &pinned.promise, &step, &records).await?;
    Ok(intervals::sooner(workflows::wake_after(&step), periodic).map_or(Next::Done, Next::After))
}

/// Requests wait for their Promise: it must say `Available` and not be going away.
fn promise_available(says_available: bool, deleting: bool) -> bool {
    says_available && !deleting
}

/// The request's `PromiseAvailable` condition.
fn promise_available_condition(available: bool, promise_name: &str) -> Condition {
    if available {
        Condition::new(
            "PromiseAvailable",
            ConditionStatus::True,
            "PromiseAvailable",
            "Promise is available",
        )
    } else {
        Condition::new(
            "PromiseAvailable",
            ConditionStatus::False,
            "PromiseNotAvailable",
            &format!("Promise {promise_name} is not available yet"),
        )
    }
}

/// `status.message` while the request waits (for its Promise, or its first workflow).
const PENDING: &str = "Pending";

/// The request's `status.message` to write, if it changes: `Pending` while its first workflow
/// runs, `Resource requested` once it completed or when its Promise has no configure workflow
/// (so that it agrees with `Reconciled`) — unless a pipeline wrote a message of its own.
fn request_message(step: &Step, current: Option<&Value>) -> Option<&'static str> {
    match step {
        Step::Completed { .. } | Step::NothingToRun => {
            let current = current.and_then(Value::as_str).unwrap_or(PENDING);
            (current == PENDING).then_some("Resource requested")
        }
        Step::Start { .. } | Step::Wait => current.is_none().then_some(PENDING),
        _ => None,
    }
}

/// The conditions of a request whose Promise is not available: `PromiseAvailable` False, and
/// `Reconciled` Unknown with the same `Pending` as `status.message`, whatever the request's
/// last workflow achieved (it may run again once the Promise is back).
fn waiting_for_promise(promise_name: &str) -> Vec<Condition> {
    vec![
        promise_available_condition(false, promise_name),
        Condition::new(
            crate::workflow::RECONCILED,
            ConditionStatus::Unknown,
            "PromiseNotAvailable",
            PENDING,
        ),
    ]
}

/// Delete workflow, then the request's Works (their files leave the stores), then its runs and
/// finally the finalizer.
async fn teardown(rt: &Runtime, subject: &Subject, promise: &Promise) -> Result<Next, Error> {
    let delete = promises::pipelines(promise, WorkflowType::Resource, Action::Delete)?;
    if let Some(next) = lifecycle::delete(rt, subject, &delete).await? {
        return Ok(next);
    }
    let request_works = works::works_of(rt, subject).await?;
    if !request_works.is_empty() {
        // Each Work's deletion wakes this request again (the runtime remembers owners).
        works::delete_works(rt, &request_works, "delete").await?;
        return Ok(Next::Done);
    }
    works::delete_runs(rt, subject).await?;
    rt.pipelines.sweep(&subject.owner()).await?;
    bindings::delete_of(rt, &subject.promise_name, &subject.object).await?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workflow::StartReason;

    #[test]
    fn requests_wait_for_an_available_promise_that_stays() {
        let cases = [
            ("available", true, false, true),
            ("available but being deleted", true, true, false),
            ("not available", false, false, false),
            ("not available and being deleted", false, true, false),
        ];
        for (name, says_available, deleting, want) in cases {
            assert_eq!(promise_available(says_available, deleting), want, "{name}");
        }
    }

    #[test]
    fn promise_available_condition_names_the_promise_while_waiting() {
        let cases = [
            (
                true,
                ConditionStatus::True,
                "PromiseAvailable",
                "Promise is available",
            ),
            (
                false,
                ConditionStatus::False,
                "PromiseNotAvailable",
                "Promise db is not available yet",
            ),
        ];
        for (available, status, reason, message) in cases {
            let c = promise_available_condition(available, "db");
            assert_eq!(c.type_, "PromiseAvailable", "{available}");
            assert_eq!(
                (c.status, c.reason.as_str(), c.message.as_str()),
                (status, reason, message),
                "{available}"
            );
        }
    }

    #[test]
    fn a_request_waiting_for_its_promise_says_pending_in_reconciled_too() {
        let got: Vec<(String, ConditionStatus, String, String)> = waiting_for_promise("db")
            .into_iter()
            .map(|c| (c.type_, c.status, c.reason, c.message))
            .collect();
        assert_eq!(
            got,
            [
                (
                    "PromiseAvailable".to_string(),
                    ConditionStatus::False,
                    "PromiseNotAvailable".to_string(),
                    "Promise db is not available yet".to_string()
                ),
                (
                    "Reconciled".to_string(),
                    ConditionStatus::Unknown,
                    "PromiseNotAvailable".to_string(),
                    PENDING.to_string()
                ),
            ]
        );
    }

    #[test]
    fn message_says_requested_unless_a_pipeline_said_otherwise() {
        let completed = Step::Completed {
            last_run_sequence: 1,
        };
        let start = Step::Start {
            index: 0,
            reason: StartReason::FirstRun,
        };
        let failed = Step::Failed {
            index: 0,
            pipeline: "a".into(),
            attempts: 1,
            retry_at_ms: None,
        };
        let pending = json!("Pending");
        let custom = json!("db is up");
        let odd = json!(3);
        let cases: Vec<(&str, &Step, Option<&Value>, Option<&str>)> = vec![
            (
                "completed, none yet",
                &completed,
                None,
                Some("Resource requested"),
            ),
            (
                "completed, pending",
                &completed,
                Some(&pending),
                Some("Resource requested"),
            ),
            (
                "completed, not text",
                &completed,
                Some(&odd),
                Some("Resource requested"),
            ),
            ("completed, pipeline's own", &completed, Some(&custom), None),
            ("starting, none yet", &start, None, Some("Pending")),
            ("starting, pipeline's own", &start, Some(&custom), None),
            ("waiting, none yet", &Step::Wait, None, Some("Pending")),
            (
                "nothing to run, none yet",
                &Step::NothingToRun,
                None,
                Some("Resource requested"),
            ),
            (
                "nothing to run, pending",
                &Step::NothingToRun,
                Some(&pending),
                Some("Resource requested"),
            ),
            (
                "nothing to run, pipeline's own",
                &Step::NothingToRun,
                Some(&custom),
                None,
            ),
            ("failed", &failed, Some(&pending), None),
        ];
        for (name, step, current, want) in cases {
            assert_eq!(request_message(step, current), want, "{name}");
        }
    }
}
