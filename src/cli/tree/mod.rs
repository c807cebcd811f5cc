//! `tree KIND NAME`: where a Promise, a request or a Destination led, from stored objects.

mod model;
mod render;

use crate::api::{labels, Builtin, KindInfo, ObjectKey};
use crate::platform::{builtin, Platform};
use crate::store::Selector;

pub(crate) use model::{Node, Objects};
pub(crate) use render::{text, Charset};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Platform(#[from] crate::platform::Error),
    #[error("reading {kind}")]
    Store {
        kind: String,
        #[source]
        source: crate::store::Error,
    },
    #[error("{key} not found")]
    NotFound { key: ObjectKey },
    /// A kind that leads nowhere a tree could show.
    #[error("tree shows Promises, requests (kinds Promises define) and Destinations, not {kind}")]
    Kind { kind: String },
}

/// How `tree` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TreeFormat {
    /// Indented lines: box-drawing branches on a terminal, ASCII otherwise.
    Text,
    /// Graphviz DOT (`dot -Tsvg`).
    Dot,
    /// A Mermaid flowchart.
    Mermaid,
}

/// The tree of `kind`/`name` (namespace `namespace`, default `default`, for requests), printed
/// as `format`; `terminal` picks the text tree's branches.
pub(crate) async fn run(
    platform: &Platform,
    kind: &str,
    name: &str,
    namespace: Option<&str>,
    format: TreeFormat,
    terminal: bool,
) -> Result<String, Error> {
    let root = build(platform, kind, name, namespace, 0).await?;
    Ok(match format {
        TreeFormat::Text if terminal => render::text(&root, Charset::Unicode),
        TreeFormat::Text => render::text(&root, Charset::Ascii),
        TreeFormat::Dot => render::dot(&root),
        TreeFormat::Mermaid => render::mermaid(&root),
    })
}

/// The tree of one object; a request's shows its sub-requests' trees, `depth` levels down
/// already.
async fn build(
    platform: &Platform,
    kind: &str,
    name: &str,
    namespace: Option<&str>,
    depth: usize,
) -> Result<Node, Error> {
    let kind = platform.resolve_kind(kind).await?;
    let promise_kind = builtin(Builtin::Promise);
    let destination_kind = builtin(Builtin::Destination);
    let namespace = kind
        .namespaced
        .then(|| namespace.unwrap_or("default").to_string());
    let promises = platform.promises().await?;
    let defining = crate::platform::promise_defining(&promises, &kind).cloned();
    if kind != promise_kind && kind != destination_kind && defining.is_none() {
        return Err(Error::Kind {
            kind: kind.kind.clone(),
        });
    }
    let obj = platform
        .store
        .get(&kind, namespace.as_deref(), name)
        .await
        .map_err(|source| Error::Store {
            kind: kind.kind.clone(),
            source,
        })?
        .ok_or_else(|| Error::NotFound {
            key: ObjectKey::new(&kind.group, &kind.kind, namespace.as_deref(), name),
        })?;
    if kind == destination_kind {
        let objects = Objects {
            placements: read(
                platform,
                &builtin(Builtin::WorkPlacement),
                None,
                &Selector::from_labels([(labels::TARGET_DESTINATION, name)]),
            )
            .await?,
            destinations: vec![obj.clone()],
            ..Objects::default()
        };
        return Ok(model::destination_tree(&obj, &objects));
    }
    let (promise, requests) = if kind == promise_kind {
        let request_kinds =
            crate::api::promise_api::kinds_from_promises(std::slice::from_ref(&obj));
        let mut requests = Vec::new();
        for request_kind in &request_kinds {
            requests.extend(read(platform, request_kind, None, &Selector::everything()).await?);
        }
        (obj.clone(), requests)
    } else {
        let promise = defining.ok_or_else(|| Error::Kind {
            kind: kind.kind.clone(),
        })?;
        (promise, vec![obj.clone()])
    };
    let promise_name = promise.metadata.name.clone().unwrap_or_default();
    let of_promise = Selector::from_labels([(labels::PROMISE_NAME, promise_name.as_str())]);
    let works = read(platform, &builtin(Builtin::Work), None, &of_promise).await?;
    let mut placements = Vec::new();
    for work in &works {
        let work_name = work.metadata.name.clone().unwrap_or_default();
        placements.extend(
            read(
                platform,
                &builtin(Builtin::WorkPlacement),
                work.metadata.namespace.as_deref(),
                &Selector::from_labels([(labels::WORK, work_name.as_str())]),
            )
            .await?,
        );
    }
    let objects = Objects {
        requests,
        runs: read(platform, &builtin(Builtin::PipelineRun), None, &of_promise).await?,
        works,
        placements,
        destinations: read(platform, &destination_kind, None, &Selector::everything()).await?,
    };
    if kind == promise_kind {
        return Ok(model::promise_tree(&promise, &objects));
    }
    let mut node = model::request_tree(&obj, &objects);
    let ns = namespace.as_deref().unwrap_or("default");
    node.children
        .extend(sub_request_trees(platform, &promise_name, ns, name, depth).await?);
    Ok(node)
}

/// The trees of the sub-requests of request `ns`/`name` of `promise` (see
/// [`model::is_sub_request_of`]), each down to its own runs, Works, commits and sub-requests;
/// `depth` levels are shown above them already.
pub(crate) async fn sub_request_trees(
    platform: &Platform,
    promise: &str,
    ns: &str,
    name: &str,
    depth: usize,
) -> Result<Vec<Node>, Error> {
    if depth >= MAX_DEPTH {
        return Ok(Vec::new());
    }
    let promises = platform.promises().await?;
    let mut out = Vec::new();
    for (child_kind, child) in sub_requests(platform, &promises, promise, ns, name).await? {
        let child_ns = child.metadata.namespace.clone();
        let child_name = child.metadata.name.clone().unwrap_or_default();
        let subtree = Box::pin(build(
            platform,
            &child_kind.kind,
            &child_name,
            child_ns.as_deref(),
            depth + 1,
        ))
        .await?;
        out.push(subtree);
    }
    Ok(out)
}

/// How many levels of sub-requests a tree shows (a Promise whose requests name themselves as
/// their parent cannot make it endless).
const MAX_DEPTH: usize = 8;

/// The requests (of every Promise's kind) that are sub-requests of request `ns`/`name` of
/// `promise`, in name order.
async fn sub_requests(
    platform: &Platform,
    promises: &[crate::api::Object],
    promise: &str,
    ns: &str,
    name: &str,
) -> Result<Vec<(KindInfo, crate::api::Object)>, Error> {
    let mut out = Vec::new();
    for kind in crate::api::promise_api::kinds_from_promises(promises) {
        for request in read(platform, &kind, None, &Selector::everything()).await? {
            if model::is_sub_request_of(&request, promise, ns, name) {
                out.push((kind.clone(), request));
            }
        }
    }
    out.sort_by_key(|(_, r)| (r.metadata.namespace.clone(), r.metadata.name.clone()));
    Ok(out)
}

async fn read(
    platform: &Platform,
    kind: &KindInfo,
    namespace: Option<&str>,
    selector: &Selector,
) -> Result<Vec<crate::api::Object>, Error> {
    platform
        .store
        .list(kind, namespace, selector)
        .await
        .map_err(|source| Error::Store {
            kind: kind.kind.clone(),
            source,
        })
}
