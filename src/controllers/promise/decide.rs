//! What a Promise's reconcile decides, with no I/O: once its requirements are fulfilled, from
//! its configure workflow's plan and what it observed, the Promise's whole new status (typed),
//! the event and labels that go with it, and when to look again; and the status of each early
//! end (requirements not fulfilled, and those it shares with requests: see [`gate`]). The
//! reconcile writes the status once.

use std::time::Duration;

use serde_json::{json, Value};

use crate::api::promise::RequiredBy;
use crate::api::promise::RequiredPromiseStatus;
use crate::api::words::promise_status;
use crate::api::workflow_status::PipelineStatusEntry;
use crate::api::Action;
use crate::api::PromiseStatus;
use crate::controllers::workflow::decide;
use crate::controllers::workflow::decide::KeyedInputs;
use crate::controllers::workflow::decide::Step;

use crate::controllers::kube_time;
use crate::controllers::next::Next;
use crate::controllers::promise::requirements::{self, Requirements};
use crate::controllers::promise::summary;
use crate::controllers::promise::summary::Summary;
use crate::controllers::status_value as status;
use crate::controllers::workflow::decide::carry_over::CarryOver;
use crate::controllers::workflow::decide::gate::{self, ExitStatus, Labels};
use crate::controllers::workflow::decide::intervals;
use crate::controllers::workflow::decide::keyed_status;
use crate::controllers::workflow::decide::plan;
use crate::controllers::workflow::decide::plan::finished;
use crate::controllers::workflow::decide::plan::Configured;

/// What a Promise's configure reconcile observed, beside its workflow's plan.
#[derive(Debug)]
pub(super) struct Observed<'a> {
    pub(crate) configured: &'a Configured,
    /// The promise configure workflow's pipelines, by name.
    pub(crate) names: &'a [String],
    pub(crate) hash: &'a str,
    pub(crate) generation: Option<i64>,
    /// Its status as read.
    pub(crate) before: &'a PromiseStatus,
    pub(crate) requirements: &'a Requirements,
    pub(crate) required_by: &'a [RequiredBy],
    /// `status.version`: its `kratix.io/promise-version`, else `not-set`.
    pub(crate) version: &'a str,
    /// The request kind and its lower-case `group/version`, for a Promise with an API.
    pub(crate) api: Option<(String, String)>,
    /// The periodic re-run: the delay until it is due, or whether it is due now.
    pub(crate) interval: (Option<Duration>, bool),
    pub(crate) retry_failures: bool,
    pub(crate) now_ms: i64,
    /// The `status.yaml` files its runs recorded.
    pub(crate) carried: CarryOver<'a>,
    /// It carries `kratix.io/reconcile-resources=true`.
    pub(crate) reconcile_resources: bool,
}

/// What the reconcile does about the Promise itself.
#[derive(Debug)]
pub(super) struct Decision<'a> {
    /// Its status, labels and next look.
    pub(crate) write: gate::Decision<StatusChange<'a>>,
    /// It has just become available: say so with an event.
    pub(crate) became_available: bool,
}

/// An early end of the reconcile (see [`gate::Gate`]).
pub(super) fn exit(status: ExitStatus<'_>) -> gate::Decision<StatusChange<'_>> {
    gate::exit(status).map(StatusChange::Exit)
}

/// A Promise whose requirements are not fulfilled: nothing is installed and no workflow runs
/// until every required Promise is there (a change to any Promise wakes the Promises that
/// require it).
pub(super) fn unfulfilled<'a>(o: &Unfulfilled<'a>) -> gate::Decision<StatusChange<'a>> {
    gate::Decision {
        status: Some(StatusChange::Unfulfilled(Unfulfilled { ..*o })),
        labels: Labels::KEEP,
        labels_first: false,
        next: Next::Done,
    }
}

