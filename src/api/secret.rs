//! Core `v1` Secret, the source of state-store credentials.

use std::collections::BTreeMap;

pub use k8s_openapi::api::core::v1::Secret;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `data.<key>` is not valid base64.
    #[error("secret {secret}: data.{key} is not valid base64")]
    BadBase64 { secret: String, key: String },
}

/// The Secret's values by key: `stringData` overrides `data`, as the API server does on write.
/// Values are never logged or shown.
pub fn values(secret: &Secret) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for (k, v) in secret.data.iter().flatten() {
        out.insert(k.clone(), v.0.clone());
    }
    for (k, v) in secret.string_data.iter().flatten() {
        out.insert(k.clone(), v.clone().into_bytes());
    }
    out
}
