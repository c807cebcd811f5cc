//! Executes PipelineRuns: claims a pending run for this executor, runs its containers through the
//! local executor, turns the output into the pipeline's Work, merges `status.yaml` into the
//! object, and records the outcome. A run found `Running` is run again only when the executor that
//! claimed it is gone (see [`claims`]).

pub(crate) mod claims;
pub(crate) mod error;
pub(crate) mod executing;
pub(crate) mod failure;
mod into_work;
mod outcome;
mod progress;
pub(crate) mod pull_secrets;

use serde_json::Value;
use tracing::{error, info, warn};

use crate::api::object::label;
use crate::api::pipeline::Pipeline;
use crate::api::Action;
use crate::api::{
    labels, promise_api, Object, ObjectKey, PipelineRun, PipelineRunPhase, PipelineRunStatus,
    Promise,
};
use crate::pipeline::contract::{kratix_env, ResourceObject, Subject as EnvSubject, WorkflowEnv};
use crate::pipeline::{self, RunOutcome, RunRequest};
use crate::store::Selector;

use crate::controllers::lookups;
use crate::controllers::now_rfc3339;
use crate::controllers::run::claims::Executor;
use crate::controllers::run::claims::Verdict;
use crate::controllers::run::failure::Error as Failure;
use crate::controllers::run::outcome::Finished;
use crate::controllers::status;
use crate::controllers::Error;
use crate::controllers::ErrorChain;
use crate::controllers::Next;
use crate::controllers::Runtime;
use crate::events::{self, Reason};
use crate::metrics::{RunLabels, WorkRef};

/// The run's status; `None` when it does not parse (a phase this version does not know).
fn status_of(run: &Object) -> Option<PipelineRunStatus> {
    status::typed_status(run).ok()
}

fn phase(run: &Object) -> Option<PipelineRunPhase> {
    status_of(run).map(|s| s.phase)
}

/// The executor that claimed the run, if any.
fn executor_of(run: &Object) -> Option<Executor> {
    status_of(run)?.executor
}

/// Changes the run's status and writes it if anything changed.
async fn update_run_status(
    rt: &Runtime,
    key: &ObjectKey,
    change: impl FnMut(&mut PipelineRunStatus),
) -> Result<Option<Object>, Error> {
    let kind = rt.kind(crate::api::Builtin::PipelineRun);
    status::update_typed_status(rt.cp.as_ref(), &kind, key, "PipelineRun", change).await
}

/// Looks at every run found `Running` when the controllers start: those whose executor is gone
/// were interrupted and run again; those a live executor carries out are left alone.
pub(crate) async fn recover_interrupted(rt: &Runtime) -> Result<(), Error> {
    let kind = rt.kind(crate::api::Builtin::PipelineRun);
    for run in rt.cp.list(&kind, None, &Selector::everything()).await? {
        if phase(&run) == Some(PipelineRunPhase::Running) {
            settle_running(rt, &run).await?;
        }
    }
    Ok(())
}

pub(crate) async fn reconcile(rt: &Runtime, run: Object) -> Result<Next, Error> {
    match phase(&run) {
        Some(PipelineRunPhase::Pending) => claim_and_start(rt, &ObjectKey::of(&run)).await,
        Some(PipelineRunPhase::Running) => settle_running(rt, &run).await,
        _ => Ok(Next::Done),
    }
}