/// What the status of a Promise whose requirements are not fulfilled says.
#[derive(Debug, Clone, Copy)]
pub(super) struct Unfulfilled<'a> {
    pub(crate) requirements: &'a Requirements,
    pub(crate) generation: Option<i64>,
    pub(crate) version: &'a str,
    pub(crate) required_by: &'a [RequiredBy],
    /// Its status as read.
    pub(crate) before: &'a PromiseStatus,
}

impl Unfulfilled<'_> {
    fn apply(&self, s: &mut Value) {
        set_requirements(s, self.requirements);
        status::set_conditions(s, requirements::waiting_conditions());
        status::set_field(s, "observedGeneration", json!(self.generation));
        status::set_field(s, "status", json!(promise_status::UNAVAILABLE));
        status::set_field(s, "version", json!(self.version));
        summary::set_list(
            s,
            "requiredBy",
            &serde_json::to_value(self.required_by).unwrap_or_default(),
        );
        summary::set_kratix(
            s,
            &Summary {
                status: promise_status::UNAVAILABLE,
                version: self.version.to_string(),
                api: None,
                last_available_time: self.before.last_available_time.clone(),
            },
        );
    }
}

/// Writes `status.requiredPromises` and the `RequirementsFulfilled` condition, if any.
fn set_requirements(status: &mut Value, requirements: &Requirements) {
    if let Some(condition) = &requirements.condition {
        status::set_conditions(status, [condition.clone()]);
    }
    match (
        status.as_object_mut(),
        serde_json::to_value(&requirements.statuses),
    ) {
        (Some(map), Ok(list)) if !requirements.statuses.is_empty() => {
            map.insert("requiredPromises".into(), list);
        }
        (Some(map), _) => {
            map.remove("requiredPromises");
        }
        (None, _) => {}
    }
}

/// The Promise's new status, applied to the status as stored (a write that conflicts applies it
/// again to the newer one).
#[derive(Debug)]
pub(super) enum StatusChange<'a> {
    /// An early end, as for requests.
    Exit(ExitStatus<'a>),
    /// Its requirements are not fulfilled.
    Unfulfilled(Unfulfilled<'a>),
    /// Its configure workflow, as [`decide`] decided.
    Configure(Box<ConfigureStatus<'a>>),
}

impl StatusChange<'_> {
    pub(super) fn apply(&self, s: &mut Value) {
        match self {
            StatusChange::Exit(exit) => exit.apply(s),
            StatusChange::Unfulfilled(unfulfilled) => unfulfilled.apply(s),
            StatusChange::Configure(change) => change.apply(s),
        }
    }
}

/// Decides the Promise's status, event, labels and next look from what it observed.
pub(super) fn decide<'a>(o: &Observed<'a>) -> Decision<'a> {
    let configured = o.configured;
    let step = configured.step();
    let available = finished(step);
    let mut conditions = configured.conditions.clone();
    conditions.push(summary::available_condition(step));
    conditions.push(crate::controllers::work::state::works_succeeded_condition(
        configured.works_state,
    ));
    let was_available = o.before.says_available();
    let summary = Summary {
        status: if available {
            promise_status::AVAILABLE
        } else {
            promise_status::UNAVAILABLE
        },
        version: o.version.to_string(),
        api: o.api.clone(),
        last_available_time: summary::last_available_time(
            o.before.last_available_time.as_deref(),
            was_available,
            available,
            &kube_time::rfc3339_secs(o.now_ms).unwrap_or_default(),
        ),
    };
    let pipelines: Vec<PipelineStatusEntry> = decide::pipeline_statuses(
        Action::Configure,
        o.names,
        &configured.records,
        o.hash,
        o.retry_failures,
    )
    .into_iter()
    .map(|s| PipelineStatusEntry {
        name: s.name,
        phase: s.phase.as_str(),
        attempts: s.attempts,
        message: s.message,
        next_retry_at: s.next_retry_at_ms.and_then(kube_time::rfc3339_secs),
        destinations: None,
    })
    .collect();
    let (periodic, rerun_label) = o.interval;
    // Its requests are asked to run again once it is available.
    let asks = intervals::promise_asks(
        o.reconcile_resources,
        available,
        o.before
            .kratix
            .as_ref()
            .and_then(|k| k.extra.get("reconcileResources"))
            .and_then(Value::as_i64),
    );
    let next =
        plan::sooner(plan::wake_after_at(step, o.now_ms), periodic).map_or(Next::Done, Next::After);
    let status = ConfigureStatus {
        carried: o.carried.clone(),
        requirement: o.requirements.condition.clone(),
        required_promises: o.requirements.statuses.clone(),
        conditions,
        generation: o.generation,
        summary,
        counters: summary::workflow_counters(o.names.len(), matches!(step, Step::Completed { .. })),
        required_by: o.required_by.to_vec(),
        keyed: configured.keyed_inputs(o.names, o.hash, o.retry_failures, o.generation, o.now_ms),
        pipelines: serde_json::to_value(&pipelines).unwrap_or(Value::Null),
        configured: matches!(step, Step::Completed { .. }),
        asks,
    };
    Decision {
        write: gate::Decision {
            status: Some(StatusChange::Configure(Box::new(status))),
            labels: Labels {
                rerun: rerun_label,
                clear_manual: configured.decided.clears_manual_label(),
                suspended: configured.decided.suspended_label,
                clear_reconcile_resources: asks.is_some(),
            },
            labels_first: false,
            next,
        },
        became_available: available && !was_available,
    }
}

