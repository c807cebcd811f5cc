//! The tree of what an object led to, built from stored objects alone: Promise → requests →
//! pipeline runs (the latest of each pipeline) → Works → WorkPlacements → the state store,
//! with the commit (version) and the paths written there.

use serde_json::Value;

use crate::api::object::label;
use crate::api::words::{phases, types};
use crate::api::{condition, labels, Object, SYSTEM_NAMESPACE};

/// One object (or a file in a state store) and what it led to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Node {
    /// The object's kind; empty for a file.
    pub kind: String,
    /// `name`, or `namespace/name` for a request; a file's path.
    pub name: String,
    /// A few words of state: phase, Ready, destination, commit.
    pub detail: String,
    pub children: Vec<Node>,
}

impl Node {
    fn new(kind: &str, name: String, detail: String, children: Vec<Node>) -> Self {
        Node {
            kind: kind.to_string(),
            name,
            detail,
            children,
        }
    }

    /// `Kind/name`, or the bare name of a file.
    pub(crate) fn title(&self) -> String {
        if self.kind.is_empty() {
            self.name.clone()
        } else {
            format!("{}/{}", self.kind, self.name)
        }
    }
}

/// The stored objects a tree is built from (any superset of the relevant ones).
#[derive(Debug, Clone, Default)]
pub(crate) struct Objects {
    pub requests: Vec<Object>,
    pub runs: Vec<Object>,
    pub works: Vec<Object>,
    pub placements: Vec<Object>,
    pub destinations: Vec<Object>,
}

fn name(obj: &Object) -> String {
    obj.metadata.name.clone().unwrap_or_default()
}

fn namespace(obj: &Object) -> &str {
    obj.metadata.namespace.as_deref().unwrap_or_default()
}

fn text<'a>(obj: &'a Object, pointer: &str) -> Option<&'a str> {
    obj.data.pointer(pointer).and_then(Value::as_str)
}

/// `Type` when the condition is True, `Type=Status (message)` otherwise; empty when absent.
fn condition_word(obj: &Object, type_: &str) -> String {
    let Some(c) = condition::get(obj, type_) else {
        return String::new();
    };
    if c.is_true() {
        return type_.to_string();
    }
    let status = c.status.as_str();
    match c.message.as_str() {
        "" => format!("{type_}={status}"),
        message => format!("{type_}={status} ({message})"),
    }
}

/// The Promise, its own workflows' runs and Works, then each of its requests.
pub(super) fn promise_tree(promise: &Object, objects: &Objects) -> Node {
    let promise_name = name(promise);
    let mut children = workflow_children(&promise_name, None, objects);
    let mut requests: Vec<&Object> = objects
        .requests
        .iter()
        .filter(|r| label(r, labels::PROMISE_NAME) == Some(promise_name.as_str()))
        .collect();
    requests.sort_by_key(|r| (namespace(r).to_string(), name(r)));
    children.extend(requests.into_iter().map(|r| request_tree(r, objects)));
    let detail = text(promise, "/status/status")
        .unwrap_or_default()
        .to_string();
    Node::new("Promise", promise_name, detail, children)
}

/// A request: the latest run of each of its pipelines, each with its Works.
pub(super) fn request_tree(request: &Object, objects: &Objects) -> Node {
    let promise = label(request, labels::PROMISE_NAME).unwrap_or_default();
    let ns = namespace(request);
    let children = workflow_children(promise, Some((ns, &name(request))), objects);
    Node::new(
        &request
            .types
            .as_ref()
            .map(|t| t.kind.clone())
            .unwrap_or_default(),
        format!("{ns}/{}", name(request)),
        condition_word(request, types::RECONCILED),
        children,
    )
}

/// The label families that make a request a sub-request of another: Kratix's marketplace
/// labels (`kratix.io/component-of-*`) and those of its dry run (`kratix.io/parent-*`), each
/// `(promise, resource name, resource namespace)`.
const PARENT_LABELS: [[&str; 3]; 2] = [
    [
        "kratix.io/component-of-promise-name",
        "kratix.io/component-of-resource-name",
        "kratix.io/component-of-resource-namespace",
    ],
    [
        "kratix.io/parent-promise-name",
        "kratix.io/parent-resource-name",
        "kratix.io/parent-resource-namespace",
    ],
];

/// Whether `child` is a sub-request of request `name` in `ns` of Promise `promise`: one family
/// of [`PARENT_LABELS`] names it (a missing namespace label means the child's own namespace).
pub(super) fn is_sub_request_of(child: &Object, promise: &str, ns: &str, name: &str) -> bool {
    PARENT_LABELS.iter().any(|[p, n, namespace_label]| {
        label(child, p) == Some(promise)
            && label(child, n) == Some(name)
            && label(child, namespace_label).unwrap_or(self::namespace(child)) == ns
    })
}

/// A Destination: every placement on it.
pub(super) fn destination_tree(destination: &Object, objects: &Objects) -> Node {
    let dest_name = name(destination);
    let mut placements: Vec<&Object> = objects
        .placements
        .iter()
        .filter(|p| label(p, labels::TARGET_DESTINATION) == Some(dest_name.as_str()))
        .collect();
    placements.sort_by_key(|p| (namespace(p).to_string(), name(p)));
    let store = store_of(destination)
        .map(|(kind, store)| format!("{kind} {store}"))
        .unwrap_or_default();
    let ready = condition_word(destination, types::READY);
    let detail = [store, ready]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(", ");
    let children = placements
        .into_iter()
        .map(|p| placement_node(p, objects))
        .collect();
    Node::new("Destination", dest_name, detail, children)
}

