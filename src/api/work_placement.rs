//! WorkPlacement: one workload group of a Work scheduled onto one Destination.

use std::collections::BTreeMap;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use serde_json::Value;

use super::condition::Condition;
use super::work::Workload;

#[derive(CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "platform.kratix.io",
    version = "v1alpha1",
    kind = "WorkPlacement",
    doc = "One workload group of a Work, scheduled onto one Destination.",
    plural = "workplacements",
    shortname = "wp",
    namespaced,
    status = "WorkPlacementStatus",
    printcolumn = r#"{"name":"Destination","type":"string","jsonPath":".spec.targetDestinationName"}"#,
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].message"}"#,
    printcolumn = r#"{"name":"Version","type":"string","jsonPath":".status.versionID"}"#,
    printcolumn = r#"{"name":"Promise","type":"string","priority":1,"jsonPath":".spec.promiseName"}"#,
    printcolumn = r#"{"name":"Request","type":"string","priority":1,"jsonPath":".spec.resourceName"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct WorkPlacementSpec {
    pub target_destination_name: String,
    #[serde(default)]
    pub workloads: Vec<Workload>,
    #[serde(default)]
    // NB: no `default: ""` in the CRD: kube-apiserver 1.20 refuses empty-string defaults.
    #[schemars(skip_serializing_if = "String::is_empty")]
    pub promise_name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource_name: String,
    /// Workload group id.
    pub id: String,
    /// The Work's generation this placement was made from.
    #[serde(default)]
    pub generation: i64,
}

impl WorkPlacementSpec {
    /// The spec as the controllers store it; a dependency placement has no `resourceName` (see
    /// [`super::work::WorkSpec::stored`]).
    pub fn stored(&self) -> Result<Value, serde_json::Error> {
        serde_json::to_value(self)
    }
}

/// What the writer records: the files it owns in the state store and its conditions.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
// `extra` is not in the schema, so the API server must keep unknown fields.
#[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
pub struct WorkPlacementStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Paths written (and so owned) in the state store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<Vec<String>>,
    /// Paths about to be written: recorded before the write so a crash never leaves a file of
    /// ours that no record claims.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_files: Option<Vec<String>>,
    /// The state store's version (Git commit) holding the files.
    #[serde(default, rename = "versionID", skip_serializing_if = "Option::is_none")]
    pub version_id: Option<String>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub extra: BTreeMap<String, Value>,
}

impl WorkPlacementStatus {
    /// Its files are written for `generation` (the placement's current one): nothing to do
    /// until it changes.
    pub fn written_for(&self, generation: Option<i64>) -> bool {
        self.observed_generation == generation
            && super::condition::find(&self.conditions, super::words::types::WRITE_SUCCEEDED)
                .is_some_and(|c| c.status == super::ConditionStatus::True)
    }

    /// Every path the placement owns or is about to own.
    pub fn owned_paths(&self) -> std::collections::BTreeSet<String> {
        self.files
            .iter()
            .chain(&self.pending_files)
            .flatten()
            .cloned()
            .collect()
    }
}

/// How many characters of a state store's version are shown: as many as `git log --oneline`
/// gives a commit, with room to spare.
pub(crate) const SHORT_VERSION_CHARS: usize = 12;

/// The first [`SHORT_VERSION_CHARS`] characters of a state store's version (a Git commit, or
/// whatever another store records, which may be any text), cut between characters, never inside
/// one; a shorter version is shown whole.
pub(crate) fn short_version(version: &str) -> &str {
    version
        .char_indices()
        .nth(SHORT_VERSION_CHARS)
        .map_or(version, |(end, _)| &version[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::ConditionStatus;

    #[test]
    fn a_short_version_is_cut_between_characters() {
        let cases = [
            ("", ""),
            ("abc", "abc"),
            ("557ce7f2cef3", "557ce7f2cef3"),
            ("557ce7f2cef3a1b2c3d4", "557ce7f2cef3"),
            // The twelfth byte falls inside `é`: slicing bytes would panic.
            ("versión-é-ümlaut-çà", "versión-é-üm"),
            ("ééééééééééééé", "éééééééééééé"),
        ];
        for (version, short) in cases {
            assert_eq!(short_version(version), short, "{version:?}");
        }
    }

    fn status(observed: Option<i64>, write: Option<ConditionStatus>) -> WorkPlacementStatus {
        WorkPlacementStatus {
            observed_generation: observed,
            conditions: write
                .map(|s| Condition::new("WriteSucceeded", s, "r", "m"))
                .into_iter()
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn written_only_for_the_generation_observed_with_a_successful_write() {
        let cases: Vec<(&str, WorkPlacementStatus, Option<i64>, bool)> = vec![
            (
                "written",
                status(Some(2), Some(ConditionStatus::True)),
                Some(2),
                true,
            ),
            (
                "older generation",
                status(Some(1), Some(ConditionStatus::True)),
                Some(2),
                false,
            ),
            (
                "write failed",
                status(Some(2), Some(ConditionStatus::False)),
                Some(2),
                false,
            ),
            (
                "write unknown",
                status(Some(2), Some(ConditionStatus::Unknown)),
                Some(2),
                false,
            ),
            ("never written", status(None, None), Some(1), false),
            ("no condition", status(Some(1), None), Some(1), false),
        ];
        for (name, s, generation, want) in cases {
            assert_eq!(s.written_for(generation), want, "{name}");
        }
    }

    #[test]
    fn owned_paths_are_files_and_pending_files() {
        let s = WorkPlacementStatus {
            files: Some(vec!["a".into(), "b".into()]),
            pending_files: Some(vec!["b".into(), "c".into()]),
            ..Default::default()
        };
        let owned: Vec<String> = s.owned_paths().into_iter().collect();
        assert_eq!(owned, ["a", "b", "c"]);
        assert!(WorkPlacementStatus::default().owned_paths().is_empty());
    }

    #[test]
    fn status_is_stored_in_the_shape_it_was_read() {
        let stored = serde_json::json!({
            "conditions": [{"type": "WriteSucceeded", "status": "True",
                            "reason": "WorkloadsWrittenToStateStore", "message": "m",
                            "lastTransitionTime": "2026-01-01T00:00:00.000Z"}],
            "files": ["x.yaml"], "observedGeneration": 3, "versionID": "abc",
            "somethingElse": {"kept": true}
        });
        let typed: WorkPlacementStatus =
            serde_json::from_value(stored.clone()).expect("a stored status");
        assert_eq!(typed.version_id.as_deref(), Some("abc"));
        assert_eq!(serde_json::to_value(&typed).expect("serializable"), stored);
    }
}
