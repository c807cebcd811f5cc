//! `tree KIND NAME`: where a Promise, a request or a Destination led, from stored objects.

mod model;
mod render;

use crate::api::{labels, Builtin, KindInfo, ObjectKey};
use crate::platform::{builtin, Platform};
use crate::store::Selector;

pub use model::{Node, Objects};
pub use render::Charset;

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
pub async fn run(
    platform: &Platform,
    kind: &str,
    name: &str,
    namespace: Option<&str>,
    format: TreeFormat,
    terminal: bool,
) -> Result<String, Error> {
    let root = build(platform, kind, name, namespace).await?;
    Ok(match format {
        TreeFormat::Text if terminal => render::text(&root, Charset::Unicode),
        TreeFormat::Text => render::text(&root, Charset::Ascii),
        TreeFormat::Dot => render::dot(&root),
        TreeFormat::Mermaid => render::mermaid(&root),
    })
}

async fn build(
    platform: &Platform,
    kind: &str,
    name: &str,
    namespace: Option<&str>,
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
    Ok(if kind == promise_kind {
        model::promise_tree(&promise, &objects)
    } else {
        model::request_tree(&obj, &objects)
    })
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