/// A `Running` run: carried out here, by another live executor, or abandoned by a dead one.
async fn settle_running(rt: &Runtime, run: &Object) -> Result<Next, Error> {
    let key = ObjectKey::of(run);
    let claim = executor_of(run);
    let seen = match &claim {
        Some(claim) => Executor::observe(claim),
        None => Executor::observe(&rt.executor),
    };
    match claims::verdict(claim.as_ref(), &rt.executor, rt.is_executing(&key), &seen) {
        Verdict::ExecutingHere => Ok(Next::Done),
        // Look again later: if that executor dies, the run is taken over then.
        Verdict::ClaimedElsewhere => Ok(Next::After(CLAIM_RECHECK)),
        Verdict::Abandoned => {
            // The run may have finished here between reading it and asking whether it runs
            // here (its outcome is stored before it stops counting as executing): read it again.
            let fresh = rt
                .cp
                .get(
                    &rt.kind(crate::api::Builtin::PipelineRun),
                    key.namespace.as_deref(),
                    &key.name,
                )
                .await?;
            if !fresh.is_some_and(|run| {
                phase(&run) == Some(PipelineRunPhase::Running) && executor_of(&run) == claim
            }) {
                return Ok(Next::Done);
            }
            let claimant = claim
                .as_ref()
                .map(|c| format!("process {}", c.pid))
                .unwrap_or_else(|| "an unknown executor".into());
            warn!(run = %key, "run was interrupted ({claimant} is gone); running it again");
            kill_leftovers(rt, run);
            update_run_status(rt, &key, |s| {
                // Only the claim that was judged: never undo a newer one.
                if s.phase == PipelineRunPhase::Running && s.executor == claim {
                    s.phase = PipelineRunPhase::Pending;
                    s.message = Some("interrupted; run again".into());
                    s.executor = None;
                }
            })
            .await?;
            Ok(Next::Done)
        }
    }
}

/// How often a run claimed by another live executor is looked at again.
const CLAIM_RECHECK: std::time::Duration = std::time::Duration::from_secs(10);

/// Starts carrying out a `Pending` run in a task of its own. The task waits for one of the
/// pipeline slots, then claims the run for this executor: a run is `Running` (and its start
/// time set) only once it really runs, and other executors may take it until then.
async fn claim_and_start(rt: &Runtime, key: &ObjectKey) -> Result<Next, Error> {
    if rt.is_executing(key) {
        return Ok(Next::Done);
    }
    let rt2 = rt.clone();
    let task_key = key.clone();
    rt.start_executing(key.clone(), move || {
        tokio::spawn(async move {
            // The semaphore is never closed, so this only fails if it were.
            let _slot = rt2.pipeline_slots.clone().acquire_owned().await;
            if let Some(claimed) = claim_retrying(&rt2, &task_key).await {
                carry_out_claimed(&rt2, &claimed).await;
            }
            rt2.done_executing(&task_key);
        })
    });
    Ok(Next::Done)
}

/// Carries out a run this executor holds the claim of, and records its outcome.
async fn carry_out_claimed(rt: &Runtime, claimed: &Object) {
    let began = std::time::Instant::now();
    let finished = match execute(rt, claimed).await {
        Ok(finished) => finished,
        Err(err) => {
            warn!(run = %ObjectKey::of(claimed), error = %ErrorChain(&err), "pipeline run could not be carried out");
            Finished::failed(ErrorChain(&err).to_string())
        }
    };
    statestores::crash::crash_point("run-before-finish");
    record_outcome(rt, claimed, &finished).await;
    rt.metrics
        .run_finished(run_labels(claimed, &finished), began.elapsed());
}

/// A run made claimed: when a pipeline slot is free as a workflow starts a run, the run is
/// stored already claimed by this executor (`Running`, with its claim), which spares the claim's
/// write and the look it sets off; otherwise it is stored `Pending` and claimed once a slot
/// frees up.
pub(crate) struct ClaimedAtCreation {
    key: ObjectKey,
    created: tokio::sync::oneshot::Sender<Option<Object>>,
}

