//! What Promises and requests report of their workflows: `status.pipelines`, one entry per
//! pipeline of the current configure attempt and, for requests, where its files landed; and
//! Kratix's `status.kratix.workflows`, each workflow's pipelines keyed by its action
//! (`configure`, `delete`), so that a delete workflow never overwrites the configure entries.
//!
//! Kratix's keyed layout:
//! <https://github.com/syntasso/kratix/blob/493fce745ae0ca8b913b15706508ef5013d854b2/api/v1alpha1/promise_types.go>
//! (`WorkflowStatuses`, `WorkflowStatus`, `WorkflowPipelineStatus`).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// One pipeline of the current attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PipelineStatusEntry {
    pub name: String,
    /// `Pending`, `Running`, `Succeeded`, `Failed` or `Suspended`.
    pub phase: &'static str,
    pub attempts: u32,
    /// The suspension message while suspended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// RFC 3339 time at which a failed pipeline is retried or a suspended one resumed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_retry_at: Option<String>,
    /// Requests only: where the pipeline's files went.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destinations: Option<Vec<Landing>>,
}

/// Where one placement of a pipeline's files landed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Landing {
    /// `null` when the placement cannot be read.
    pub destination: Option<String>,
    /// The state store's version (Git commit) holding the files; `null` until written.
    pub version: Option<String>,
    /// The files are written for the placement's current generation.
    #[serde(default)]
    pub written: bool,
}

/// The fields the earlier flat layout kept directly under `status.kratix.workflows`. They are
/// not workflow keys: reading skips them, and a status holding them is migrated.
pub const FLAT_FIELDS: [&str; 3] = [
    "pipelines",
    "suspendedGeneration",
    "lastSuccessfulConfigureWorkflowTime",
];

/// `status.kratix.workflows`: each workflow's state, keyed by its action (`configure`,
/// `delete`).
///
/// Reading is lenient, as a status may come from an earlier version or another tool: the flat
/// layout's fields ([`FLAT_FIELDS`]) and entries that are not a workflow's state are skipped
/// (and so dropped when the status is written again); anything but a mapping reads as empty.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(transparent)]
pub struct WorkflowStatuses(pub BTreeMap<String, WorkflowStatus>);

impl<'de> Deserialize<'de> for WorkflowStatuses {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let Value::Object(map) = Value::deserialize(deserializer)? else {
            return Ok(Self::default());
        };
        Ok(Self(
            map.into_iter()
                .filter(|(key, _)| !FLAT_FIELDS.contains(&key.as_str()))
                .filter_map(|(key, value)| Some((key, WorkflowStatus::deserialize(value).ok()?)))
                .collect(),
        ))
    }
}

impl WorkflowStatuses {
    /// The workflow of `action` (`configure`, `delete`).
    pub fn get(&self, action: &str) -> Option<&WorkflowStatus> {
        self.0.get(action)
    }
}

/// One workflow's state: its pipelines in order, and while a pipeline has suspended it, the
/// generation it suspended.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pipelines: Vec<WorkflowPipelineStatus>,
    /// The object's generation when a pipeline suspended the workflow; only while suspended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspended_generation: Option<i64>,
    /// Configure workflows: when the workflow last completed (RFC 3339), kept while it runs
    /// again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_successful_configure_workflow_time: Option<String>,
}

impl WorkflowStatus {
    /// Nothing to say: no pipelines and no times (the key is then left out).
    pub fn is_empty(&self) -> bool {
        self == &Self::default()
    }
}

/// One pipeline of a workflow.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowPipelineStatus {
    #[serde(default)]
    pub name: String,
    /// The `kratix.io/hash` of the pipeline's last run; absent until it has run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    /// `Pending`, `Running`, `Succeeded`, `Failed` or `Suspended`.
    #[serde(default)]
    pub phase: String,
    /// Runs of the pipeline in the current attempt (retries and resumes included).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub attempts: i64,
    /// What the pipeline said when it suspended the workflow, or what a running one is doing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// RFC 3339 time at which a failed pipeline is retried or a suspended one resumed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_retry_at: Option<String>,
    /// RFC 3339 time at which `phase` last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
}

