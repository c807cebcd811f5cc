//! Carries out one claimed run: observes what it is for (its pipeline, Promise and object),
//! runs its containers, asks [`decide::after_run`] what their ending means, and acts on it
//! (the Work, the event; the outcome, with the pipeline's `status.yaml`, is recorded on the run
//! and its owner's reconcile carries that over).

use tracing::{info, Instrument};

use crate::api::object::label;
use crate::api::pipeline::Pipeline;
use crate::api::{
    labels, promise_api, Action, Object, ObjectKey, PipelineRun, PipelineRunSpec, Promise,
    WorkflowType,
};
use crate::events;
use crate::metrics::WorkRef;
use crate::pipeline::contract::{kratix_env, ResourceObject, Subject as EnvSubject, WorkflowEnv};
use crate::pipeline::{self, RunOutcome, RunRequest};

use crate::controllers::lookups;
use crate::controllers::run::decide;
use crate::controllers::run::error;
use crate::controllers::run::failure::Error as Failure;
use crate::controllers::run::folder;
use crate::controllers::run::into_work;
use crate::controllers::run::outcome::Finished;
use crate::controllers::Error;
use crate::controllers::Runtime;

/// What a run is for, as observed before its containers run.
struct Observed {
    spec: PipelineRunSpec,
    workflow_type: WorkflowType,
    action: Action,
    pipeline: Pipeline,
    promise_obj: Object,
    promise: Promise,
    /// The live object the pipeline reads.
    object: Object,
    env_subject: EnvSubject,
}

/// Carries out the run and says how it ended.
pub(super) async fn execute(rt: &Runtime, run: &Object) -> Result<Finished, Error> {
    let key = ObjectKey::of(run);
    let o = observe(rt, run).await?;
    let outcome = run_containers(rt, run, &o).await?;

    let what = format!("{} pipeline {}", o.action, o.spec.pipeline_name);
    let control = &outcome.metadata.workflow_control;
    let decided = decide::after_run(&decide::Ended {
        workflow_type: o.workflow_type,
        action: o.action,
        what: &what,
        result: &outcome.result,
        timeout: rt.settings.pipeline_timeout,
        control,
        status_yaml: outcome.metadata.status.as_ref(),
        has_output: outcome.output.is_some(),
    });
    if let (true, Some(output)) = (decided.write_work, &outcome.output) {
        // Before the Work is stored: its placements may be written at once.
        rt.metrics.pipeline_ended(WorkRef {
            namespace: key.namespace.clone().unwrap_or_default(),
            promise: o.spec.promise_name.clone(),
            resource: o.spec.resource_name.clone(),
            pipeline: o.pipeline.name().to_string(),
        });
        into_work::upsert(rt, run, &o.promise, output, &outcome.metadata).await?;
    }
    let (reason, message) = &decided.event;
    events::record(&rt.cp, &o.object, *reason, message).await;
    info!(run = %key.name, phase = ?decided.finished.phase, "pipeline run finished");
    Ok(decided.finished)
}

/// Reads what the run is for: its stored pipeline, its Promise and the live object.
async fn observe(rt: &Runtime, run: &Object) -> Result<Observed, Error> {
    let run_name = run.metadata.name.clone().unwrap_or_default();
    let bad = |source: Failure| error::Error::not_carried_out(&run_name, source);
    let spec = crate::api::object::to_typed::<PipelineRun>(run)
        .map_err(|e| bad(Failure::StoredRun(e)))?
        .spec;
    let (workflow_type, action) = (spec.workflow_type, spec.workflow_action);
    let pipeline: Pipeline = serde_json::from_value(spec.pipeline.clone())
        .map_err(|e| bad(Failure::StoredPipeline(e)))?;
    let promise_name = spec.promise_name.clone();
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
    let (object, env_subject) = match workflow_type {
        WorkflowType::Resource => {
            let kind = promise_api::kinds_from_promises(std::slice::from_ref(&promise_obj))
                .into_iter()
                .next()
                .ok_or_else(|| bad(Failure::NoRequestKind(promise_name.clone())))?;
            let (ns, name) = (spec.resource_namespace.clone(), spec.resource_name.clone());
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
            (obj, env)
        }
        WorkflowType::Promise => (promise_obj.clone(), EnvSubject::Promise),
    };
    Ok(Observed {
        spec,
        workflow_type,
        action,
        pipeline,
        promise_obj,
        promise,
        object,
        env_subject,
    })
}

/// Runs the pipeline's containers in a fresh folder; what they did is the outcome.
async fn run_containers(rt: &Runtime, run: &Object, o: &Observed) -> Result<RunOutcome, Error> {
    let key = ObjectKey::of(run);
    let bad = |source: Failure| error::Error::not_carried_out(&key.name, source);
    let object_yaml = serde_yaml::to_string(&o.object).map_err(|e| bad(Failure::ObjectYaml(e)))?;
    let env = kratix_env(&WorkflowEnv {
        action: o.action,
        promise_name: o.spec.promise_name.clone(),
        promise_version: o
            .spec
            .promise_version_or(label(&o.promise_obj, labels::PROMISE_VERSION)),
        pipeline_name: o.pipeline.name().to_string(),
        subject: o.env_subject.clone(),
        dry_run: false,
    });
    let work_dir = rt.platform.run_dir(run);
    folder::fresh(work_dir.clone()).await.map_err(bad)?;
    let mode = pipeline::Mode::from_env().map_err(|e| bad(e.into()))?;
    let secrets_namespace = match o.workflow_type {
        WorkflowType::Resource => o.spec.resource_namespace.as_str(),
        WorkflowType::Promise => crate::api::SYSTEM_NAMESPACE,
    };
    let registries =
        crate::controllers::run::pull_secrets::registries(rt, &o.pipeline, secrets_namespace)
            .await?;
    let images = pipeline::ImageMap::load_for_home(&rt.platform.home).map_err(|e| bad(e.into()))?;
    info!(run = %key.name, pipeline = o.pipeline.name(), "pipeline run started");
    let (progress, told) = pipeline::Progress::channel();
    let telling = tokio::spawn(
        crate::controllers::run::progress::store(
            rt.clone(),
            key.clone(),
            rt.executor.clone(),
            told,
        )
        .in_current_span(),
    );
    let outcome = rt
        .pipelines
        .run(RunRequest {
            run_name: key.name.clone(),
            pipeline: o.pipeline.clone(),
            object_yaml,
            env,
            work_dir,
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
    Ok(outcome.map_err(|e| bad(e.into()))?)
}
