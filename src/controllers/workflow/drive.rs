//! Carries out what one look at an object's workflow decided
//! ([`crate::controllers::workflow::decide::plan::decide`]): starts the next pipeline run when
//! told to, and prunes the workflow's runs.

use crate::api::pipeline::Pipeline;
use crate::api::Action;
use crate::api::WorkflowType;
use crate::api::{labels, Object, ObjectKey, PipelineRun, PipelineRunSpec, PipelineRunStatus};
use crate::controllers::workflow::decide;
use crate::controllers::workflow::decide::RunRecord;
use crate::platform::builtin;

pub(crate) use crate::controllers::workflow::decide::plan::{
    decide, new_record, Decided, Position,
};

use crate::controllers::subject::Subject;
use crate::controllers::{status, Error, Runtime};
use crate::events::{self, Reason};

/// Runs kept per pipeline (Kratix's `numberOfJobsToKeep`); a pipeline no longer in the
/// workflow keeps none.
const RUNS_TO_KEEP: usize = 5;

/// Carries out what [`decide`] decided, but for the object's own status and labels: creates the
/// run it starts (with its event), and prunes the workflow's runs. Returns the started run.
pub(crate) async fn carry_out(
    rt: &Runtime,
    subject: &Subject,
    action: Action,
    pipelines: &[Pipeline],
    decided: &Decided,
    runs: &[(Object, RunRecord)],
) -> Result<Option<RunRecord>, Error> {
    let names: Vec<String> = pipelines.iter().map(|p| p.name().to_string()).collect();
    let mut started = None;
    if let Some(at) = &decided.start {
        let pipeline = &pipelines[at.index];
        started = Some(start_run(rt, subject, action, pipeline, at.clone()).await?);
        let message = format!(
            "{} pipeline {} ({} of {}) started",
            action.as_str(),
            pipeline.name(),
            at.index + 1,
            pipelines.len()
        );
        events::record(&rt.cp, &subject.object, Reason::PipelineStarted, &message).await;
    }
    if decide::prunes_after(&decided.step) {
        prune(rt, subject, action, &names, runs, started.clone()).await?;
    }
    Ok(started)
}

/// Creates the run of `pipeline`; its record as created.
async fn start_run(
    rt: &Runtime,
    subject: &Subject,
    action: Action,
    pipeline: &Pipeline,
    at: Position,
) -> Result<RunRecord, Error> {
    let Position {
        index,
        last,
        attempt,
    } = at.clone();
    let sequence = rt.cp.next_sequence("pipelinerun").await?;
    let mut run_labels: std::collections::BTreeMap<String, String> =
        subject.selector_labels().into_iter().collect();
    run_labels.insert(labels::PIPELINE_NAME.into(), pipeline.name().to_string());
    run_labels.insert(labels::WORKFLOW_ACTION.into(), action.as_str().to_string());
    run_labels.insert(labels::HASH.into(), subject.hash.clone());
    let prefix = match subject.workflow_type {
        WorkflowType::Promise => subject.promise_name.clone(),
        WorkflowType::Resource => format!("{}-{}", subject.promise_name, subject.name()),
    };
    let name = run_name(&prefix, action, pipeline.name(), sequence);
    let encode = |what: &'static str| {
        let name = name.clone();
        move |source| crate::controllers::workflow::error::Error::EncodeRun {
            run: name.clone(),
            what,
            source,
        }
    };
    let for_resource = subject.workflow_type == WorkflowType::Resource;
    let spec = PipelineRunSpec {
        sequence,
        promise_name: subject.promise_name.clone(),
        resource_name: if for_resource {
            subject.name()
        } else {
            String::new()
        },
        resource_namespace: if for_resource {
            subject.run_namespace()
        } else {
            String::new()
        },
        pipeline_name: pipeline.name().to_string(),
        pipeline_index: i64::try_from(index).unwrap_or(i64::MAX),
        workflow_type: subject.workflow_type,
        workflow_action: action,
        hash: subject.hash.clone(),
        promise_version: subject.promise_version.clone(),
        pipeline: serde_json::to_value(pipeline).map_err(encode("the pipeline"))?,
        last,
        attempt,
    };
    let stored = spec.stored().map_err(encode("the run"))?;
    let mut typed = PipelineRun::new(&name, spec);
    typed.metadata.namespace = Some(subject.run_namespace());
    typed.metadata.labels = Some(run_labels);
    let key = ObjectKey::new(
        crate::api::GROUP,
        "PipelineRun",
        Some(&subject.run_namespace()),
        &name,
    );
    let mut status = PipelineRunStatus::default();
    let claimed = crate::controllers::run::ClaimedAtCreation::take(rt, &key, &mut status);
    typed.status = Some(status);
    let kind = builtin(crate::api::Builtin::PipelineRun);
    let created = match crate::api::object::from_typed_with_spec(&typed, stored) {
        Ok(run) if claimed.is_some() => rt.cp.create_with_status(&kind, &run).await,
        Ok(run) => rt.cp.create(&kind, &run).await,
        Err(source) => {
            if let Some(claimed) = claimed {
                claimed.stored(None);
            }
            return Err(encode("the run")(source).into());
        }
    };
    match (created, claimed) {
        (Ok(run), Some(claimed)) => claimed.stored(Some(run)),
        (Ok(_), None) => {}
        (Err(e), claimed) => {
            if let Some(claimed) = claimed {
                claimed.stored(None);
            }
            return Err(e.into());
        }
    }
    tracing::info!(run = %name, object = %subject.key(), "pipeline run created");
    Ok(new_record(subject, action, pipeline.name(), sequence, &at))
}

/// `<object>-<action?>-<pipeline>-<sequence>`, cut to fit a Kubernetes name.
pub(crate) fn run_name(prefix: &str, action: Action, pipeline: &str, sequence: i64) -> String {
    let action_part = match action {
        Action::Configure => String::new(),
        Action::Delete => "delete-".into(),
    };
    let suffix = format!("-{action_part}{pipeline}-{sequence}");
    let room = 253usize.saturating_sub(suffix.len());
    let prefix: String = prefix.chars().take(room).collect();
    format!("{prefix}{suffix}")
}

/// Deletes, with their folders, the runs of `action`'s workflow that
/// [`decide::runs_to_prune`] picks (`started`, just created, counted among the newest), and
/// has the executor prune what it keeps of them (Jobs) after a start or once runs went.
async fn prune(
    rt: &Runtime,
    subject: &Subject,
    action: Action,
    names: &[String],
    runs: &[(Object, RunRecord)],
    started: Option<RunRecord>,
) -> Result<(), Error> {
    let mut records: Vec<RunRecord> = runs.iter().map(|(_, r)| r.clone()).collect();
    let started_one = started.is_some();
    records.extend(started);
    let doomed = decide::runs_to_prune(action, names, &records, RUNS_TO_KEEP);
    let kind = builtin(crate::api::Builtin::PipelineRun);
    for (obj, _) in runs.iter().filter(|(_, r)| doomed.contains(&r.sequence)) {
        crate::controllers::run::folder::remove(rt.platform.run_dir(obj), &ObjectKey::of(obj))
            .await;
        status::delete_if_present(rt.cp.as_ref(), &kind, obj).await?;
    }
    if started_one || !doomed.is_empty() {
        // What the executor keeps is only for inspection: failing to tidy it up fails nothing.
        if let Err(error) = rt.pipelines.prune(&subject.owner(), action, names).await {
            tracing::warn!(object = %subject.key(), error = %crate::controllers::ErrorChain(&error), "cannot prune what the executor kept of old runs");
        }
    }
    Ok(())
}