impl WorkflowPipelineStatus {
    /// Settled: it succeeded at `hash` (the object's current `kratix.io/hash`), so nothing of it
    /// is left to run.
    pub fn settled_at(&self, hash: &str) -> bool {
        self.phase == super::words::phases::SUCCEEDED && self.hash.as_deref() == Some(hash)
    }
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn entries_are_stored_in_the_shape_status_readers_expect() {
        let cases = [
            (
                PipelineStatusEntry {
                    name: "a".into(),
                    phase: "Running",
                    attempts: 1,
                    message: None,
                    next_retry_at: None,
                    destinations: None,
                },
                json!({"name": "a", "phase": "Running", "attempts": 1}),
            ),
            (
                PipelineStatusEntry {
                    name: "b".into(),
                    phase: "Failed",
                    attempts: 2,
                    message: Some("m".into()),
                    next_retry_at: Some("2026-01-01T00:00:00Z".into()),
                    destinations: Some(vec![
                        Landing {
                            destination: Some("d".into()),
                            version: None,
                            written: false,
                        },
                        Landing {
                            destination: None,
                            version: Some("abc".into()),
                            written: true,
                        },
                    ]),
                },
                json!({"name": "b", "phase": "Failed", "attempts": 2, "message": "m",
                       "nextRetryAt": "2026-01-01T00:00:00Z",
                       "destinations": [
                           {"destination": "d", "version": null, "written": false},
                           {"destination": null, "version": "abc", "written": true}]}),
            ),
        ];
        for (entry, stored) in cases {
            assert_eq!(
                serde_json::to_value(&entry).expect("serializable"),
                stored,
                "{}",
                entry.name
            );
        }
    }

    #[test]
    fn keyed_workflows_read_leniently_and_write_kratix_names() {
        let stored = json!({
            "configure": {
                "lastSuccessfulConfigureWorkflowTime": "2026-01-01T00:00:00Z",
                "pipelines": [{"name": "a", "hash": "h", "phase": "Succeeded", "attempts": 1,
                               "lastTransitionTime": "2026-01-01T00:00:00Z"}],
            },
            "delete": {"suspendedGeneration": 3, "pipelines": [
                {"name": "bye", "phase": "Suspended", "message": "m",
                 "nextRetryAt": "2026-01-01T00:05:00Z"}]},
        });
        let read: WorkflowStatuses = serde_json::from_value(stored.clone()).expect("keyed");
        assert_eq!(
            read.get("delete").and_then(|d| d.suspended_generation),
            Some(3)
        );
        assert_eq!(
            serde_json::to_value(&read).expect("JSON"),
            stored,
            "round trip"
        );

        // The flat layout's fields, and keys that are no workflow's state, are skipped.
        let cases = [
            (
                json!({"pipelines": [{}], "suspendedGeneration": 1,
                    "lastSuccessfulConfigureWorkflowTime": "t", "configure": {}}),
                json!({"configure": {}}),
            ),
            (
                json!({"configure": 3, "delete": {"pipelines": "no"}}),
                json!({}),
            ),
            (json!("not a mapping"), json!({})),
            (
                json!({"configure": {"pipelines": [{"phase": "Pending"}]}}),
                json!({"configure": {"pipelines": [{"name": "", "phase": "Pending"}]}}),
            ),
        ];
        for (stored, want) in cases {
            let read: WorkflowStatuses =
                serde_json::from_value(stored.clone()).expect("lenient read");
            assert_eq!(serde_json::to_value(&read).expect("JSON"), want, "{stored}");
        }
    }

    #[test]
    fn a_pipeline_is_settled_when_it_succeeded_at_the_current_hash() {
        let entry = |phase: &str, hash: Option<&str>| WorkflowPipelineStatus {
            name: "a".into(),
            hash: hash.map(str::to_string),
            phase: phase.into(),
            ..WorkflowPipelineStatus::default()
        };
        let cases = [
            (entry("Succeeded", Some("h1")), true),
            (entry("Succeeded", Some("h0")), false),
            (entry("Succeeded", None), false),
            (entry("Pending", Some("h1")), false),
            (entry("Suspended", Some("h1")), false),
        ];
        for (entry, want) in cases {
            assert_eq!(entry.settled_at("h1"), want, "{entry:?}");
        }
    }
}
