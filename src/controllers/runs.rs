//! Executes PipelineRuns: claims a pending run for this executor, runs its containers through the
//! local executor, turns the output into the pipeline's Work, merges `status.yaml` into the
//! object, and records the outcome. A run found `Running` is run again only when the executor that
//! claimed it is gone (see [`claims`]).

use serde_json::{json, Value};
use tracing::{error, info, warn};

use crate::api::pipeline::Pipeline;
use crate::api::{Object, ObjectKey, Promise};
use crate::pipeline::contract::{
    kratix_env, ResourceObject, Subject as EnvSubject, WorkflowAction, WorkflowEnv,
};
use crate::pipeline::{self, Isolation, RunOutcome, RunRequest, RunResult};
use crate::store::Selector;

use super::claims::{self, Executor, Verdict};
use super::run_failure::Error as Failure;
use super::{lookups, now_rfc3339, status, works, Error, ErrorChain, Next, Runtime};

fn phase(run: &Object) -> &str {
    run.data
        .pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("Pending")
}

/// The executor that claimed the run, if any.
fn executor_of(run: &Object) -> Option<Executor> {
    serde_json::from_value(run.data.pointer("/status/executor")?.clone()).ok()
}

/// Looks at every run found `Running` when the controllers start: those whose executor is gone
/// were interrupted and run again; those a live executor carries out are left alone.
pub async fn recover_interrupted(rt: &Runtime) -> Result<(), Error> {
    let kind = rt.kind(crate::api::Builtin::PipelineRun);
    for run in rt.cp.list(&kind, None, &Selector::everything()).await? {
        if phase(&run) == "Running" {
            settle_running(rt, &run).await?;
        }
    }
    Ok(())
}

pub async fn reconcile(rt: &Runtime, run: Object) -> Result<Next, Error> {
    match phase(&run) {
        "Pending" => claim_and_start(rt, &ObjectKey::of(&run)).await,
        "Running" => settle_running(rt, &run).await,
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
            if !fresh.is_some_and(|run| phase(&run) == "Running" && executor_of(&run) == claim) {
                return Ok(Next::Done);
            }
            let claimant = claim
                .as_ref()
                .map(|c| format!("process {}", c.pid))
                .unwrap_or_else(|| "an unknown executor".into());
            warn!(run = %key, "run was interrupted ({claimant} is gone); running it again");
            kill_leftovers(rt, run);
            status::update_status(
                rt.cp.as_ref(),
                &rt.kind(crate::api::Builtin::PipelineRun),
                &key,
                |obj, s| {
                    // Only the claim that was judged: never undo a newer one.
                    if phase(obj) == "Running" && executor_of(obj) == claim {
                        status::set_field(s, "phase", json!("Pending"));
                        status::set_field(s, "message", json!("interrupted; run again"));
                        if let Some(map) = s.as_object_mut() {
                            map.remove("executor");
                        }
                    }
                },
            )
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
                let finished = match execute(&rt2, &claimed).await {
                    Ok(finished) => finished,
                    Err(err) => {
                        warn!(run = %task_key, error = %ErrorChain(&err), "pipeline run could not be carried out");
                        Finished::failed(ErrorChain(&err).to_string())
                    }
                };
                statestores::crash::crash_point("run-before-finish");
                record_outcome(&rt2, &task_key, &finished).await;
            }
            rt2.done_executing(&task_key);
        })
    });
    Ok(Next::Done)
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
    let claim = serde_json::to_value(&me).map_err(|source| {
        Error::run(
            &key.name,
            Failure::Encode {
                what: "the executor",
                source,
            },
        )
    })?;
    let stored = status::update_status(
        rt.cp.as_ref(),
        &rt.kind(crate::api::Builtin::PipelineRun),
        key,
        |obj, s| {
            // Someone may have claimed it since it was read.
            if phase(obj) != "Pending" {
                return;
            }
            status::set_field(s, "phase", json!("Running"));
            status::set_field(s, "startTime", json!(started));
            status::set_field(s, "executor", claim.clone());
            if let Some(map) = s.as_object_mut() {
                for stale in ["completionTime", "message", "exitCode", "workflowControl"] {
                    map.remove(stale);
                }
            }
        },
    )
    .await?;
    Ok(stored.filter(|run| {
        phase(run) == "Running"
            && executor_of(run).as_ref() == Some(&me)
            && run.data.pointer("/status/startTime") == Some(&json!(started))
    }))
}

/// Kills what is left of an interrupted run's containers: plain processes (no sandbox to die
/// with the process that started them) outlive a crash and would run on beside the re-run.
fn kill_leftovers(rt: &Runtime, run: &Object) {
    for group in rt.pipelines.kill_leftovers(&rt.platform.run_dir(run)) {
        warn!(run = %ObjectKey::of(run), group, "killed a leftover process group of the interrupted run");
    }
}

/// How a run ended, to be recorded on it.
#[derive(Debug, Clone)]
struct Finished {
    phase: &'static str,
    message: String,
    exit_code: Option<i32>,
    control: Option<Value>,
}

impl Finished {
    fn failed(message: String) -> Self {
        Finished {
            phase: "Failed",
            message,
            exit_code: None,
            control: None,
        }
    }
}

