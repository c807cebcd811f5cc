//! JSON schemas for fields Kratix keeps free-form, so the generated CRDs stay structural.

use schemars::{json_schema, Schema, SchemaGenerator};

/// Any object; the API server keeps unknown fields.
pub fn preserve_unknown_fields(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "object", "x-kubernetes-preserve-unknown-fields": true })
}

/// A list of arbitrary objects.
pub fn list_of_objects(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "items": { "type": "object", "x-kubernetes-preserve-unknown-fields": true }
    })
}
