//! How many finished Jobs of a pipeline stay: Kratix keeps the newest few (`numberOfJobsToKeep`,
//! five by default) for inspection and deletes the rest. Pure.

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::Job;

use super::identity::{self, Identity};

/// Kratix's default.
pub const DEFAULT_JOBS_TO_KEEP: usize = 5;

/// The label selector of every Job of one pipeline of one object's workflow.
pub fn pipeline_selector(identity: &Identity) -> String {
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
pub fn to_prune(jobs: &[Job], keep: usize) -> Vec<String> {
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
}
