//! Executes PipelineRuns: claims a pending run for this executor, runs its containers through the
//! local executor, turns the output into the pipeline's Work, and records the outcome on the run
//! (with the pipeline's `status.yaml`, which the run's owner carries over into its status). A run found `Running` is run again only when the executor that
//! claimed it is gone (see [`claims`]).

pub(crate) mod claims;
mod decide;
pub(crate) mod error;
mod execute;
pub(crate) mod executing;
pub(crate) mod failure;
pub(crate) mod folder;
mod into_work;
mod outcome;
mod progress;
pub(crate) mod pull_secrets;
mod status_yaml;

use tracing::{error, warn};

use crate::api::{Object, ObjectKey, PipelineRun, PipelineRunPhase, PipelineRunStatus};
use crate::platform::builtin;
use crate::store::Selector;

use crate::controllers::now_rfc3339;
use crate::controllers::run::claims::Executor;
use crate::controllers::run::claims::Verdict;
use crate::controllers::run::outcome::Finished;
use crate::controllers::status;
use crate::controllers::Error;
use crate::controllers::ErrorChain;
use crate::controllers::Next;
use crate::controllers::Runtime;
use crate::metrics::RunLabels;

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
    let kind = builtin(crate::api::Builtin::PipelineRun);
    status::update_typed_status(rt.cp.as_ref(), &kind, key, "PipelineRun", change).await
}

/// Looks at every run found `Running` when the controllers start: those whose executor is gone
/// were interrupted and run again; those a live executor carries out are left alone.
pub(crate) async fn recover_interrupted(rt: &Runtime) -> Result<(), Error> {
    let kind = builtin(crate::api::Builtin::PipelineRun);
    for run in rt.cp.list(&kind, None, &Selector::everything()).await? {
        if phase(&run) == Some(PipelineRunPhase::Running) {
            settle_running(rt, &run).await?;
        }
    }
    Ok(())
}

pub(crate) async fn reconcile(rt: &Runtime, run: Object) -> Result<Next, Error> {
    match phase(&run) {
        Some(PipelineRunPhase::Pending) => claim_and_start(rt, &ObjectKey::of(&run)),
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
                    &builtin(crate::api::Builtin::PipelineRun),
                    key.namespace.as_deref(),
                    &key.name,
                )
                .await?;
            if !fresh.is_some_and(|run| {
                phase(&run) == Some(PipelineRunPhase::Running) && executor_of(&run) == claim
            }) {
                return Ok(Next::Done);
            }
            let claimant = claim.as_ref().map_or_else(
                || "an unknown executor".into(),
                |c| format!("process {}", c.pid),
            );
            warn!(run = %key, "run was interrupted ({claimant} is gone); running it again");
            kill_leftovers(rt, run).await;
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
fn claim_and_start(rt: &Runtime, key: &ObjectKey) -> Result<Next, Error> {
    if rt.is_executing(key) {
        return Ok(Next::Done);
    }
    let rt2 = rt.clone();
    let task_key = key.clone();
    rt.start_executing(key.clone(), async move {
        // The semaphore is never closed, so this only fails if it were.
        let _slot = rt2.pipeline_slots.clone().acquire_owned().await;
        if let Some(claimed) = claim_retrying(&rt2, &task_key).await {
            carry_out_claimed(&rt2, &claimed).await;
        }
        rt2.done_executing(&task_key);
    });
    Ok(Next::Done)
}

/// Carries out a run this executor holds the claim of, and records its outcome.
async fn carry_out_claimed(rt: &Runtime, claimed: &Object) {
    let began = std::time::Instant::now();
    let finished = match execute::execute(rt, claimed).await {
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
        rt.start_executing(key.clone(), async move {
            let _slot = slot;
            if let Ok(Some(claimed)) = stored.await {
                carry_out_claimed(&rt2, &claimed).await;
            }
            rt2.done_executing(&task_key);
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
            status_yaml: None,
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
async fn kill_leftovers(rt: &Runtime, run: &Object) {
    for group in rt.pipelines.kill_leftovers(&rt.platform.run_dir(run)).await {
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
    let kind = builtin(crate::api::Builtin::PipelineRun);
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
            s.status_yaml.clone_from(&finished.status_yaml);
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