/// Records the outcome on the run, retrying until the control plane takes it: a run must never
/// stay `Running` because one write failed. If this process dies first, the run's claim names a
/// dead executor and the run is taken over and run again.
async fn record_outcome(rt: &Runtime, key: &ObjectKey, finished: &Finished) {
    let mut delay = std::time::Duration::from_millis(100);
    loop {
        match finish(rt, key, finished).await {
            Ok(()) => return,
            Err(err) => {
                error!(run = %key, error = %ErrorChain(&err), "recording the run's outcome failed; retrying in {delay:?}");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(std::time::Duration::from_secs(10));
            }
        }
    }
}

async fn finish(rt: &Runtime, key: &ObjectKey, finished: &Finished) -> Result<(), Error> {
    let done = now_rfc3339();
    let me = &rt.executor;
    let mut ours = true;
    status::update_status(
        rt.cp.as_ref(),
        &rt.kind(crate::api::Builtin::PipelineRun),
        key,
        |obj, s| {
            ours = phase(obj) == "Running" && executor_of(obj).as_ref() == Some(me);
            if !ours {
                return;
            }
            status::set_field(s, "phase", json!(finished.phase));
            status::set_field(s, "completionTime", json!(done));
            if !finished.message.is_empty() {
                status::set_field(s, "message", json!(finished.message));
            }
            if let Some(code) = finished.exit_code {
                status::set_field(s, "exitCode", json!(code));
            }
            if let Some(c) = &finished.control {
                status::set_field(s, "workflowControl", c.clone());
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
    status::update_status(
        rt.cp.as_ref(),
        &rt.kind(crate::api::Builtin::PipelineRun),
        key,
        |obj, s| {
            ours = phase(obj) == "Running" && executor_of(obj).as_ref() == Some(me);
            if ours {
                status::set_field(s, "phase", json!("Pending"));
                status::set_field(
                    s,
                    "message",
                    json!("released by a stopping kratix-rs; run again"),
                );
                if let Some(map) = s.as_object_mut() {
                    map.remove("executor");
                }
            }
        },
    )
    .await?;
    Ok(ours)
}

async fn execute(rt: &Runtime, run: &Object) -> Result<Finished, Error> {
    let key = ObjectKey::of(run);
    let run_name = key.name.clone();
    let spec = run.data.get("spec").cloned().unwrap_or_default();
    let text = |field: &str| {
        spec.get(field)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let bad = |source: Failure| Error::run(&run_name, source);
    let pipeline: Pipeline =
        serde_json::from_value(spec.get("pipeline").cloned().unwrap_or_default())
            .map_err(|e| bad(Failure::StoredPipeline(e)))?;
    let promise_name = text("promiseName");
    let action = match text("workflowAction").as_str() {
        "delete" => WorkflowAction::Delete,
        _ => WorkflowAction::Configure,
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
    let (object, env_subject, parent_kind) = if text("workflowType") == "resource" {
        let kind = lookups::request_kind_of(rt, &promise_name)
            .await?
            .ok_or_else(|| bad(Failure::NoRequestKind(promise_name.clone())))?;
        let ns = text("resourceNamespace");
        let name = text("resourceName");
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
    let isolation = Isolation::from_env().map_err(|e| bad(e.into()))?;
    let images = pipeline::ImageMap::load_for_home(&rt.platform.home).map_err(|e| bad(e.into()))?;
    info!(run = %run_name, pipeline = pipeline.name(), "pipeline run started");
    let outcome: RunOutcome = rt
        .pipelines
        .run(RunRequest {
            run_name: run_name.clone(),
            pipeline: pipeline.clone(),
            object_yaml,
            env,
            work_dir: work_dir.clone(),
            timeout: rt.settings.pipeline_timeout,
            images,
            isolation,
            hidden: vec![rt.platform.home.clone()],
        })
        .await
        .map_err(|e| bad(e.into()))?;

    let (phase, message, exit_code) = match &outcome.result {
        RunResult::Succeeded => ("Succeeded", String::new(), Some(0)),
        RunResult::Failed {
            container,
            exit_code,
            reason,
        } => (
            "Failed",
            match exit_code {
                Some(code) => format!(
                    "container {container} exited with code {code}{}",
                    suffix(reason)
                ),
                None => format!("container {container} failed{}", suffix(reason)),
            },
            *exit_code,
        ),
        RunResult::TimedOut { container } => (
            "Failed",
            format!(
                "container {container} timed out after {}s",
                rt.settings.pipeline_timeout.as_secs()
            ),
            None,
        ),
    };
    let control = &outcome.metadata.workflow_control;
    let control_value = control.suspend.then(|| {
        json!({
            "suspend": true,
            "retryAfterMs": control.retry_after.map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX)),
            "message": control.message.clone().unwrap_or_default(),
        })
    });
    if phase == "Succeeded" {
        if action == WorkflowAction::Configure && !control.suspend {
            if let Some(output) = &outcome.output {
                works::upsert_from_run(rt, run, &promise, output, &outcome.metadata).await?;
            }
        }
        if let Some(status_yaml) = &outcome.metadata.status {
            merge_status(rt, &parent_kind, &ObjectKey::of(&object), status_yaml).await?;
        }
    }
    info!(run = %run_name, phase, "pipeline run finished");
    Ok(Finished {
        phase,
        message,
        exit_code,
        control: control_value,
    })
}

fn suffix(reason: &str) -> String {
    if reason.is_empty() {
        String::new()
    } else {
        format!(": {reason}")
    }
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
