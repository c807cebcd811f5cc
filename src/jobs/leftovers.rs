//! Jobs left running by an interrupted run. A controller that stops gives its runs back and a
//! new one runs them again, but the Job the first one created runs on, and on Kubernetes the
//! note of it in the run's folder is lost with the controller's pod. One object's runs never
//! overlap, so before a run creates its Job, any unfinished Job of the same object is such a
//! leftover: it is deleted (foreground, its pods first) and waited for until gone, so that the
//! object's pipelines never run twice at once.

use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use kube::api::ListParams;
use kube::Api;

use super::identity::{self, Identity};
use super::{api_error, delete_job, status, Error};

/// How long a leftover Job may take to go (its pods' grace period, then the Job).
const GONE_WITHIN: Duration = Duration::from_secs(120);
const LOOK_EVERY: Duration = Duration::from_millis(500);

/// The label selector of every Job of the object `identity` runs for, of both workflows.
pub(crate) fn object_selector(identity: &Identity) -> String {
    let mut labels = identity.promise_labels();
    labels.insert(
        identity::WORKFLOW_TYPE_LABEL.into(),
        identity.workflow_type().into(),
    );
    if let Some(r) = &identity.resource {
        labels.insert(identity::RESOURCE_NAME_LABEL.into(), r.name.clone());
    }
    super::rights::selector(&labels)
}

/// Deletes the object's unfinished Jobs and waits until they are gone; how many there were.
pub(super) async fn stop(jobs: &Api<Job>, identity: &Identity) -> Result<usize, Error> {
    let selector = object_selector(identity);
    let listed = jobs
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(api_error("list", format!("Jobs labelled {selector}")))?;
    let running: Vec<String> = listed
        .items
        .iter()
        .filter(|j| status::finished(j).is_none())
        .filter_map(|j| j.metadata.name.clone())
        .collect();
    for name in &running {
        tracing::warn!(job = %name, "deleting the Job of an interrupted run before running it again");
        delete_job(jobs, name).await?;
    }
    let deadline = tokio::time::Instant::now() + GONE_WITHIN;
    for name in &running {
        loop {
            let left = jobs
                .get_opt(name)
                .await
                .map_err(api_error("read", format!("Job {name}")))?;
            if left.is_none() {
                break;
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(Error::LeftoverStays { name: name.clone() });
            }
            tokio::time::sleep(LOOK_EVERY).await;
        }
    }
    Ok(running.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Action;

    #[test]
    fn the_object_selector_takes_every_pipeline_and_action_of_the_object() {
        let mut id = Identity {
            action: Action::Delete,
            promise: "db".into(),
            promise_version: "v1".into(),
            pipeline: "cleanup".into(),
            resource: None,
        };
        assert_eq!(
            object_selector(&id),
            "kratix.io/promise-name=db,kratix.io/workflow-type=promise"
        );
        id.resource = Some(identity::Resource {
            name: "mine".into(),
            namespace: "team-a".into(),
            group: "example.com".into(),
            plural: "things".into(),
        });
        assert_eq!(
            object_selector(&id),
            "kratix.io/promise-name=db,kratix.io/resource-name=mine,kratix.io/workflow-type=resource"
        );
    }
}
