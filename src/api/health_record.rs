//! HealthRecord: the outcome of a health check of one request, which Kratix combines into the
//! request's `status.healthStatus`. Its content lives under `data`, not `spec`, as in Kratix's
//! `api/v1alpha1/healthrecord_types.go`.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// A HealthRecord as stored: `data` and the object's metadata.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HealthRecord {
    #[serde(default)]
    pub metadata: kube::core::ObjectMeta,
    #[serde(default)]
    pub data: HealthRecordData,
}

/// `data` of a HealthRecord.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HealthRecordData {
    /// The Promise the record belongs to.
    pub promise_ref: PromiseRef,
    /// The request the record belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_ref: Option<ResourceRef>,
    /// One of unknown, ready, unhealthy, healthy or degraded.
    #[serde(default = "unknown")]
    #[schemars(schema_with = "state_schema")]
    pub state: String,
    /// Unix time of the health check that made the record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_run: Option<i64>,
    /// The Promise version of the health check that made the record; a record of another
    /// version than its request's says nothing about the request (a record without one always
    /// counts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub promise_version: Option<String>,
    /// Whatever the health check reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::schema::preserve_unknown_fields")]
    pub details: Option<Value>,
}

fn unknown() -> String {
    "unknown".into()
}

/// The states Kratix accepts.
pub(crate) const STATES: [&str; 5] = ["unknown", "ready", "unhealthy", "healthy", "degraded"];

fn state_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "string", "enum": STATES, "default": "unknown"})
}

/// A Promise by name, as revisions and bindings name theirs.
pub(crate) use super::versions::PromiseRef;

/// A request by namespace and name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ResourceRef {
    pub name: String,
    pub namespace: String,
    /// The request's generation when the record was made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
}

/// The HealthRecord CRD, Kratix's: namespaced, no status, `data` required.
pub(crate) fn crd() -> CustomResourceDefinition {
    // As kube's derive does: no definitions, no `$schema`, structural.
    let schema = schemars::generate::SchemaSettings::openapi3()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .with_transform(kube::core::schema::StructuralSchemaRewriter)
        .into_generator()
        .into_root_schema_for::<HealthRecordData>();
    let mut data = serde_json::to_value(schema).expect("a derived schema is JSON");
    if let Some(o) = data.as_object_mut() {
        o.remove("$schema");
        o.remove("title");
        o.insert(
            "description".into(),
            json!("The outcome of a health check of one request."),
        );
    }
    let value = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "healthrecords.platform.kratix.io"},
        "spec": {
            "group": super::GROUP,
            "names": {
                "kind": "HealthRecord",
                "plural": "healthrecords",
                "singular": "healthrecord",
                "listKind": "HealthRecordList",
                "shortNames": [],
            },
            "scope": "Namespaced",
            "versions": [{
                "name": super::VERSION,
                "served": true,
                "storage": true,
                "additionalPrinterColumns": [
                    {"name": "Status", "type": "string", "jsonPath": ".data.state"},
                ],
                "schema": {"openAPIV3Schema": {
                    "description": "The outcome of a health check of one request, combined into the request's status.healthStatus.",
                    "type": "object",
                    "required": ["data"],
                    "properties": {"data": data},
                }},
            }],
        },
    });
    serde_json::from_value(value).expect("the HealthRecord CRD is a valid CRD")
}