/// The Promise's status as its configure workflow stands. Kratix's fields go through the typed
/// [`PromiseStatus`]; the keyed workflows and the pipelines' summary are kept beside them.
#[derive(Debug)]
pub(super) struct ConfigureStatus<'a> {
    carried: CarryOver<'a>,
    requirement: Option<crate::api::Condition>,
    required_promises: Vec<RequiredPromiseStatus>,
    conditions: Vec<crate::api::Condition>,
    generation: Option<i64>,
    summary: Summary,
    counters: (i64, i64, i64),
    required_by: Vec<RequiredBy>,
    keyed: KeyedInputs<'a>,
    pipelines: Value,
    /// The workflow completed: `status.message` says the Promise is configured.
    configured: bool,
    /// Its asks that every request run again, counting one just made.
    asks: Option<i64>,
}

impl ConfigureStatus<'_> {
    pub(super) fn apply(&self, s: &mut Value) {
        // What the pipelines wrote first (checked to fit when their runs ended): the
        // workflow's own fields are the reconcile's.
        self.carried.apply(s);
        let mut typed: PromiseStatus = serde_json::from_value(s.clone()).unwrap_or_default();
        status::merge_conditions(&mut typed.conditions, self.requirement.clone());
        status::merge_conditions(&mut typed.conditions, self.conditions.clone());
        typed.required_promises = self.required_promises.clone();
        typed.observed_generation = self.generation;
        typed.status = Some(self.summary.status.to_string());
        typed.version = Some(self.summary.version.clone());
        if let Some((kind, api_version)) = &self.summary.api {
            typed.kind = Some(kind.clone());
            typed.api_version = Some(api_version.clone());
        }
        let (workflows, succeeded, failed) = self.counters;
        typed.workflows = Some(workflows);
        typed.workflows_succeeded = Some(succeeded);
        typed.workflows_failed = Some(failed);
        if let Some(at) = &self.summary.last_available_time {
            typed.last_available_time = Some(at.clone());
        }
        typed.required_by = self.required_by.clone();
        if self.configured {
            typed.message = Some("Promise configured".to_string());
        }
        typed
            .extra
            .insert("pipelines".to_string(), self.pipelines.clone());
        if let Ok(value) = serde_json::to_value(&typed) {
            *s = value;
        }
        summary::set_kratix(s, &self.summary);
        keyed_status::update(s, &self.keyed);
        if let Some(asks) = self.asks {
            intervals::set_asks(s, asks);
        }
    }
}

#[cfg(test)]
mod tests;
