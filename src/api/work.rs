//! Work: the output of one pipeline run (or a Promise's static dependencies), in workload groups.

use std::collections::BTreeMap;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use serde_json::Value;

use super::condition::Condition;

#[derive(CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "platform.kratix.io",
    version = "v1alpha1",
    kind = "Work",
    doc = "The output of one pipeline run, or of a Promise's static dependencies, in workload groups.",
    plural = "works",
    namespaced,
    status = "WorkStatus",
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].message"}"#,
    printcolumn = r#"{"name":"Promise","type":"string","priority":1,"jsonPath":".spec.promiseName"}"#,
    printcolumn = r#"{"name":"Request","type":"string","priority":1,"jsonPath":".spec.resourceName"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct WorkSpec {
    #[serde(default)]
    // NB: no `default: ""` in the CRD: kube-apiserver 1.20 refuses empty-string defaults.
    #[schemars(skip_serializing_if = "String::is_empty")]
    pub promise_name: String,
    /// Empty for dependency Works (promise workflows and static dependencies).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource_name: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workload_groups: Vec<WorkloadGroup>,
    /// RFC 3339 time of the pipeline run that wrote this Work; changes on every run, as in Kratix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_execution_timestamp: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadGroup {
    /// md5 hex of `directory` (`5058f1af8388633f609cadb75a75dc9d` for `.`).
    pub id: String,
    #[serde(default)]
    // NB: no `default: ""` in the CRD: kube-apiserver 1.20 refuses empty-string defaults.
    #[schemars(skip_serializing_if = "String::is_empty")]
    pub directory: String,
    #[serde(default)]
    pub workloads: Vec<Workload>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub destination_selectors: Vec<WorkloadGroupSelector>,
}

/// The first five characters of a workload group id (md5 hex, so ASCII), as Kratix uses them
/// in placement names and in the paths of a placement's files; a shorter id is used whole.
pub(crate) fn short_group_id(group_id: &str) -> &str {
    group_id
        .char_indices()
        .nth(5)
        .map_or(group_id, |(end, _)| &group_id[..end])
}

/// One file: its path relative to the pipeline's `/kratix/output`, and base64(gzip(bytes)).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Workload {
    pub filepath: String,
    #[serde(default)]
    // NB: no `default: ""` in the CRD: kube-apiserver 1.20 refuses empty-string defaults.
    #[schemars(skip_serializing_if = "String::is_empty")]
    pub content: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadGroupSelector {
    #[serde(default)]
    pub match_labels: BTreeMap<String, String>,
    /// `promise`, `promise-workflow` or `resource-workflow`.
    #[serde(default)]
    // NB: no `default: ""` in the CRD: kube-apiserver 1.20 refuses empty-string defaults.
    #[schemars(skip_serializing_if = "String::is_empty")]
    pub source: String,
}

/// What the Work controller reports.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
// `extra` is not in the schema, so the API server must keep unknown fields.
#[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
pub struct WorkStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// How many workload groups the Work has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_placements: Option<i64>,
    /// How many of them are scheduled to a Destination.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_placements_created: Option<i64>,
    /// Where its placements' files landed: each Destination, the state store's version (Git
    /// commit) holding them, and whether they are written for the placement's current
    /// generation. A request's `status.pipelines` shows them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub landings: Vec<super::workflow_status::Landing>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub extra: BTreeMap<String, Value>,
}

impl WorkSpec {
    /// The spec as the controllers store it: `workloadGroups` even when empty. A dependency
    /// Work has no `resourceName`: left out rather than stored empty, which kube-apiserver (1.20
    /// as Debian builds it) reads as null and refuses for a field of type string.
    pub fn stored(&self) -> Result<Value, serde_json::Error> {
        super::object::stored_spec(self, &[("workloadGroups", Value::Array(vec![]))])
    }

    pub fn is_dependency(&self) -> bool {
        self.resource_name.is_empty()
    }
}

