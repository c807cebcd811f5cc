//! A small HTTP/1 listener answering GETs by path: `/metrics` of `serve`, and the health and
//! metrics endpoints of `controller`.

use std::net::SocketAddr;
use std::sync::Arc;

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::{Response, StatusCode};
use tokio::net::TcpListener;
use tracing::debug;

use super::{Error, Metrics, CONTENT_TYPE};

/// The status and body answering a GET of a path.
pub(crate) type Answer = Arc<dyn Fn(&str) -> (StatusCode, String) + Send + Sync>;

/// The answer to a GET of `/metrics`: the text, or why it could not be written.
pub(crate) fn scrape(metrics: &Metrics) -> (StatusCode, String) {
    match metrics.render() {
        Ok(text) => (StatusCode::OK, text),
        Err(err) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("{}\n", statestores::error_chain::ErrorChain(&err)),
        ),
    }
}

/// Binds `addr` (before returning, so that a bad address fails the start).
pub(crate) async fn bind(addr: &str) -> Result<TcpListener, Error> {
    let parsed: SocketAddr = addr.parse().map_err(|e| Error::Listen {
        addr: addr.to_string(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidInput, e),
    })?;
    TcpListener::bind(parsed)
        .await
        .map_err(|source| Error::Listen {
            addr: addr.to_string(),
            source,
        })
}

/// Answers requests on `listener` with `answer` until the task is dropped.
pub(crate) async fn serve(listener: TcpListener, answer: Answer) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let answer = answer.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req: hyper::Request<_>| {
                let path = req.uri().path();
                let (status, body) = answer(path);
                let content_type = if path == "/metrics" && status == StatusCode::OK {
                    CONTENT_TYPE
                } else {
                    "text/plain"
                };
                let response = Response::builder()
                    .status(status)
                    .header("content-type", content_type)
                    .body(Full::new(Bytes::from(body)));
                async move { response }
            });
            let io = hyper_util::rt::TokioIo::new(stream);
            if let Err(err) = hyper::server::conn::http1::Builder::new()
                .serve_connection(io, service)
                .await
            {
                debug!(error = %err, "endpoint connection ended");
            }
        });
    }
}