impl ClaimedAtCreation {
    /// Takes a free slot, if any, for the run `key` about to be stored; the status to store
    /// it with goes into `status`. The run counts as executing here from now on, so that its
    /// own change finds it carried out here rather than abandoned.
    pub(crate) fn take(
        rt: &Runtime,
        key: &ObjectKey,
        status: &mut PipelineRunStatus,
    ) -> Option<Self> {
        if rt.is_executing(key) {
            return None;
        }
        let slot = rt.pipeline_slots.clone().try_acquire_owned().ok()?;
        *status = PipelineRunStatus {
            phase: PipelineRunPhase::Running,
            start_time: Some(now_rfc3339()),
            executor: Some(rt.executor.clone()),
            ..PipelineRunStatus::default()
        };
        let (created, stored) = tokio::sync::oneshot::channel::<Option<Object>>();
        let rt2 = rt.clone();
        let task_key = key.clone();
        rt.start_executing(key.clone(), move || {
            tokio::spawn(async move {
                let _slot = slot;
                if let Ok(Some(claimed)) = stored.await {
                    carry_out_claimed(&rt2, &claimed).await;
                }
                rt2.done_executing(&task_key);
            })
        });
        Some(Self {
            key: key.clone(),
            created,
        })
    }

    /// The run as stored (its execution starts), or `None` when storing it failed (the slot
    /// goes back).
    pub(crate) fn stored(self, run: Option<Object>) {
        if self.created.send(run).is_err() {
            warn!(run = %self.key, "the run's task ended before it was stored");
        }
    }
}

/// The metric labels of a run that ended as `finished`.
fn run_labels(run: &Object, finished: &Finished) -> RunLabels {
    let spec = crate::api::object::to_typed::<PipelineRun>(run).map(|r| r.spec);
    let (workflow_type, action) = spec
        .as_ref()
        .map(|s| (s.workflow_type.as_str(), s.workflow_action.as_str()))
        .unwrap_or_default();
    RunLabels::of(
        workflow_type,
        action,
        finished.phase == PipelineRunPhase::Succeeded,
    )
}

/// [`claim`], retried until the control plane answers: the run is not looked at again while
/// this executor holds it as its own.
async fn claim_retrying(rt: &Runtime, key: &ObjectKey) -> Option<Object> {
    let mut delay = std::time::Duration::from_millis(100);
    loop {
        match claim(rt, key).await {
            Ok(claimed) => return claimed,
            Err(err) => {
                warn!(run = %key, error = %ErrorChain(&err), "claiming the run failed; retrying in {delay:?}");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(std::time::Duration::from_secs(10));
            }
        }
    }
}

/// Claims a `Pending` run for this executor; `None` when it is no longer pending or someone
/// else claimed it first.
async fn claim(rt: &Runtime, key: &ObjectKey) -> Result<Option<Object>, Error> {
    let started = now_rfc3339();
    let me = rt.executor.clone();
    let stored = update_run_status(rt, key, |s| {
        // Someone may have claimed it since it was read.
        if s.phase != PipelineRunPhase::Pending {
            return;
        }
        *s = PipelineRunStatus {
            phase: PipelineRunPhase::Running,
            start_time: Some(started.clone()),
            executor: Some(me.clone()),
            // What an earlier attempt recorded no longer holds.
            completion_time: None,
            message: None,
            exit_code: None,
            workflow_control: None,
            extra: std::mem::take(&mut s.extra),
        };
    })
    .await?;
    Ok(stored.filter(|run| {
        status_of(run).is_some_and(|s| {
            s.phase == PipelineRunPhase::Running
                && s.executor.as_ref() == Some(&me)
                && s.start_time.as_deref() == Some(started.as_str())
        })
    }))
}

/// Kills what is left of an interrupted run's containers: plain processes (no sandbox to die
/// with the process that started them) outlive a crash and would run on beside the re-run.
fn kill_leftovers(rt: &Runtime, run: &Object) {
    for group in rt.pipelines.kill_leftovers(&rt.platform.run_dir(run)) {
        warn!(run = %ObjectKey::of(run), group, "killed a leftover process group of the interrupted run");
    }
}

