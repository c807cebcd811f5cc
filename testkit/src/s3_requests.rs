//! Counts the HTTP requests an `object_store` client sends, to check what a bucket writer does
//! on the wire rather than what it reports: by method and S3 sub-resource, and the objects each
//! batched delete names.

use object_store::client::{
    HttpClient, HttpConnector, HttpError, HttpRequest, HttpResponse, HttpService, ReqwestConnector,
};
use object_store::ClientOptions;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

/// What [`Counting::take`] calls the objects named in batched deletes (`POST ?delete`).
pub const DELETED_OBJECTS: &str = "objects in POST ?delete";

/// An [`HttpConnector`] that counts every request it forwards. Clones share the counts.
#[derive(Debug, Clone, Default)]
pub struct Counting {
    seen: Arc<Mutex<Vec<(String, usize)>>>,
}

impl Counting {
    /// `METHOD` or `METHOD ?query` (e.g. `POST ?delete`) → how many since the last call, and
    /// [`DELETED_OBJECTS`] → how many objects those batched deletes named.
    pub fn take(&self) -> BTreeMap<String, usize> {
        let seen = std::mem::take(&mut *self.seen.lock().unwrap_or_else(PoisonError::into_inner));
        let mut counts = BTreeMap::new();
        for (request, objects) in seen {
            if objects > 0 {
                *counts.entry(DELETED_OBJECTS.to_string()).or_insert(0) += objects;
            }
            *counts.entry(request).or_insert(0) += 1;
        }
        counts
    }
}

#[derive(Debug)]
struct CountingService {
    inner: HttpClient,
    seen: Arc<Mutex<Vec<(String, usize)>>>,
}

impl HttpConnector for Counting {
    fn connect(&self, options: &ClientOptions) -> object_store::Result<HttpClient> {
        let inner = ReqwestConnector::default().connect(options)?;
        Ok(HttpClient::new(CountingService {
            inner,
            seen: Arc::clone(&self.seen),
        }))
    }
}

/// The objects a `DeleteObjects` body names: one `<Object>` element each.
fn objects_named(body: &[u8]) -> usize {
    body.windows(b"<Object>".len())
        .filter(|w| *w == b"<Object>")
        .count()
}

#[async_trait::async_trait]
impl HttpService for CountingService {
    async fn call(&self, req: HttpRequest) -> Result<HttpResponse, HttpError> {
        let (what, objects) = match req.uri().query() {
            Some(query) => {
                let name = query.split(['=', '&']).next().unwrap_or_default();
                let objects = match name {
                    "delete" => req.body().as_bytes().map_or(0, |b| objects_named(b)),
                    _ => 0,
                };
                (format!("{} ?{name}", req.method()), objects)
            }
            None => (req.method().to_string(), 0),
        };
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((what, objects));
        self.inner.execute(req).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batched_deletes_are_counted_by_object() {
        let cases: [(&[u8], usize); 4] = [
            (b"", 0),
            (b"<Delete><Object><Key>a</Key></Object></Delete>", 1),
            (
                b"<Delete><Quiet>true</Quiet><Object><Key>a</Key></Object><Object><Key>b</Key></Object></Delete>",
                2,
            ),
            (b"<Delete><Objects/></Delete>", 0),
        ];
        for (body, want) in cases {
            assert_eq!(
                objects_named(body),
                want,
                "{}",
                String::from_utf8_lossy(body)
            );
        }
    }
}