/// A workload's `content` could not be decoded.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ContentError {
    #[error("content is not base64")]
    Base64(#[source] base64::DecodeError),
    #[error("content is not gzip")]
    Gunzip(#[source] std::io::Error),
}

/// A workload's `content` as Works store it: base64 (standard alphabet) of gzip of the bytes.
pub(crate) fn encode_content(bytes: &[u8]) -> std::io::Result<String> {
    use base64::Engine;
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(bytes)?;
    let gz = encoder.finish()?;
    Ok(base64::engine::general_purpose::STANDARD.encode(gz))
}

/// The bytes of a workload's `content` (see [`encode_content`]).
pub(crate) fn decode_content(content: &str) -> Result<Vec<u8>, ContentError> {
    use base64::Engine;
    use std::io::Read;
    let gz = base64::engine::general_purpose::STANDARD
        .decode(content.trim())
        .map_err(ContentError::Base64)?;
    let mut bytes = Vec::new();
    flate2::read::GzDecoder::new(gz.as_slice())
        .read_to_end(&mut bytes)
        .map_err(ContentError::Gunzip)?;
    Ok(bytes)
}

/// Which Works a Work is (label `kratix.io/work-type`): a promise or resource workflow's output,
/// or a Promise's static dependencies (`spec.dependencies`, written without a pipeline).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum WorkType {
    Promise,
    Resource,
    StaticDependency,
}

impl WorkType {
    /// The value of the `kratix.io/work-type` label.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Promise => "promise",
            Self::Resource => "resource",
            Self::StaticDependency => "static-dependency",
        }
    }

    /// The type a label value names; none for a value no controller writes.
    pub(crate) fn from_label(value: &str) -> Option<Self> {
        [Self::Promise, Self::Resource, Self::StaticDependency]
            .into_iter()
            .find(|t| t.as_str() == value)
    }

    /// The type of a Work, read from its label.
    pub(crate) fn of(work: &super::Object) -> Option<Self> {
        super::object::label(work, super::labels::WORK_TYPE).and_then(Self::from_label)
    }
}

impl From<super::WorkflowType> for WorkType {
    fn from(t: super::WorkflowType) -> Self {
        match t {
            super::WorkflowType::Promise => Self::Promise,
            super::WorkflowType::Resource => Self::Resource,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_group_id_is_its_first_five_characters() {
        for (id, short) in [
            ("5058f1af8388633f609cadb75a75dc9d", "5058f"),
            ("5058f", "5058f"),
            ("abc", "abc"),
            ("", ""),
        ] {
            assert_eq!(short_group_id(id), short, "{id:?}");
        }
    }

    #[test]
    fn work_types_round_trip_through_their_labels() {
        let cases = [
            ("promise", Some(WorkType::Promise)),
            ("resource", Some(WorkType::Resource)),
            ("static-dependency", Some(WorkType::StaticDependency)),
            ("dependency", None),
            ("", None),
        ];
        for (value, want) in cases {
            assert_eq!(WorkType::from_label(value), want, "{value:?}");
            if let Some(t) = want {
                assert_eq!(t.as_str(), value);
            }
        }
        assert_eq!(
            WorkType::from(crate::api::WorkflowType::Resource),
            WorkType::Resource
        );
    }

    #[test]
    fn controllers_store_empty_fields_that_applied_documents_leave_out() {
        let spec = WorkSpec {
            promise_name: "p".into(),
            resource_name: String::new(),
            workload_groups: vec![],
            last_execution_timestamp: Some("t".into()),
        };
        let mut work = Work::new("w", spec.clone());
        work.metadata.namespace = Some("ns".into());
        let stored = spec.stored().expect("serializable");
        let obj = crate::api::object::from_typed_with_spec(&work, stored).expect("an object");
        assert_eq!(
            serde_json::to_value(&obj).expect("serializable"),
            serde_json::json!({
                "apiVersion": "platform.kratix.io/v1alpha1", "kind": "Work",
                "metadata": {"name": "w", "namespace": "ns"},
                "spec": {"promiseName": "p", "workloadGroups": [],
                         "lastExecutionTimestamp": "t"},
            })
        );
        assert_eq!(
            serde_json::to_value(&spec).expect("serializable"),
            serde_json::json!({"promiseName": "p", "lastExecutionTimestamp": "t"})
        );
    }

    #[test]
    fn status_is_stored_in_the_shape_it_was_read() {
        let stored = serde_json::json!({
            "conditions": [{"type": "Ready", "status": "True", "reason": "r", "message": "Ready",
                            "lastTransitionTime": "2026-01-01T00:00:00.000Z"}],
            "observedGeneration": 2, "workPlacements": 3, "workPlacementsCreated": 1,
            "fromElsewhere": "kept"
        });
        let typed: WorkStatus = serde_json::from_value(stored.clone()).expect("a stored status");
        assert_eq!(typed.work_placements_created, Some(1));
        assert_eq!(serde_json::to_value(&typed).expect("serializable"), stored);
    }
}