/// Records the outcome on the run, retrying until the control plane takes it: a run must never
/// stay `Running` because one write failed. If this process dies first, the run's claim names a
/// dead executor and the run is taken over and run again.
/// `claimed` is the run as its claim stored it: nobody else writes a run while its claimant
/// runs it, so the outcome is written without reading it again (a conflict reads it).
async fn record_outcome(rt: &Runtime, claimed: &Object, finished: &Finished) {
    let key = &ObjectKey::of(claimed);
    let mut delay = std::time::Duration::from_millis(100);
    loop {
        match finish(rt, claimed, finished).await {
            Ok(()) => return,
            Err(err) => {
                error!(run = %key, error = %ErrorChain(&err), "recording the run's outcome failed; retrying in {delay:?}");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(std::time::Duration::from_secs(10));
            }
        }
    }
}

async fn finish(rt: &Runtime, claimed: &Object, finished: &Finished) -> Result<(), Error> {
    let key = &ObjectKey::of(claimed);
    let done = now_rfc3339();
    let me = &rt.executor;
    let mut ours = true;
    let kind = rt.kind(crate::api::Builtin::PipelineRun);
    status::update_typed_status_of(
        rt.cp.as_ref(),
        &kind,
        claimed,
        "PipelineRun",
        |s: &mut PipelineRunStatus| {
            ours = s.phase == PipelineRunPhase::Running && s.executor.as_ref() == Some(me);
            if !ours {
                return;
            }
            s.phase = finished.phase;
            s.completion_time = Some(done.clone());
            if !finished.message.is_empty() {
                s.message = Some(finished.message.clone());
            }
            if let Some(code) = finished.exit_code {
                s.exit_code = Some(code);
            }
            if let Some(c) = &finished.control {
                s.workflow_control = Some(c.clone());
            }
        },
    )
    .await?;
    if !ours {
        warn!(run = %key, "the run's claim changed while it ran; its outcome is not recorded");
    }
    Ok(())
}

/// Gives back the claim of a run that this executor stops carrying out before it finished (the
/// process is stopping): it runs again from the start, here or in the next process.
/// Whether it was this executor's to give back (a run still waiting for a slot is not claimed).
pub(super) async fn release(rt: &Runtime, key: &ObjectKey) -> Result<bool, Error> {
    let me = &rt.executor;
    let mut ours = false;
    update_run_status(rt, key, |s| {
        ours = s.phase == PipelineRunPhase::Running && s.executor.as_ref() == Some(me);
        if ours {
            s.phase = PipelineRunPhase::Pending;
            s.message = Some("released by a stopping kratix-rs; run again".into());
            s.executor = None;
        }
    })
    .await?;
    Ok(ours)
}

