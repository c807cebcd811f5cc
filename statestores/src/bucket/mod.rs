//! An S3-compatible bucket (AWS S3, Garage, MinIO, …) as a [`StateStore`], through `object_store`.
//!
//! Writes upload only what changed (one HEAD per named key decides, never a LIST), delete in
//! batches, and touch no key that is not named in the changes.

mod classify;
mod error;
mod options;
mod plan;
mod region;

pub use options::{BucketAuth, BucketOptions};

use std::fmt;
use std::time::Duration;

use bytes::Bytes;
use futures::stream::{self, StreamExt, TryStreamExt};
use object_store::aws::AmazonS3Builder;
use object_store::client::HttpConnector;
use object_store::path::Path;
use object_store::{
    Attribute, Attributes, BackoffConfig, ClientOptions, GetOptions, ObjectStore, ObjectStoreExt,
    PutOptions, PutPayload, RetryConfig,
};

use crate::{Change, Key, StateStore, WriteInfo, WriteOutcome};
use classify::Meaning;
use error::Error;
use plan::{Action, Applied, Digests, Remote, SHA256_METADATA};
use region::Clients;

/// How many requests one write has in flight at once.
const CONCURRENT_REQUESTS: usize = 8;

/// Where [`StateStore::check_access`] starts (and aborts) a multipart upload, like Kratix.
const PERMISSION_CHECK_OBJECT: &str = ".kratix-write-permission-check";

/// An S3-compatible bucket, optionally under a path prefix.
pub struct Bucket {
    clients: Clients,
    /// `bucket <name> at <endpoint>`: names the store in errors; holds no credential.
    label: String,
    /// Every key lives under this folder of the bucket (root: the whole bucket).
    prefix: Key,
    /// Writes through one handle run one at a time. NB: S3 cannot say whether a DELETE removed
    /// anything, so two overlapping writes deleting one key would both report it deleted; one
    /// at a time, the second one's HEAD sees it gone. Requests within one write still overlap.
    writing: tokio::sync::Mutex<()>,
}

impl fmt::Debug for Bucket {
    // NB: hand-written because the S3 client's own Debug includes its credential provider.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Bucket")
            .field("store", &self.label)
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

impl Bucket {
    /// Builds the client. No request is made: call [`StateStore::check_access`] to find out
    /// whether the bucket can be written to.
    // The options are handed over, as to `Git::open`: callers build them for this call.
    #[allow(clippy::needless_pass_by_value)]
    pub fn open(options: BucketOptions) -> crate::Result<Self> {
        Self::build(&options, None::<object_store::client::ReqwestConnector>)
    }

    /// Like [`Bucket::open`], sending every HTTP request through `connector` (a proxy, a tracing
    /// or counting layer).
    #[allow(clippy::needless_pass_by_value)]
    pub fn open_with_http_connector<C: HttpConnector>(
        options: BucketOptions,
        connector: C,
    ) -> crate::Result<Self> {
        Self::build(&options, Some(connector))
    }

