//! Opening a BucketStateStore's backend from its spec and the access keys of its Secret.

use std::collections::BTreeMap;
use std::sync::Arc;

use statestores::{Bucket, BucketAuth, BucketOptions};

use super::{NotReady, StoreHandle};
use crate::api::Object;
use crate::controllers::ErrorChain;

pub(super) fn open_bucket(
    obj: &Object,
    secret: &BTreeMap<String, Vec<u8>>,
) -> Result<StoreHandle, NotReady> {
    let spec: crate::api::state_store::BucketStateStoreSpec =
        serde_json::from_value(obj.data.get("spec").cloned().unwrap_or_default()).map_err(|e| {
            NotReady {
                reason: "ErrorInitialisingWriter",
                message: e.to_string(),
            }
        })?;
    let text = |k: &str| {
        secret
            .get(k)
            .map(|v| String::from_utf8_lossy(v).trim().to_string())
    };
    let auth = match spec.auth_method.as_deref().unwrap_or("accessKey") {
        "IAM" => BucketAuth::Iam,
        _ => BucketAuth::AccessKey {
            access_key_id: text("accessKeyID").ok_or_else(|| NotReady {
                reason: "SecretNotFound",
                message: "the Secret has no accessKeyID".into(),
            })?,
            secret_access_key: text("secretAccessKey").ok_or_else(|| NotReady {
                reason: "SecretNotFound",
                message: "the Secret has no secretAccessKey".into(),
            })?,
        },
    };
    let bucket = Bucket::open(BucketOptions {
        endpoint: spec.endpoint.clone(),
        bucket_name: spec.bucket_name.clone(),
        path_prefix: None,
        insecure: spec.insecure,
        auth,
        region: None,
    })
    .map_err(|e| NotReady {
        reason: "ErrorInitialisingWriter",
        message: ErrorChain(&e).to_string(),
    })?;
    Ok(StoreHandle {
        store: Arc::new(bucket),
        path: spec.path.clone(),
        author_name: "kratix".into(),
        author_email: String::new(),
        message_template: None,
        tls: statestores::TlsTrust::System,
        fingerprint: String::new(),
    })
}
