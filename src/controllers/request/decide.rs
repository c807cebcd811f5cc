//! What a request's reconcile decides, with no I/O: from what it observed (its Promise, its
//! configure workflow's runs and Works, where their files landed, its health), the request's
//! whole new status, the labels it sets or clears, and when to look again; and the status of
//! each early end (binding unresolved, Promise unavailable, and those it shares with Promises:
//! see [`gate`]). The reconcile writes the status once.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::{json, Value};

use crate::api::words::types;
use crate::api::workflow_status::{Landing, PipelineStatusEntry};
use crate::api::Action;
use crate::api::{Condition, ConditionStatus};
use crate::controllers::workflow::decide;
use crate::controllers::workflow::decide::KeyedInputs;
use crate::controllers::workflow::decide::Step;
use crate::controllers::workflow::decide::CONFIGURE_WORKFLOW_COMPLETED;

use crate::controllers::kube_time;
use crate::controllers::next::Next;
use crate::controllers::request::binding::decide::Outcome;
use crate::controllers::request::binding::decide::RequestVersions;
use crate::controllers::status_value as status;
use crate::controllers::workflow::decide::carry_over::CarryOver;
use crate::controllers::workflow::decide::gate::{self, ExitStatus, Labels};
use crate::controllers::workflow::decide::intervals;
use crate::controllers::workflow::decide::keyed_status;
use crate::controllers::workflow::decide::plan;
use crate::controllers::workflow::decide::plan::finished;
use crate::controllers::workflow::decide::plan::Configured;

/// `status.message` while the request waits (for its Promise, or its first workflow).
pub(super) const PENDING: &str = "Pending";

/// The request's `PromiseAvailable` condition.
pub(super) fn promise_available_condition(available: bool, promise_name: &str) -> Condition {
    if available {
        Condition::new(
            types::PROMISE_AVAILABLE,
            ConditionStatus::True,
            "PromiseAvailable",
            "Promise is available",
        )
    } else {
        Condition::new(
            types::PROMISE_AVAILABLE,
            ConditionStatus::False,
            "PromiseNotAvailable",
            &format!("Promise {promise_name} is not available yet"),
        )
    }
}

/// The request's `status.message` to write, if it changes: `Pending` while its first workflow
/// runs, `Resource requested` once it completed or when its Promise has no configure workflow
/// (so that it agrees with `Reconciled`) — unless a pipeline wrote a message of its own.
pub(super) fn request_message(step: &Step, current: Option<&Value>) -> Option<&'static str> {
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
pub(super) fn waiting_for_promise(promise_name: &str) -> Vec<Condition> {
    vec![
        promise_available_condition(false, promise_name),
        Condition::new(
            decide::RECONCILED,
            ConditionStatus::Unknown,
            "PromiseNotAvailable",
            PENDING,
        ),
    ]
}

/// What a request's configure reconcile observed, beside its workflow's plan.
#[derive(Debug)]
pub(super) struct Observed<'a> {
    pub(crate) configured: &'a Configured,
    /// The configure workflow's pipelines, by name.
    pub(crate) names: &'a [String],
    pub(crate) hash: &'a str,
    pub(crate) generation: Option<i64>,
    pub(crate) promise_name: &'a str,
    /// The generation of the Promise the request's status is written for.
    pub(crate) promise_generation: Option<i64>,
    /// Per pipeline, where its files landed.
    pub(crate) landed: &'a HashMap<String, Vec<Landing>>,
    /// `status.healthStatus` as it should be now.
    pub(crate) health: Option<&'a Value>,
    /// For a request of a versioned Promise: the versions it records (see
    /// [`crate::controllers::request::binding::request_versions`]).
    pub(crate) versions: Option<RequestVersions>,
    /// The periodic re-run: the delay until it is due, or whether it is due now.
    pub(crate) interval: (Option<Duration>, bool),
    pub(crate) retry_failures: bool,
    pub(crate) now_ms: i64,
    /// The `status.yaml` files its runs recorded.
    pub(crate) carried: CarryOver<'a>,
    /// Its Promise's asks that every request run again, and the last it acted on (see
    /// [`intervals::request_acts_on`]).
    pub(crate) asks: (Option<i64>, Option<i64>),
    /// Whether its status records an earlier reconcile (`observedGeneration`).
    pub(crate) reconciled_before: bool,
}

/// What the reconcile does about the request itself: its status, labels and next look.
pub(super) type Decision<'a> = gate::Decision<StatusChange<'a>>;

/// How soon a request whose binding names no revision (yet) looks again.
const REVISION_RETRY: Duration = Duration::from_secs(5);

/// An early end of the reconcile (see [`gate::Gate`]).
pub(super) fn exit(status: ExitStatus<'_>) -> Decision<'_> {
    gate::exit(status).map(StatusChange::Exit)
}

/// A request whose binding names no revision (yet): it says why, and looks again soon.
pub(super) fn unresolved(message: String) -> Decision<'static> {
    exit(ExitStatus::Message(message)).then(Next::After(REVISION_RETRY))
}

/// A request whose Promise is not available: it waits, and the Promise's change wakes it again
/// once it is.
pub(super) fn waiting_for<'a>(promise_name: &'a str, carried: CarryOver<'a>) -> Decision<'a> {
    Decision {
        status: Some(StatusChange::WaitingForPromise {
            promise_name,
            carried,
        }),
        labels: Labels::KEEP,
        labels_first: false,
        next: Next::Done,
    }
}

