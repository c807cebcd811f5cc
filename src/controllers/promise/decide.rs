//! What a Promise's reconcile decides once its requirements are fulfilled, with no I/O: from its
//! configure workflow's plan and what it observed, the Promise's whole new status (typed), the
//! event and labels that go with it, and when to look again. The reconcile writes the status
//! once.

use std::time::Duration;

use serde_json::Value;

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
use crate::controllers::promise::requirements::Requirements;
use crate::controllers::promise::summary;
use crate::controllers::promise::summary::Summary;
use crate::controllers::status_value as status;
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
}

/// What the reconcile does about the Promise itself.
#[derive(Debug)]
pub(super) struct Decision<'a> {
    pub(crate) status: StatusChange<'a>,
    /// It has just become available: say so with an event.
    pub(crate) became_available: bool,
    /// It is available: its requests may be asked to run again (`kratix.io/reconcile-resources`).
    pub(crate) available: bool,
    /// Clear `kratix.io/manual-reconciliation`: the re-run it asked for has started.
    pub(crate) clear_manual_label: bool,
    /// Set `kratix.io/manual-reconciliation`: the reconciliation interval has passed.
    pub(crate) rerun_label: bool,
    pub(crate) next: Next,
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
    let next =
        plan::sooner(plan::wake_after_at(step, o.now_ms), periodic).map_or(Next::Done, Next::After);
    Decision {
        status: StatusChange {
            requirement: o.requirements.condition.clone(),
            required_promises: o.requirements.statuses.clone(),
            conditions,
            generation: o.generation,
            summary,
            counters: summary::workflow_counters(
                o.names.len(),
                matches!(step, Step::Completed { .. }),
            ),
            required_by: o.required_by.to_vec(),
            keyed: KeyedInputs {
                action: Action::Configure,
                pipelines: o.names,
                runs: &configured.records,
                hash: o.hash,
                retry_failures: o.retry_failures,
                step,
                generation: o.generation,
                now_ms: o.now_ms,
            },
            pipelines: serde_json::to_value(&pipelines).unwrap_or(Value::Null),
            configured: matches!(step, Step::Completed { .. }),
        },
        became_available: available && !was_available,
        available,
        clear_manual_label: configured.decided.clears_manual_label(),
        rerun_label,
        next,
    }
}

/// The Promise's new status, applied to the status as stored (a write that conflicts applies it
/// again to the newer one). Kratix's fields go through the typed [`PromiseStatus`]; the keyed
/// workflows and the pipelines' summary are kept beside them.
#[derive(Debug)]
pub(super) struct StatusChange<'a> {
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
}

impl StatusChange<'_> {
    pub(super) fn apply(&self, s: &mut Value) {
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
    }
}

#[cfg(test)]
mod tests;
