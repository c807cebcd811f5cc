//! The HTTPS listeners and the handling of one request: who asks (the bearer token), what
//! (the route and verb), whether they may (their rights), then the answer: a discovery
//! document, an object, a list, a watch, or a `Status` refusal.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use http_body_util::{combinators::BoxBody, BodyExt, Full, StreamBody};
use hyper::body::Frame;
use hyper::{Request, Response};
use serde::Serialize;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use super::answer::{self, Refusal};
use super::discovery;
use super::fields::FieldSelector;
use super::objects::{self, Selection};
use super::rights::{Ask, Principal};
use super::route::{self, Route, Target, Verb};
use super::table::{self, Shape};
use super::Shared;
use crate::store::Selector;

pub(crate) type Body = BoxBody<Bytes, Infallible>;

/// Answers TLS connections on `listener` until the task is aborted.
pub(crate) async fn listen(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    shared: Arc<Shared>,
) {
    let acceptor = TlsAcceptor::from(tls);
    loop {
        let Ok((tcp, _)) = listener.accept().await else {
            continue;
        };
        let acceptor = acceptor.clone();
        let shared = shared.clone();
        tokio::spawn(async move {
            let Ok(stream) = acceptor.accept(tcp).await else {
                return;
            };
            let service = hyper::service::service_fn(move |req| {
                let shared = shared.clone();
                async move { Ok::<_, Infallible>(handle(&shared, req).await) }
            });
            if let Err(err) = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await
            {
                tracing::debug!(error = %err, "platform API connection ended");
            }
        });
    }
}

fn json_response(code: u16, body: &impl Serialize) -> Response<Body> {
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    Response::builder()
        .status(code)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(bytes)).boxed())
        .unwrap_or_else(|_| Response::new(Full::new(Bytes::new()).boxed()))
}

fn refused(refusal: &Refusal) -> Response<Body> {
    json_response(refusal.code, &refusal.status)
}

async fn handle(shared: &Shared, req: Request<hyper::body::Incoming>) -> Response<Body> {
    let path = req.uri().path().to_string();
    let route = route::route(&path);
    let method = req.method().as_str().to_string();
    // Anybody may ask what this is and whether it is up, as of a Kubernetes API server.
    match route {
        Route::Version => return json_response(200, &discovery::version()),
        Route::Health => {
            return Response::new(Full::new(Bytes::from_static(b"ok")).boxed());
        }
        _ => {}
    }
    let authorization = req
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let Some(who) = shared.tokens.who(authorization) else {
        return refused(&answer::unauthorized());
    };
    let query = route::query(req.uri().query());
    let accept = req
        .headers()
        .get(hyper::header::ACCEPT)
        .and_then(|v| v.to_str().ok());
    let shape = table::shape(accept, &query.include_object);
    match answer_route(shared, route, &method, (&query, shape), &who).await {
        Ok(response) => response,
        Err(refusal) => {
            tracing::debug!(%method, %path, user = who.user(), code = refusal.code, "platform API refused a request");
            refused(&refusal)
        }
    }
}

async fn answer_route(
    shared: &Shared,
    route: Route,
    method: &str,
    asked: (&route::Query, Shape),
    who: &Principal,
) -> Result<Response<Body>, Refusal> {
    let kinds = shared.platform.kinds().await.map_err(|e| {
        answer::internal(format!(
            "the control plane failed: {}",
            statestores::error_chain::ErrorChain(&e)
        ))
    })?;
    match route {
        Route::CoreVersions => Ok(json_response(
            200,
            &discovery::core_versions(&shared.loopback.to_string()),
        )),
        Route::Groups => Ok(json_response(200, &discovery::groups(&kinds))),
        Route::Group(name) => discovery::group(&kinds, &name)
            .map(|g| json_response(200, &g))
            .ok_or_else(answer::no_such_resource),
        Route::Resources { group, version } => discovery::resources(&kinds, &group, &version)
            .map(|r| json_response(200, &r))
            .ok_or_else(answer::no_such_resource),
        Route::Objects(target) => {
            let Some(kind) =
                discovery::kind(&kinds, &target.group, &target.version, &target.plural).cloned()
            else {
                return Err(answer::no_such_resource());
            };
            objects_of(shared, kind, &target, method, asked, who).await
        }
        Route::Version | Route::Health | Route::Unknown => Err(answer::no_such_resource()),
    }
}

async fn objects_of(
    shared: &Shared,
    kind: crate::api::KindInfo,
    target: &Target,
    method: &str,
    (query, shape): (&route::Query, Shape),
    who: &Principal,
) -> Result<Response<Body>, Refusal> {
    let verb = route::verb(method, target, query);
    if verb == Verb::Write {
        return Err(answer::read_only(method));
    }
    // A cluster-scoped kind has no namespace, whatever the path says.
    let namespace = target.namespace.as_deref().filter(|_| kind.namespaced);
    let fields = FieldSelector::parse(&query.field_selector)
        .map_err(|e| answer::bad_request(e.to_string()))?;
    let resource = match &target.subresource {
        Some(sub) => format!("{}/{sub}", kind.plural),
        None => kind.plural.clone(),
    };
    let name = target.name.as_deref().or(fields.name());
    let ask = Ask {
        verb: verb.as_str(),
        group: &kind.group,
        resource: &resource,
        namespace,
        name,
    };
    if !who.allows(&ask) {
        let refusal = answer::forbidden(
            who.user(),
            verb.as_str(),
            answer::Resource {
                group: &kind.group,
                plural: &kind.plural,
            },
            target.subresource.as_deref(),
            namespace,
            target.name.as_deref(),
        );
        return Err(refusal);
    }
    if target
        .subresource
        .as_deref()
        .is_some_and(|sub| sub != "status")
    {
        return Err(answer::no_such_resource());
    }
    let cp = shared.platform.control_plane();
    match verb {
        Verb::Get => {
            let name = target.name.as_deref().unwrap_or_default();
            let obj = objects::get(cp.as_ref(), &kind, namespace, name, who, shape).await?;
            Ok(json_response(200, &obj))
        }
        Verb::List | Verb::Watch => {
            let labels = Selector::parse(&query.label_selector)
                .map_err(|e| answer::bad_request(e.to_string()))?;
            let mut fields = fields;
            if let Some(name) = &target.name {
                fields = FieldSelector::parse(&format!("metadata.name={name}"))
                    .map_err(|e| answer::bad_request(e.to_string()))?;
            }
            let selection = Selection {
                namespace: namespace.map(str::to_string),
                labels,
                fields,
            };
            if verb == Verb::List {
                let list = objects::list(cp.as_ref(), &kind, &selection, who, shape).await?;
                return Ok(json_response(200, &list));
            }
            let timeout = query.timeout_seconds.map(Duration::from_secs);
            let events = objects::watch(
                cp,
                kind,
                selection,
                query.resource_version.clone(),
                timeout,
                who.clone(),
                shape,
            );
            let stream = futures::stream::unfold(events, |mut rx| async move {
                rx.recv().await.map(|line| (line, rx))
            })
            .map(|line| Ok::<_, Infallible>(Frame::data(line)));
            Ok(Response::builder()
                .status(200)
                .header("content-type", "application/json")
                .body(BodyExt::boxed(StreamBody::new(stream)))
                .unwrap_or_else(|_| Response::new(Full::new(Bytes::new()).boxed())))
        }
        Verb::Write => Err(answer::read_only(method)),
    }
}
