//! JSON schemas for fields Kratix keeps free-form, so the generated CRDs stay structural.

use schemars::{json_schema, Schema, SchemaGenerator};

/// Any object; the API server keeps unknown fields.
pub(crate) fn preserve_unknown_fields(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "object", "x-kubernetes-preserve-unknown-fields": true })
}

/// A list of arbitrary objects.
pub(crate) fn list_of_objects(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "items": { "type": "object", "x-kubernetes-preserve-unknown-fields": true }
    })
}

/// A Promise's `spec`, as declared for the Promise, keeping unknown fields (a revision holds the
/// spec as it was stored, whatever version of Kratix wrote it).
pub(crate) fn promise_spec(generator: &mut SchemaGenerator) -> Schema {
    let mut schema = generator.subschema_for::<super::PromiseSpec>();
    schema.insert("x-kubernetes-preserve-unknown-fields".into(), true.into());
    schema
}
