//! The S3 client, signed for the bucket's own region. Kratix's spec has no region, and S3
//! servers refuse signatures scoped to another one (Garage's is whatever its operator chose), so
//! when nobody names a region the first request asks the server, as Kratix's client does.

use std::sync::Arc;

use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path;
use object_store::ObjectStoreExt;
use tokio::sync::OnceCell;

use super::classify::{self, Meaning};
use super::options::DEFAULT_REGION;

/// Hands out the client to use, finding the region once.
pub(super) struct Clients {
    /// Everything but the region; NB: holds the credentials, so never printed.
    builder: AmazonS3Builder,
    /// Signed for the configured region, or for [`DEFAULT_REGION`] until the server says.
    first: Arc<AmazonS3>,
    /// The client every request uses once the region is known.
    settled: OnceCell<Arc<AmazonS3>>,
    /// An object that is never written, fetched to learn the region from the refusal.
    probe: Path,
}

/// The server did not answer: ask again on the next request.
struct Unanswered;

impl Clients {
    /// `configured`: the region the options or the environment name, if any.
    pub(super) fn new(
        builder: AmazonS3Builder,
        configured: Option<&str>,
        probe: Path,
    ) -> object_store::Result<Self> {
        let region = configured.unwrap_or(DEFAULT_REGION);
        let first = Arc::new(builder.clone().with_region(region).build()?);
        let settled = match configured {
            Some(_) => OnceCell::new_with(Some(Arc::clone(&first))),
            None => OnceCell::new(),
        };
        Ok(Self {
            builder,
            first,
            settled,
            probe,
        })
    }

    /// The client for the bucket's region; the first call without a configured region costs
    /// one GET of an absent object.
    pub(super) async fn get(&self) -> Arc<AmazonS3> {
        match self.settled.get_or_try_init(|| self.resolve()).await {
            Ok(client) => Arc::clone(client),
            Err(Unanswered) => Arc::clone(&self.first),
        }
    }

    async fn resolve(&self) -> Result<Arc<AmazonS3>, Unanswered> {
        // NB: a GET, not a HEAD: the answer to a HEAD has no body to name the region in.
        let Err(err) = self.first.get(&self.probe).await else {
            return Ok(Arc::clone(&self.first));
        };
        if let Some(region) = classify::region_hint(&err) {
            return match self.builder.clone().with_region(&region).build() {
                Ok(client) => {
                    tracing::debug!(%region, "signing for the bucket's own region");
                    Ok(Arc::new(client))
                }
                Err(build) => {
                    // The requests themselves will fail naming the region mismatch.
                    tracing::warn!(
                        %region,
                        error = &build as &dyn std::error::Error,
                        "could not build an S3 client for the bucket's region"
                    );
                    Ok(Arc::clone(&self.first))
                }
            };
        }
        match classify::classify(&err) {
            Meaning::Unreachable => Err(Unanswered),
            // Any other answer came from a server that took our region.
            Meaning::NotFound | Meaning::Unauthorized | Meaning::Other => {
                Ok(Arc::clone(&self.first))
            }
        }
    }
}