async fn execute(rt: &Runtime, run: &Object) -> Result<Finished, Error> {
    let key = ObjectKey::of(run);
    let run_name = key.name.clone();
    let bad = |source: Failure| error::Error::not_carried_out(&run_name, source);
    let spec = crate::api::object::to_typed::<PipelineRun>(run)
        .map_err(|e| bad(Failure::StoredRun(e)))?
        .spec;
    let pipeline: Pipeline = serde_json::from_value(spec.pipeline.clone())
        .map_err(|e| bad(Failure::StoredPipeline(e)))?;
    let promise_name = spec.promise_name.clone();
    let action = match spec.workflow_action.as_str() {
        "delete" => Action::Delete,
        _ => Action::Configure,
    };
    let promise_obj = lookups::promise(rt, &promise_name)
        .await?
        .ok_or_else(|| bad(Failure::PromiseNotFound(promise_name.clone())))?;
    let promise: Promise = crate::api::object::to_typed(&promise_obj).map_err(|source| {
        bad(Failure::InvalidPromise {
            name: promise_name.clone(),
            source,
        })
    })?;

    // The live object, as Kratix's reader gives it to the pipeline.
    let (object, env_subject, parent_kind) = if spec.workflow_type == "resource" {
        let kind = promise_api::kinds_from_promises(std::slice::from_ref(&promise_obj))
            .into_iter()
            .next()
            .ok_or_else(|| bad(Failure::NoRequestKind(promise_name.clone())))?;
        let ns = spec.resource_namespace.clone();
        let name = spec.resource_name.clone();
        let obj = rt.cp.get(&kind, Some(&ns), &name).await?.ok_or_else(|| {
            bad(Failure::RequestNotFound {
                kind: kind.kind.clone(),
                namespace: ns.clone(),
                name: name.clone(),
            })
        })?;
        let env = EnvSubject::Resource(ResourceObject {
            kind: kind.kind.clone(),
            group: kind.group.clone(),
            version: kind.version.clone(),
            plural: kind.plural.clone(),
            name,
            namespace: ns,
            cluster_scoped: false,
        });
        (obj, env, kind)
    } else {
        (
            promise_obj.clone(),
            EnvSubject::Promise,
            rt.kind(crate::api::Builtin::Promise),
        )
    };
    let object_yaml = serde_yaml::to_string(&object).map_err(|e| bad(Failure::ObjectYaml(e)))?;
    let env = kratix_env(&WorkflowEnv {
        action,
        promise_name: promise_name.clone(),
        promise_version: spec.promise_version_or(label(&promise_obj, labels::PROMISE_VERSION)),
        pipeline_name: pipeline.name().to_string(),
        subject: env_subject,
        dry_run: false,
    });
    let work_dir = rt.platform.run_dir(run);
    if work_dir.exists() {
        std::fs::remove_dir_all(&work_dir).map_err(|source| {
            bad(Failure::ClearDir {
                path: work_dir.clone(),
                source,
            })
        })?;
    }
    std::fs::create_dir_all(&work_dir).map_err(|source| {
        bad(Failure::CreateDir {
            path: work_dir.clone(),
            source,
        })
    })?;
    let mode = pipeline::Mode::from_env().map_err(|e| bad(e.into()))?;
    let secrets_namespace = match spec.workflow_type.as_str() {
        "resource" => spec.resource_namespace.as_str(),
        _ => crate::api::SYSTEM_NAMESPACE,
    };
    let registries =
        crate::controllers::run::pull_secrets::registries(rt, &pipeline, secrets_namespace).await?;
    let images = pipeline::ImageMap::load_for_home(&rt.platform.home).map_err(|e| bad(e.into()))?;
    info!(run = %run_name, pipeline = pipeline.name(), "pipeline run started");
    let (progress, told) = pipeline::Progress::channel();
    let telling = tokio::spawn(crate::controllers::run::progress::store(
        rt.clone(),
        key.clone(),
        rt.executor.clone(),
        told,
    ));
    let outcome: Result<RunOutcome, _> = rt
        .pipelines
        .run(RunRequest {
            run_name: run_name.clone(),
            pipeline: pipeline.clone(),
            object_yaml,
            env,
            work_dir: work_dir.clone(),
            timeout: rt.settings.pipeline_timeout,
            images,
            isolation: mode.isolation,
            executor: mode.setting,
            registries,
            hidden: std::iter::once(rt.platform.home.clone())
                .chain(rt.also_hidden.iter().cloned())
                .collect(),
            progress,
        })
        .await;
    // The request, and with it the sending half, is gone now: once what it said is stored,
    // nothing said can overwrite the outcome recorded next.
    let _ = telling.await;
    let outcome = outcome.map_err(|e| bad(e.into()))?;

    let finished = outcome::finished(
        &outcome.result,
        rt.settings.pipeline_timeout,
        &outcome.metadata.workflow_control,
    );
    let control = &outcome.metadata.workflow_control;
    if finished.phase == PipelineRunPhase::Succeeded {
        // A pipeline that suspends its workflow writes no Work, as in Kratix.
        if action == Action::Configure && !control.suspends() {
            if let Some(output) = &outcome.output {
                // Before the Work is stored: its placements may be written at once.
                rt.metrics.pipeline_ended(WorkRef {
                    namespace: key.namespace.clone().unwrap_or_default(),
                    promise: promise_name.clone(),
                    resource: spec.resource_name.clone(),
                    pipeline: pipeline.name().to_string(),
                });
                into_work::upsert(rt, run, &promise, output, &outcome.metadata).await?;
            }
        }
        if let Some(status_yaml) = &outcome.metadata.status {
            merge_status(rt, &parent_kind, &ObjectKey::of(&object), status_yaml).await?;
        }
    }
    let (reason, message) = outcome_event(&spec, &finished);
    events::record(&rt.cp, &object, reason, &message).await;
    info!(run = %run_name, phase = ?finished.phase, "pipeline run finished");
    Ok(finished)
}

