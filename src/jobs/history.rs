//! How many finished Jobs of a pipeline stay: Kratix keeps the newest few (`numberOfJobsToKeep`,
//! five by default) for inspection and deletes the rest; a pipeline no longer in its workflow
//! keeps none. Pure.

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::Job;

use super::identity::{self, Identity};
use crate::api::Action;
use crate::pipeline::Owner;

/// The label selector of every Job of one pipeline of one object's workflow.
pub(crate) fn pipeline_selector(identity: &Identity) -> String {
    let mut labels: BTreeMap<String, String> = identity.workflow_labels();
    if let Some(r) = &identity.resource {
        labels.insert(identity::RESOURCE_NAME_LABEL.into(), r.name.clone());
    }
    labels
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// The names of the Jobs to delete so that only the `keep` newest remain, oldest first.
/// Creation times tie at the second; the name then orders them, so the choice is stable.
pub(crate) fn to_prune(jobs: &[Job], keep: usize) -> Vec<String> {
    let mut by_age: Vec<(Option<jiff::Timestamp>, String)> = jobs
        .iter()
        .map(|j| {
            (
                j.metadata.creation_timestamp.as_ref().map(|t| t.0),
                j.metadata.name.clone().unwrap_or_default(),
            )
        })
        .collect();
    by_age.sort();
    let excess = by_age.len().saturating_sub(keep);
    by_age
        .into_iter()
        .take(excess)
        .map(|(_, name)| name)
        .collect()
}

/// Where the Jobs of `owner`'s `action` workflow run, and the label selector of all of them,
/// whatever their pipeline.
pub(crate) fn workflow_jobs(
    owner: &Owner,
    action: Action,
    system_namespace: &str,
) -> (String, String) {
    let (namespace, mut labels) = match owner {
        Owner::Promise { name } => (
            system_namespace.to_string(),
            BTreeMap::from([
                (identity::PROMISE_NAME_LABEL, name.as_str()),
                (identity::WORKFLOW_TYPE_LABEL, "promise"),
            ]),
        ),
        Owner::Request {
            promise,
            namespace,
            name,
        } => (
            super::sweep::request_namespace(namespace, system_namespace).to_string(),
            BTreeMap::from([
                (identity::PROMISE_NAME_LABEL, promise.as_str()),
                (identity::WORKFLOW_TYPE_LABEL, "resource"),
                (identity::RESOURCE_NAME_LABEL, name.as_str()),
            ]),
        ),
    };
    labels.insert(identity::WORKFLOW_ACTION_LABEL, action.as_str());
    let selector = labels
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",");
    (namespace, selector)
}