/// Runs and Works of one object's workflows: the Promise's own (`request: None`, in the system
/// namespace) or a request's. Each Work hangs under the latest run of its pipeline; a Work no
/// run made (a Promise's static dependencies) hangs under the object itself.
fn workflow_children(promise: &str, request: Option<(&str, &str)>, objects: &Objects) -> Vec<Node> {
    let mine = |obj: &Object| {
        label(obj, labels::PROMISE_NAME) == Some(promise)
            && match request {
                Some((ns, req)) => {
                    namespace(obj) == ns && label(obj, labels::RESOURCE_NAME) == Some(req)
                }
                None => {
                    namespace(obj) == SYSTEM_NAMESPACE
                        && label(obj, labels::RESOURCE_NAME).is_none()
                }
            }
    };
    let runs = latest_runs(objects.runs.iter().filter(|r| mine(r)).collect());
    let mut works: Vec<&Object> = objects.works.iter().filter(|w| mine(w)).collect();
    works.sort_by_key(|w| name(w));
    let mut out = Vec::new();
    for run in &runs {
        let pipeline = label(run, labels::PIPELINE_NAME);
        let action = label(run, labels::WORKFLOW_ACTION).unwrap_or_default();
        let under: Vec<Node> = works
            .iter()
            .filter(|w| action == "configure" && label(w, labels::PIPELINE_NAME) == pipeline)
            .map(|w| work_node(w, objects))
            .collect();
        let detail = [
            pipeline.unwrap_or_default(),
            action,
            text(run, "/status/phase").unwrap_or(phases::PENDING),
        ]
        .join(" ");
        out.push(Node::new("PipelineRun", name(run), detail, under));
    }
    let placed: Vec<Option<&str>> = runs
        .iter()
        .filter(|r| label(r, labels::WORKFLOW_ACTION) == Some("configure"))
        .map(|r| label(r, labels::PIPELINE_NAME))
        .collect();
    out.extend(
        works
            .iter()
            .filter(|w| !placed.contains(&label(w, labels::PIPELINE_NAME)))
            .map(|w| work_node(w, objects)),
    );
    out
}

/// The latest run of each pipeline and action (by sequence), in the order they ran.
fn latest_runs(mut runs: Vec<&Object>) -> Vec<&Object> {
    let sequence = |r: &Object| r.data.pointer("/spec/sequence").and_then(Value::as_i64);
    runs.sort_by_key(|r| sequence(r));
    let mut latest: Vec<&Object> = Vec::new();
    for run in runs.into_iter().rev() {
        let id = |r: &Object| {
            (
                label(r, labels::PIPELINE_NAME).map(str::to_string),
                label(r, labels::WORKFLOW_ACTION).map(str::to_string),
            )
        };
        if !latest.iter().any(|l| id(l) == id(run)) {
            latest.push(run);
        }
    }
    latest.reverse();
    latest
}

fn work_node(work: &Object, objects: &Objects) -> Node {
    let work_name = name(work);
    let mut placements: Vec<&Object> = objects
        .placements
        .iter()
        .filter(|p| {
            namespace(p) == namespace(work) && label(p, labels::WORK) == Some(work_name.as_str())
        })
        .collect();
    placements.sort_by_key(|p| name(p));
    let children = placements
        .into_iter()
        .map(|p| placement_node(p, objects))
        .collect();
    Node::new(
        "Work",
        work_name,
        condition_word(work, types::READY),
        children,
    )
}

/// A placement: its Destination and state, then the store with the commit and the paths.
fn placement_node(placement: &Object, objects: &Objects) -> Node {
    let dest_name = text(placement, "/spec/targetDestinationName")
        .unwrap_or_default()
        .to_string();
    let written = condition_word(placement, types::WRITE_SUCCEEDED);
    let detail = [format!("destination {dest_name}"), written]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(", ");
    let files: Vec<Node> = placement
        .data
        .pointer("/status/files")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|path| Node::new("", path.to_string(), String::new(), Vec::new()))
        .collect();
    let version = text(placement, "/status/versionID");
    let store = objects
        .destinations
        .iter()
        .find(|d| name(d) == dest_name)
        .and_then(store_of);
    let children = match store {
        Some((kind, store_name)) => {
            let word = if kind == "GitStateStore" {
                "commit"
            } else {
                "version"
            };
            // Twelve characters, as `get` shows versions: enough for `git show`.
            let detail = version.map_or_else(
                || "not written".to_string(),
                |v| format!("{word} {}", v.get(..12).unwrap_or(v)),
            );
            vec![Node::new(&kind, store_name, detail, files)]
        }
        // The Destination is gone or names no store: the paths are all there is to show.
        None => files,
    };
    Node::new("WorkPlacement", name(placement), detail, children)
}

/// A Destination's `stateStoreRef`: kind and name.
fn store_of(destination: &Object) -> Option<(String, String)> {
    Some((
        text(destination, "/spec/stateStoreRef/kind")?.to_string(),
        text(destination, "/spec/stateStoreRef/name")?.to_string(),
    ))
}

#[cfg(test)]
mod tests;