/// The request's new status, applied to the status as stored (a write that conflicts applies it
/// again to the newer one).
#[derive(Debug)]
pub(super) enum StatusChange<'a> {
    /// An early end, as for Promises.
    Exit(ExitStatus<'a>),
    /// Its Promise is not available: `Pending`, saying which Promise it waits for.
    WaitingForPromise {
        promise_name: &'a str,
        carried: CarryOver<'a>,
    },
    /// Its configure workflow, as [`decide`] decided.
    Configure(Box<ConfigureStatus<'a>>),
}

impl StatusChange<'_> {
    pub(super) fn apply(&self, s: &mut Value) {
        match self {
            StatusChange::Exit(exit) => exit.apply(s),
            StatusChange::WaitingForPromise {
                promise_name,
                carried,
            } => {
                carried.apply(s);
                status::set_conditions(s, waiting_for_promise(promise_name));
                status::set_field(s, "message", json!(PENDING));
            }
            StatusChange::Configure(change) => change.apply(s),
        }
    }
}

/// How the request's binding sees its workflow: its outcome, with the failed pipeline's message.
pub(super) fn binding_outcome(configured: &Configured) -> Outcome<'_> {
    let failure = crate::api::condition::find(&configured.conditions, CONFIGURE_WORKFLOW_COMPLETED)
        .map(|c| c.message.as_str())
        .unwrap_or_default();
    Outcome::of(configured.step(), failure)
}

/// Decides the request's status, labels and next look from what it observed.
pub(super) fn decide<'a>(o: &Observed<'a>) -> Decision<'a> {
    let configured = o.configured;
    let step = configured.step();
    let mut conditions = configured.conditions.clone();
    conditions.push(promise_available_condition(true, o.promise_name));
    if finished(step) {
        conditions.push(crate::controllers::work::state::works_succeeded_condition(
            configured.works_state,
        ));
    }
    let pipelines: Vec<PipelineStatusEntry> = decide::pipeline_statuses(
        Action::Configure,
        o.names,
        &configured.records,
        o.hash,
        o.retry_failures,
    )
    .into_iter()
    .map(|s| PipelineStatusEntry {
        destinations: o.landed.get(&s.name).cloned(),
        name: s.name,
        phase: s.phase.as_str(),
        attempts: s.attempts,
        message: s.message,
        next_retry_at: s.next_retry_at_ms.and_then(kube_time::rfc3339_secs),
    })
    .collect();
    let keyed = configured.keyed_inputs(o.names, o.hash, o.retry_failures, o.generation, o.now_ms);
    let (periodic, interval_due) = o.interval;
    let (promise_asks, own_asks) = o.asks;
    let (asked, record_asks) = intervals::request_acts_on(
        promise_asks,
        own_asks,
        o.reconciled_before,
        configured.decided.manual,
    );
    let rerun_label = interval_due || asked;
    let next =
        plan::sooner(plan::wake_after_at(step, o.now_ms), periodic).map_or(Next::Done, Next::After);
    Decision {
        status: Some(StatusChange::Configure(Box::new(ConfigureStatus {
            carried: o.carried.clone(),
            conditions,
            keyed,
            health: o.health.cloned(),
            generation: o.generation,
            promise_generation: o.promise_generation,
            pipelines: serde_json::to_value(&pipelines).unwrap_or(Value::Null),
            workflows: o.names.len(),
            step,
            versions: o.versions.clone(),
            asks: record_asks,
        }))),
        labels: Labels {
            rerun: rerun_label,
            clear_manual: configured.decided.clears_manual_label(),
            suspended: configured.decided.suspended_label,
            clear_reconcile_resources: false,
        },
        labels_first: false,
        next,
    }
}

/// The request's status as its configure workflow stands.
#[derive(Debug)]
pub(super) struct ConfigureStatus<'a> {
    carried: CarryOver<'a>,
    conditions: Vec<Condition>,
    keyed: KeyedInputs<'a>,
    health: Option<Value>,
    generation: Option<i64>,
    promise_generation: Option<i64>,
    pipelines: Value,
    workflows: usize,
    step: &'a Step,
    versions: Option<RequestVersions>,
    /// Its Promise's ask it now records as acted on.
    asks: Option<i64>,
}

impl ConfigureStatus<'_> {
    pub(super) fn apply(&self, s: &mut Value) {
        // What the pipelines wrote first: the workflow's own fields are the reconcile's.
        self.carried.apply(s);
        status::set_conditions(s, self.conditions.clone());
        keyed_status::update(s, &self.keyed);
        if let Some(health) = &self.health {
            status::set_field(s, "healthStatus", health.clone());
        }
        status::set_field(s, "observedGeneration", json!(self.generation));
        // Lets waiting commands tell a status written for the current Promise from an older one.
        status::set_field(
            s,
            "observedPromiseGeneration",
            json!(self.promise_generation),
        );
        status::set_field(s, "pipelines", self.pipelines.clone());
        status::set_field(s, "workflows", json!(self.workflows));
        if let Some(message) = request_message(self.step, s.get("message")) {
            status::set_field(s, "message", json!(message));
        }
        if let Some(versions) = &self.versions {
            versions.apply(s);
        }
        if let Some(asks) = self.asks {
            intervals::set_asks(s, asks);
        }
    }
}

#[cfg(test)]
mod tests;