/// Merges a pipeline's `status.yaml` into the object's status: top-level keys replaced,
/// `conditions` merged by type.
async fn merge_status(
    rt: &Runtime,
    kind: &crate::api::KindInfo,
    key: &ObjectKey,
    from_pipeline: &Value,
) -> Result<(), Error> {
    status::update_status(rt.cp.as_ref(), kind, key, |_, s| {
        let Some(fields) = from_pipeline.as_object() else {
            return;
        };
        for (k, v) in fields {
            if k == "conditions" {
                if let Ok(conds) = serde_json::from_value::<Vec<crate::api::Condition>>(v.clone()) {
                    status::set_conditions(s, conds);
                }
            } else {
                status::set_field(s, k, v.clone());
            }
        }
    })
    .await?;
    Ok(())
}

/// The event a finished run records on its object.
fn outcome_event(spec: &crate::api::PipelineRunSpec, finished: &Finished) -> (Reason, String) {
    let what = format!("{} pipeline {}", spec.workflow_action, spec.pipeline_name);
    match (finished.phase, &finished.control) {
        (PipelineRunPhase::Succeeded, Some(control)) => (
            Reason::WorkflowSuspended,
            suspension_message(&what, control),
        ),
        (PipelineRunPhase::Succeeded, None) => {
            (Reason::PipelineSucceeded, format!("{what} succeeded"))
        }
        _ => (
            Reason::PipelineFailed,
            format!("{what} failed: {}", finished.message),
        ),
    }
}

/// What a run that suspended its workflow says: the pipeline's message, and when it runs again
/// (whole seconds) when it asked to be retried.
fn suspension_message(what: &str, control: &crate::api::WorkflowControl) -> String {
    let mut message = format!("{what} suspended the workflow");
    if !control.message.is_empty() {
        message.push_str(&format!(": {}", control.message));
    }
    if let Some(ms) = control.retry_after_ms {
        message.push_str(&format!(" (runs again in {}s)", ms.div_euclid(1000)));
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    fn suspending(message: &str, retry_after_ms: Option<i64>) -> Finished {
        Finished {
            phase: PipelineRunPhase::Succeeded,
            message: String::new(),
            exit_code: Some(0),
            control: Some(crate::api::WorkflowControl {
                suspend: true,
                retry_after_ms,
                message: message.into(),
            }),
        }
    }

    #[test]
    fn a_finished_run_records_success_suspension_or_failure() {
        let spec = crate::api::PipelineRunSpec {
            pipeline_name: "p".into(),
            workflow_action: "configure".into(),
            ..Default::default()
        };
        let cases = [
            (
                Finished {
                    phase: PipelineRunPhase::Succeeded,
                    message: String::new(),
                    exit_code: Some(0),
                    control: None,
                },
                Reason::PipelineSucceeded,
                "configure pipeline p succeeded",
            ),
            (
                Finished::failed("exit code 3".into()),
                Reason::PipelineFailed,
                "configure pipeline p failed: exit code 3",
            ),
            (
                suspending("", None),
                Reason::WorkflowSuspended,
                "configure pipeline p suspended the workflow",
            ),
            (
                suspending("waiting for approval", Some(300_000)),
                Reason::WorkflowSuspended,
                "configure pipeline p suspended the workflow: waiting for approval (runs again in 300s)",
            ),
        ];
        for (finished, reason, message) in cases {
            assert_eq!(
                outcome_event(&spec, &finished),
                (reason, message.to_string())
            );
        }
    }
}
