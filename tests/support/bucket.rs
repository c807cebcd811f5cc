//! A bucket as an independent S3 client sees it, straight to the S3 server, never through kratix-rs.

use std::collections::BTreeSet;

use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path as ObjectPath;
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt, PutPayload};
use testkit::s3::{self, S3Server};

pub(crate) struct BucketInspector {
    client: AmazonS3,
    runtime: tokio::runtime::Runtime,
}

impl BucketInspector {
    pub(crate) fn new(server: &S3Server, bucket: &str) -> Self {
        let client = AmazonS3Builder::new()
            .with_endpoint(format!("http://{}", server.s3_endpoint))
            .with_allow_http(true)
            .with_bucket_name(bucket)
            .with_region(s3::REGION)
            .with_access_key_id(&server.key.id)
            .with_secret_access_key(&server.key.secret)
            .build()
            .expect("inspector client");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("tokio runtime");
        Self { client, runtime }
    }

    /// Every key in the bucket (LIST), sorted.
    pub(crate) fn keys(&self) -> BTreeSet<String> {
        use futures::TryStreamExt;
        self.runtime.block_on(async {
            self.client
                .list(None)
                .map_ok(|meta| meta.location.to_string())
                .try_collect()
                .await
                .expect("inspector lists the bucket")
        })
    }

    /// What a HEAD of `key` says.
    pub(crate) fn head(&self, key: &str) -> ObjectMeta {
        self.runtime
            .block_on(self.client.head(&ObjectPath::from(key)))
            .unwrap_or_else(|e| panic!("HEAD {key}: {e}"))
    }

    /// The object's content, as text.
    pub(crate) fn get(&self, key: &str) -> String {
        self.runtime.block_on(async {
            let got = self
                .client
                .get(&ObjectPath::from(key))
                .await
                .unwrap_or_else(|e| panic!("GET {key}: {e}"));
            let bytes = got.bytes().await.expect("object body");
            String::from_utf8(bytes.to_vec()).expect("utf-8 object")
        })
    }

    /// Puts an object that kratix-rs did not write.
    pub(crate) fn put(&self, key: &str, content: String) {
        self.runtime
            .block_on(
                self.client
                    .put(&ObjectPath::from(key), PutPayload::from(content)),
            )
            .unwrap_or_else(|e| panic!("PUT {key}: {e}"));
    }

    /// Deletes an object behind kratix-rs's back.
    pub(crate) fn delete(&self, key: &str) {
        self.runtime
            .block_on(self.client.delete(&ObjectPath::from(key)))
            .unwrap_or_else(|e| panic!("DELETE {key}: {e}"));
    }

    /// Every object, each headed `== <key>`, for searching.
    pub(crate) fn content(&self) -> String {
        self.keys()
            .into_iter()
            .map(|key| format!("== {key}\n{}\n", self.get(&key)))
            .collect()
    }
}
