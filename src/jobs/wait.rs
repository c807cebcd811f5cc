//! Waiting for a pipeline Job, and gathering its containers' logs.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::StreamExt;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{ListParams, LogParams};
use kube::runtime::wait::await_condition;
use kube::runtime::{watcher, WatchStreamExt};
use kube::Api;

use super::{status, Error};

/// How waiting for a Job ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Waited {
    Finished(status::Finished),
    /// Someone deleted the Job before it finished.
    Gone,
    /// The run's time passed first.
    TimedOut,
}

/// Watches the Job until it completes, fails or disappears, and returns its pods as last seen:
/// the Job controller deletes a failed Job's running pods, and with them which container failed
/// or was running.
pub(super) async fn job_finished(
    jobs: &Api<Job>,
    pods: &Api<Pod>,
    name: &str,
    timeout: Duration,
) -> Result<(Waited, Vec<Pod>), Error> {
    let done = |job: Option<&Job>| job.is_none_or(|j| status::finished(j).is_some());
    let finished = await_condition(jobs.clone(), name, done);
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(finished, deadline);
    let labels = format!("job-name={name}");
    let selector = ListParams::default().labels(&labels);
    // The pods are followed by a watch (its first list served from the API server's cache):
    // a list every second per running Job read every pod of the namespace each time, a load
    // that grew with the square of the runs in progress.
    let pod_changes = watcher(
        pods.clone(),
        watcher::Config::default().labels(&labels).any_semantic(),
    )
    .default_backoff();
    tokio::pin!(pod_changes);
    let mut seen: BTreeMap<String, Pod> = BTreeMap::new();
    let waited = loop {
        tokio::select! {
            result = &mut finished => match result {
                Ok(job) => break job
                    .as_ref()
                    .and_then(status::finished)
                    .map_or(Waited::Gone, Waited::Finished),
                Err(source) => return Err(Error::Watch { name: name.to_string(), source }),
            },
            () = &mut deadline => break Waited::TimedOut,
            Some(change) = pod_changes.next() => {
                // A deleted pod is kept as last seen: that is what it is watched for.
                if let Ok(watcher::Event::Apply(pod) | watcher::Event::InitApply(pod)) = change {
                    seen.insert(pod.metadata.name.clone().unwrap_or_default(), pod);
                }
            }
        }
    };
    let now = pods
        .list(&selector)
        .await
        .map_err(|source| Error::Api {
            action: "list the pods of",
            what: format!("Job {name}"),
            source,
        })?
        .items;
    let seen = seen.into_values().collect();
    Ok((waited, if now.is_empty() { seen } else { now }))
}

/// Every container's logs, each headed `== container <name> ==` as with the local executor.
/// Where the API cannot serve them (no kubelet reachable), the container's termination message
/// stands in, with a note saying so.
pub(super) async fn collect_logs(pods: &Api<Pod>, pod_list: &[Pod], order: &[String]) -> String {
    let latest = pod_list
        .iter()
        .max_by_key(|p| p.metadata.creation_timestamp.as_ref().map(|t| t.0));
    let Some(pod) = latest else {
        return String::new();
    };
    let pod_name = pod.metadata.name.clone().unwrap_or_default();
    let messages = status::messages(pod_list);
    let mut logs = String::new();
    for container in order {
        let ran = messages.iter().any(|(n, _)| n == container)
            || pod.status.as_ref().is_some_and(|s| {
                s.init_container_statuses
                    .iter()
                    .flatten()
                    .chain(s.container_statuses.iter().flatten())
                    .any(|c| {
                        &c.name == container
                            && c.state.as_ref().is_some_and(|st| st.waiting.is_none())
                    })
            });
        if !ran {
            continue;
        }
        logs.push_str(&format!("== container {container} ==\n"));
        let params = LogParams {
            container: Some(container.clone()),
            ..LogParams::default()
        };
        match pods.logs(&pod_name, &params).await {
            Ok(text) => logs.push_str(&text),
            Err(e) => {
                logs.push_str(&format!("(logs not available from the API: {e})\n"));
                if let Some((_, m)) = messages.iter().find(|(n, _)| n == container) {
                    logs.push_str(m);
                }
            }
        }
        if !logs.ends_with('\n') {
            logs.push('\n');
        }
    }
    logs
}