    fn build<C: HttpConnector>(
        options: &BucketOptions,
        connector: Option<C>,
    ) -> crate::Result<Self> {
        // NB: an endpoint may carry `user:password@`, which S3 does not use but errors would show.
        let label = format!(
            "bucket {} at {}",
            options.bucket_name,
            crate::git::redact_url(&options.endpoint)
        );
        let config_error = |err: Error| crate::Error::Config {
            store: label.clone(),
            source: Box::new(err),
        };
        options
            .validate()
            .map_err(|e| config_error(Error::Options(e)))?;
        let endpoint = options
            .endpoint_url()
            .map_err(|e| config_error(Error::Options(e)))?;
        let prefix = Key::parse(options.path_prefix.as_deref().unwrap_or(""))
            .map_err(|e| config_error(Error::PathPrefix(e)))?;
        let region = options.configured_region(
            std::env::var("AWS_REGION").ok().as_deref(),
            std::env::var("AWS_DEFAULT_REGION").ok().as_deref(),
        );
        let probe = Key::parse(PERMISSION_CHECK_OBJECT)
            .map_err(Error::PathPrefix)
            .and_then(|key| path_under(&prefix, &key))
            .map_err(config_error)?;

        let mut builder = match &options.auth {
            // NB: not from_env: environment credentials must not override the configured key.
            BucketAuth::AccessKey {
                access_key_id,
                secret_access_key,
            } => AmazonS3Builder::new()
                .with_access_key_id(access_key_id)
                .with_secret_access_key(secret_access_key),
            BucketAuth::Iam => AmazonS3Builder::from_env(),
        };
        builder = builder
            .with_endpoint(&endpoint)
            .with_bucket_name(&options.bucket_name)
            .with_allow_http(options.insecure)
            .with_virtual_hosted_style_request(false)
            .with_client_options(
                ClientOptions::new()
                    .with_allow_http(options.insecure)
                    .with_connect_timeout(Duration::from_secs(5))
                    .with_timeout(Duration::from_secs(60)),
            )
            // A store that does not answer is reported within seconds, so the caller's own
            // backoff (a requeue) takes over instead of object_store's three-minute default.
            .with_retry(RetryConfig {
                backoff: BackoffConfig {
                    init_backoff: Duration::from_millis(100),
                    max_backoff: Duration::from_secs(2),
                    base: 2.0,
                },
                max_retries: 3,
                retry_timeout: Duration::from_secs(20),
            });
        if let Some(connector) = connector {
            builder = builder.with_http_connector(connector);
        }
        let clients = Clients::new(builder, region.as_deref(), probe)
            .map_err(|e| config_error(Error::BuildClient(e)))?;
        Ok(Self {
            clients,
            label,
            prefix,
            writing: tokio::sync::Mutex::new(()),
        })
    }

    /// The object name of `key`.
    fn path(&self, key: &Key) -> Result<Path, Error> {
        path_under(&self.prefix, key)
    }

    /// The key of an object name under our prefix.
    fn key_of(&self, location: &Path) -> Result<Key, Error> {
        let foreign = || Error::ForeignObject {
            location: location.to_string(),
        };
        let name = location.as_ref();
        let relative = if self.prefix.is_root() {
            name
        } else {
            name.strip_prefix(self.prefix.as_str())
                .and_then(|rest| rest.strip_prefix('/'))
                .ok_or_else(foreign)?
        };
        Key::parse(relative).map_err(|_| foreign())
    }

    /// Maps an error to what it means for the caller. The S3 client never renders credentials
    /// into its errors (signatures go in headers), so the chain is safe to keep.
    fn error(&self, err: Error) -> crate::Error {
        let store = self.label.clone();
        let meaning = err.object_store_source().map(classify::classify);
        match meaning {
            Some(Meaning::Unauthorized) => crate::Error::Unauthorized {
                store,
                source: Box::new(err),
            },
            Some(Meaning::Unreachable) => crate::Error::Unreachable {
                store,
                source: Box::new(err),
            },
            Some(Meaning::NotFound | Meaning::Other) | None => crate::Error::Backend {
                store,
                context: err.to_string(),
                source: Box::new(err),
            },
        }
    }

    /// What the bucket holds under `key`: `None` when the object is absent.
    async fn head(&self, key: &Key) -> Result<Option<Remote>, Error> {
        let path = self.path(key)?;
        let options = GetOptions {
            head: true,
            ..GetOptions::default()
        };
        match self.clients.get().await.get_opts(&path, options).await {
            Ok(found) => Ok(Some(Remote {
                e_tag: found.meta.e_tag,
                sha256: found
                    .attributes
                    .get(&Attribute::Metadata(SHA256_METADATA.into()))
                    .map(|value| value.to_string()),
            })),
            Err(source) if classify::classify(&source) == Meaning::NotFound => Ok(None),
            Err(source) => Err(Error::HeadObject {
                key: key.clone(),
                source,
            }),
        }
    }