/// The names of the finished Jobs of one workflow to delete: every one of a pipeline not in
/// `pipelines` (by their `kratix.io/pipeline-name`), and of each current pipeline all but the
/// newest `keep` (as [`to_prune`]). Jobs still running are never chosen.
pub(crate) fn to_prune_in_workflow(jobs: &[Job], pipelines: &[String], keep: usize) -> Vec<String> {
    let mut by_pipeline: BTreeMap<&str, Vec<Job>> = BTreeMap::new();
    for job in jobs.iter().filter(|j| super::status::finished(j).is_some()) {
        let pipeline = job
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(identity::PIPELINE_NAME_LABEL))
            .map_or("", String::as_str);
        by_pipeline.entry(pipeline).or_default().push(job.clone());
    }
    by_pipeline
        .into_iter()
        .flat_map(|(pipeline, group)| {
            let kept = if pipelines.iter().any(|p| p == pipeline) {
                keep
            } else {
                0
            };
            to_prune(&group, kept)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn job(name: &str, created: &str) -> Job {
        serde_json::from_value(json!({"metadata": {"name": name, "creationTimestamp": created}}))
            .expect("job parses")
    }

    #[test]
    fn only_the_newest_jobs_stay() {
        let jobs = vec![
            job("c", "2026-01-01T00:00:03Z"),
            job("a", "2026-01-01T00:00:01Z"),
            job("b", "2026-01-01T00:00:02Z"),
            job("d", "2026-01-01T00:00:03Z"),
        ];
        let cases = [
            ("keep all", 5, vec![]),
            ("keep exactly all", 4, vec![]),
            ("keep two", 2, vec!["a", "b"]),
            ("keep one: a tie is broken by name", 1, vec!["a", "b", "c"]),
            ("keep none", 0, vec!["a", "b", "c", "d"]),
        ];
        for (case, keep, want) in cases {
            assert_eq!(to_prune(&jobs, keep), want, "{case}");
        }
    }

    #[test]
    fn the_selector_names_the_pipeline_of_the_object() {
        let env: Vec<(String, String)> = [
            ("KRATIX_WORKFLOW_ACTION", "configure"),
            ("KRATIX_WORKFLOW_TYPE", "resource"),
            ("KRATIX_PROMISE_NAME", "db"),
            ("KRATIX_PIPELINE_NAME", "inst"),
            ("KRATIX_OBJECT_NAME", "mine"),
            ("KRATIX_OBJECT_NAMESPACE", "team"),
            ("KRATIX_OBJECT_GROUP", "example.com"),
            ("KRATIX_CRD_PLURAL", "dbs"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .to_vec();
        let id = Identity::from_env("r", &env).expect("identity");
        assert_eq!(
            pipeline_selector(&id),
            "kratix.io/pipeline-name=inst,kratix.io/promise-name=db,kratix.io/resource-name=mine,kratix.io/workflow-action=configure,kratix.io/workflow-type=resource"
        );
    }

    #[test]
    fn a_workflow_prunes_removed_pipelines_and_keeps_the_newest_of_the_others() {
        let job = |name: &str, pipeline: &str, created: &str, finished: bool| -> Job {
            let mut job = json!({"metadata": {"name": name, "creationTimestamp": created,
                                 "labels": {"kratix.io/pipeline-name": pipeline}}});
            if finished {
                job["status"] = json!({"conditions": [{"type": "Complete", "status": "True"}]});
            }
            serde_json::from_value(job).expect("job parses")
        };
        let jobs = vec![
            job("a1", "a", "2026-01-01T00:00:01Z", true),
            job("a2", "a", "2026-01-01T00:00:02Z", true),
            job("a3", "a", "2026-01-01T00:00:03Z", true),
            job("b1", "b", "2026-01-01T00:00:01Z", true),
            job("b2", "b", "2026-01-01T00:00:04Z", false),
            job("c1", "c", "2026-01-01T00:00:02Z", true),
        ];
        let names = |list: &[&str]| {
            list.iter()
                .map(std::string::ToString::to_string)
                .collect::<Vec<_>>()
        };
        let cases = [
            (
                "all current, keep two",
                names(&["a", "b", "c"]),
                2,
                vec!["a1"],
            ),
            (
                "b and c removed: their finished Jobs go",
                names(&["a"]),
                5,
                vec!["b1", "c1"],
            ),
            (
                "renamed: nothing current",
                names(&["x"]),
                5,
                vec!["a1", "a2", "a3", "b1", "c1"],
            ),
            ("keep one", names(&["a", "b"]), 1, vec!["a1", "a2", "c1"]),
        ];
        for (case, pipelines, keep, want) in cases {
            assert_eq!(
                to_prune_in_workflow(&jobs, &pipelines, keep),
                want,
                "{case}"
            );
        }
    }

    #[test]
    fn a_workflows_jobs_are_found_by_its_owner_and_action() {
        let request = |namespace: &str| Owner::Request {
            promise: "db".into(),
            namespace: namespace.into(),
            name: "mine".into(),
        };
        let cases = [
            (
                Owner::Promise { name: "db".into() },
                Action::Configure,
                ("sys", "kratix.io/promise-name=db,kratix.io/workflow-action=configure,kratix.io/workflow-type=promise"),
            ),
            (
                request("team"),
                Action::Delete,
                ("team", "kratix.io/promise-name=db,kratix.io/resource-name=mine,kratix.io/workflow-action=delete,kratix.io/workflow-type=resource"),
            ),
            (
                request(""),
                Action::Configure,
                ("sys", "kratix.io/promise-name=db,kratix.io/resource-name=mine,kratix.io/workflow-action=configure,kratix.io/workflow-type=resource"),
            ),
        ];
        for (owner, action, (namespace, selector)) in cases {
            assert_eq!(
                workflow_jobs(&owner, action, "sys"),
                (namespace.to_string(), selector.to_string()),
                "{owner}"
            );
        }
    }
}
