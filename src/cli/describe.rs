//! `describe KIND NAME`: one object for a person — metadata, conditions with ages, each
//! pipeline's last run, where its files went per destination, and its recent events.

mod render;

use crate::api::{labels, Builtin, KindInfo, Object, ObjectKey, GROUP};
use crate::platform::{builtin, Platform};
use crate::store::{ControlPlane, Selector};

pub(crate) use render::{render, Described};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Platform(#[from] crate::platform::Error),
    #[error("reading {what}")]
    Store {
        what: String,
        #[source]
        source: crate::store::Error,
    },
    #[error(transparent)]
    Runs(#[from] super::logs::Error),
    #[error(transparent)]
    SubRequests(#[from] super::tree::Error),
    /// The object does not exist.
    #[error("{key} not found")]
    NotFound { key: ObjectKey },
}

pub(crate) async fn run(
    platform: &Platform,
    kind_name: &str,
    name: &str,
    namespace: Option<&str>,
) -> Result<String, Error> {
    let kind = platform.resolve_kind(kind_name).await?;
    let ns = kind
        .namespaced
        .then(|| namespace.unwrap_or("default").to_string());
    let key = ObjectKey::new(&kind.group, &kind.kind, ns.as_deref(), name);
    let cp = platform.store.as_ref();
    let store_err = |what: &str| {
        let what = what.to_string();
        move |source| Error::Store { what, source }
    };
    let object = cp
        .get(&kind, ns.as_deref(), name)
        .await
        .map_err(store_err(&key.to_string()))?
        .ok_or_else(|| Error::NotFound { key: key.clone() })?;
    let runs = match &kind {
        k if has_workflows(k) => {
            super::logs::runs_of(platform, k, name, ns.as_deref(), None).await?
        }
        k if k.group == GROUP && k.kind == "PipelineRun" => vec![object.clone()],
        _ => vec![],
    };
    let placements = placements_of(cp, &kind, &object)
        .await
        .map_err(store_err("WorkPlacements"))?;
    let mut events = crate::events::of_object(cp, &key)
        .await
        .map_err(store_err("events"))?;
    // What was written where is recorded on the placements; a Destination's would be everyone's.
    if !(kind.group == GROUP && kind.kind == "Destination") {
        for p in placements.iter().filter(|p| ObjectKey::of(p) != key) {
            events.extend(
                crate::events::of_object(cp, &ObjectKey::of(p))
                    .await
                    .map_err(store_err("events"))?,
            );
        }
        crate::events::sort_by_last_seen(&mut events);
    }
    let sub_requests = match crate::api::object::label(&object, labels::PROMISE_NAME) {
        Some(promise) if kind.group != GROUP && !kind.group.is_empty() => {
            let ns = ns.as_deref().unwrap_or("default");
            super::tree::sub_request_trees(platform, promise, ns, name, 1)
                .await?
                .iter()
                .map(|node| super::tree::text(node, super::tree::Charset::Ascii))
                .collect()
        }
        _ => Vec::new(),
    };
    Ok(render(
        &Described {
            kind,
            object,
            runs,
            placements,
            events,
            sub_requests,
        },
        &super::events::now(),
    ))
}

/// Promises and requests run workflows.
fn has_workflows(kind: &KindInfo) -> bool {
    (kind.group == GROUP && kind.kind == "Promise")
        || (kind.group != GROUP && !kind.group.is_empty())
}

/// The WorkPlacements that say where the object's files went: a Promise's own (not its
/// requests'), a request's, a Work's, a Destination's; the placement itself.
async fn placements_of(
    cp: &dyn ControlPlane,
    kind: &KindInfo,
    object: &Object,
) -> Result<Vec<Object>, crate::store::Error> {
    let wp_kind = builtin(Builtin::WorkPlacement);
    let name = object.metadata.name.clone().unwrap_or_default();
    let spec = |p: &Object, f: &str| {
        p.data
            .pointer(&format!("/spec/{f}"))
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let everything = Selector::everything();
    let mut placements = match (kind.group.as_str(), kind.kind.as_str()) {
        (GROUP, "Promise") => {
            let mut all = cp.list(&wp_kind, None, &everything).await?;
            all.retain(|p| spec(p, "promiseName") == name && spec(p, "resourceName").is_empty());
            all
        }
        (GROUP, "Work") => {
            cp.list(
                &wp_kind,
                object.metadata.namespace.as_deref(),
                &Selector::from_labels([(labels::WORK, name.as_str())]),
            )
            .await?
        }
        (GROUP, "Destination") => {
            cp.list(
                &wp_kind,
                None,
                &Selector::from_labels([(labels::TARGET_DESTINATION, name.as_str())]),
            )
            .await?
        }
        (GROUP, "WorkPlacement") => vec![object.clone()],
        _ if has_workflows(kind) => {
            let promise = crate::api::object::label(object, labels::PROMISE_NAME)
                .unwrap_or_default()
                .to_string();
            let mut all = cp
                .list(&wp_kind, object.metadata.namespace.as_deref(), &everything)
                .await?;
            all.retain(|p| spec(p, "promiseName") == promise && spec(p, "resourceName") == name);
            all
        }
        _ => vec![],
    };
    placements.sort_by_key(|p| {
        (
            spec(p, "targetDestinationName"),
            p.metadata.name.clone().unwrap_or_default(),
        )
    });
    Ok(placements)
}