    /// Uploads `content` and returns its new ETag.
    async fn upload(&self, key: &Key, content: &Bytes) -> Result<String, Error> {
        let path = self.path(key)?;
        let digests = Digests::of(content);
        let mut attributes = Attributes::new();
        attributes.insert(
            Attribute::Metadata(SHA256_METADATA.into()),
            digests.sha256.into(),
        );
        let options = PutOptions {
            attributes,
            ..PutOptions::default()
        };
        let put = self
            .clients
            .get()
            .await
            .put_opts(&path, PutPayload::from(content.clone()), options)
            .await
            .map_err(|source| Error::PutObject {
                key: key.clone(),
                source,
            })?;
        // A server that sends no ETag still stored these bytes; the md5 stands in for it.
        Ok(put.e_tag.unwrap_or(digests.md5))
    }

    /// Deletes `keys` with batched requests (S3 DeleteObjects, up to 1000 keys each).
    async fn delete_all(&self, keys: &[&Key]) -> Result<(), Error> {
        if keys.is_empty() {
            return Ok(());
        }
        let paths: Vec<object_store::Result<Path>> = keys
            .iter()
            .map(|key| self.path(key))
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .map(Ok)
            .collect();
        let client = self.clients.get().await;
        let mut results = client.delete_stream(stream::iter(paths).boxed());
        while let Some(result) = results.next().await {
            match result {
                Ok(_) => {}
                // Gone meanwhile: what we wanted.
                Err(source) if classify::classify(&source) == Meaning::NotFound => {}
                Err(source) => return Err(Error::DeleteObjects(source)),
            }
        }
        Ok(())
    }

    async fn write_changes(&self, changes: &[Change]) -> Result<WriteOutcome, Error> {
        let _one_at_a_time = self.writing.lock().await;
        let mut seen = std::collections::HashSet::new();
        if let Some(twice) = changes.iter().map(Change::key).find(|k| !seen.insert(*k)) {
            return Err(Error::DuplicateKey { key: twice.clone() });
        }

        // NB: the futures are collected first: a closure inside the stream type trips the
        // compiler's higher-ranked lifetime check for the `Send` future async_trait requires.
        let heads: Vec<_> = changes.iter().map(|c| self.head(c.key())).collect();
        let remote: Vec<Option<Remote>> = stream::iter(heads)
            .buffered(CONCURRENT_REQUESTS)
            .try_collect()
            .await?;
        let actions = plan::plan(changes, &remote);

        let uploads: Vec<(&Key, &Bytes)> = actions
            .iter()
            .filter_map(|action| match (action, &changes[index_of(action)]) {
                (Action::Upload(_), Change::Put(key, content)) => Some((key, content)),
                _ => None,
            })
            .collect();
        let deletions: Vec<&Key> = actions
            .iter()
            .filter_map(|action| match action {
                Action::Delete(index) => Some(changes[*index].key()),
                Action::Upload(_) => None,
            })
            .collect();

        let puts: Vec<_> = uploads
            .iter()
            .map(|(key, content)| self.upload(key, content))
            .collect();
        let e_tags: Vec<String> = stream::iter(puts)
            .buffered(CONCURRENT_REQUESTS)
            .try_collect()
            .await?;
        self.delete_all(&deletions).await?;

        let mut e_tags = uploads.iter().map(|(key, _)| *key).zip(e_tags.iter());
        let applied: Vec<Applied<'_>> = actions
            .iter()
            .filter_map(|action| match action {
                Action::Upload(_) => e_tags.next().map(|(key, e_tag)| Applied::Uploaded {
                    key,
                    e_tag: e_tag.as_str(),
                }),
                Action::Delete(index) => Some(Applied::Deleted {
                    key: changes[*index].key(),
                }),
            })
            .collect();

        Ok(WriteOutcome {
            version: plan::version(&applied),
            written: uploads.iter().map(|(key, _)| (*key).clone()).collect(),
            deleted: deletions.into_iter().cloned().collect(),
        })
    }

