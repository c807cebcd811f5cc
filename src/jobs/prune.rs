//! Prunes the Jobs of one workflow of a Promise or request: those of pipelines no longer in it
//! and the oldest of the others, as [`super::history::to_prune_in_workflow`] picks them.

use k8s_openapi::api::batch::v1::Job;
use kube::api::{DeleteParams, ListParams};
use kube::{Api, Client};

use super::{api_error, history, job, Error};
use crate::api::Action;
use crate::pipeline::Owner;

/// Lists the workflow's Jobs and deletes the finished ones to prune (background propagation:
/// their pods follow); a Job gone meanwhile is fine.
pub(super) async fn run(
    client: &Client,
    settings: &job::Settings,
    owner: &Owner,
    action: Action,
    pipelines: &[String],
) -> Result<(), Error> {
    let (namespace, selector) = history::workflow_jobs(owner, action, &settings.system_namespace);
    let jobs: Api<Job> = Api::namespaced(client.clone(), &namespace);
    let listed = jobs
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(api_error("list", format!("Jobs labelled {selector}")))?;
    let doomed = history::to_prune_in_workflow(&listed.items, pipelines, settings.jobs_to_keep);
    for name in &doomed {
        match jobs.delete(name, &DeleteParams::background()).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => return Err(api_error("delete", format!("Job {name}"))(e)),
        }
    }
    if !doomed.is_empty() {
        tracing::info!(%owner, %action, pruned = doomed.len(), "pruned the Jobs of old runs");
    }
    Ok(())
}