    async fn read_object(&self, key: &Key) -> Result<Option<Bytes>, Error> {
        let path = self.path(key)?;
        let got = match self.clients.get().await.get(&path).await {
            Ok(got) => got,
            Err(source) if classify::classify(&source) == Meaning::NotFound => return Ok(None),
            Err(source) => {
                return Err(Error::GetObject {
                    key: key.clone(),
                    source,
                })
            }
        };
        got.bytes()
            .await
            .map(Some)
            .map_err(|source| Error::GetObject {
                key: key.clone(),
                source,
            })
    }

    /// The keys under `prefix`, and `prefix` itself when it is an object (a key is inside
    /// itself, see [`Key::starts_with`]).
    async fn list_keys(&self, prefix: &Key) -> Result<Vec<Key>, Error> {
        let path = self.path(prefix)?;
        // object_store lists `<path>/…` only, so the object named exactly `prefix` needs a HEAD.
        let exact = async {
            if prefix.is_root() {
                Ok(None)
            } else {
                self.head(prefix).await
            }
        };
        let client = self.clients.get().await;
        let listing = if path.as_ref().is_empty() {
            client.list(None)
        } else {
            client.list(Some(&path))
        };
        let below = async {
            listing
                .try_collect::<Vec<_>>()
                .await
                .map_err(|source| Error::ListObjects {
                    prefix: prefix.clone(),
                    source,
                })
        };
        let (exact, objects) = futures::try_join!(exact, below)?;
        let mut keys = objects
            .iter()
            .map(|object| self.key_of(&object.location))
            .collect::<Result<Vec<_>, _>>()?;
        if exact.is_some() {
            keys.push(prefix.clone());
        }
        keys.sort();
        Ok(keys)
    }

    /// Starts a multipart upload and aborts it, as Kratix does: this needs write permission, yet
    /// no object ever appears in the bucket, not even for a moment (a PUT and DELETE would show
    /// a file to anyone syncing the bucket meanwhile).
    async fn check_write_permission(&self) -> Result<(), Error> {
        let path = self.path(&Key::parse(PERMISSION_CHECK_OBJECT).map_err(Error::PathPrefix)?)?;
        let mut upload = self
            .clients
            .get()
            .await
            .put_multipart(&path)
            .await
            .map_err(Error::CheckWritePermission)?;
        if let Err(err) = upload.abort().await {
            // The permission is proven; an unfinished upload holds no object and expires with
            // the bucket's lifecycle rules.
            tracing::warn!(
                store = %self.label,
                error = &err as &dyn std::error::Error,
                "could not abort the write permission check upload"
            );
        }
        Ok(())
    }
}

/// The object name of `key` under `prefix`.
fn path_under(prefix: &Key, key: &Key) -> Result<Path, Error> {
    let full = match (prefix.is_root(), key.is_root()) {
        (true, _) => key.as_str().to_string(),
        (false, true) => prefix.as_str().to_string(),
        (false, false) => format!("{prefix}/{key}"),
    };
    Path::parse(&full).map_err(|source| Error::ObjectName { key: full, source })
}

fn index_of(action: &Action) -> usize {
    match action {
        Action::Upload(index) | Action::Delete(index) => *index,
    }
}

#[async_trait::async_trait]
impl StateStore for Bucket {
    fn kind(&self) -> &'static str {
        "bucket"
    }

    #[tracing::instrument(level = "debug", skip_all, fields(store = %self.label, changes = changes.len()))]
    async fn write(&self, changes: &[Change], _info: &WriteInfo) -> crate::Result<WriteOutcome> {
        self.write_changes(changes)
            .await
            .map_err(|err| self.error(err))
    }

    async fn read(&self, key: &Key) -> crate::Result<Option<Bytes>> {
        self.read_object(key).await.map_err(|err| self.error(err))
    }

    async fn list(&self, prefix: &Key) -> crate::Result<Vec<Key>> {
        self.list_keys(prefix).await.map_err(|err| self.error(err))
    }

    async fn check_access(&self) -> crate::Result<()> {
        self.check_write_permission()
            .await
            .map_err(|err| self.error(err))
    }
}
