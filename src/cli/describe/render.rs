//! `describe`'s text, a pure function of the object and what belongs to it.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::api::words::{phases, types};
use crate::api::{labels, KindInfo, Object, GROUP};

use super::super::events::{one_line, table as events_table};
use super::super::output::{redact, render as columns};
use crate::api::columns::text;
use crate::api::durations::duration;

/// What `describe` shows of one object.
#[derive(Debug, Clone)]
pub(crate) struct Described {
    pub kind: KindInfo,
    pub object: Object,
    /// Its pipeline runs, oldest first (a PipelineRun: itself).
    pub runs: Vec<Object>,
    /// The WorkPlacements that say where its files went.
    pub placements: Vec<Object>,
    /// Its events, oldest first.
    pub events: Vec<Object>,
    /// A request's sub-requests, each as the text of its `tree`.
    pub sub_requests: Vec<String>,
}

/// The description, at `now` (RFC 3339; ages are counted to it).
pub(crate) fn render(d: &Described, now: &str) -> String {
    // Credentials never show, whatever the section.
    let shown: Object =
        serde_json::from_value(redact(&d.kind, &d.object)).unwrap_or_else(|_| d.object.clone());
    let obj = &shown;
    let mut out = String::new();
    let mut field = |name: &str, value: String| {
        out.push_str(&format!("{:<16}{value}\n", format!("{name}:")));
    };
    field("Name", obj.metadata.name.clone().unwrap_or_default());
    if let Some(ns) = &obj.metadata.namespace {
        field("Namespace", ns.clone());
    }
    field("Kind", d.kind.kind.clone());
    field("API Version", d.kind.api_version());
    field("Labels", pairs(obj.metadata.labels.as_ref()));
    let annotations = obj.metadata.annotations.as_ref().map(|a| {
        a.iter()
            .filter(|(k, _)| k.as_str() != crate::api::labels::LAST_APPLIED)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect::<BTreeMap<_, _>>()
    });
    field("Annotations", pairs(annotations.as_ref()));
    if let Some(created) = &obj.metadata.creation_timestamp {
        let at = created.0.to_string();
        field("Created", format!("{at} ({} ago)", age(&at, now)));
    }
    if let Some(generation) = obj.metadata.generation {
        let observed = text(obj.data.pointer("/status/observedGeneration"));
        let shown = match (observed.is_empty(), is_observed_kind(&d.kind)) {
            (false, _) => format!("{generation} (observed {observed})"),
            (true, true) => format!("{generation} (not observed yet)"),
            (true, false) => generation.to_string(),
        };
        field("Generation", shown);
    }
    if let Some(deleting) = &obj.metadata.deletion_timestamp {
        field("Deleting", format!("since {}", deleting.0));
    }
    for (name, value) in summary(&d.kind, obj) {
        if !value.is_empty() {
            field(name, value);
        }
    }
    out.push_str(&conditions(obj, now));
    if is_workflow_kind(&d.kind) || !d.runs.is_empty() {
        out.push_str(&pipelines(obj, &d.runs));
    }
    if !d.placements.is_empty() || is_workflow_kind(&d.kind) {
        let by_destination = !(d.kind.group == GROUP && d.kind.kind == "Destination");
        out.push_str(&destinations(&d.placements, by_destination));
    }
    if !d.sub_requests.is_empty() {
        out.push_str("Sub-requests:\n");
        for tree in &d.sub_requests {
            out.push_str(&indent(tree));
        }
    }
    out.push_str("Events:");
    if d.events.is_empty() {
        out.push_str("\n  <none>\n");
    } else {
        out.push('\n');
        // Events of other objects (the placements') say which object they are about.
        let key = crate::api::ObjectKey::of(&d.object);
        let mixed = d.events.iter().any(|e| !crate::events::about(e, &key));
        out.push_str(&indent(&events_table(&d.events, now, false, mixed)));
    }
    out
}

/// Kinds whose controller records the generation it has seen (`status.observedGeneration`).
fn is_observed_kind(kind: &KindInfo) -> bool {
    is_workflow_kind(kind)
        || (kind.group == GROUP
            && matches!(
                kind.kind.as_str(),
                "Destination" | "GitStateStore" | "BucketStateStore" | "Work" | "WorkPlacement"
            ))
}

fn is_workflow_kind(kind: &KindInfo) -> bool {
    (kind.group == GROUP && kind.kind == "Promise")
        || (kind.group != GROUP && !kind.group.is_empty())
}

fn age(since: &str, now: &str) -> String {
    let d = duration(since, now);
    if d.is_empty() {
        "0s".into()
    } else {
        d
    }
}

fn at(obj: &Object, pointer: &str) -> String {
    text(obj.data.pointer(pointer))
}

fn pairs(map: Option<&BTreeMap<String, String>>) -> String {
    match map.filter(|m| !m.is_empty()) {
        None => "<none>".into(),
        Some(m) => m
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(&format!("\n{:16}", "")),
    }
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("  {l}\n")).collect()
}

/// The fields that say what the object is, per kind.
fn summary(kind: &KindInfo, o: &Object) -> Vec<(&'static str, String)> {
    let status_line = || {
        let status = at(o, "/status/status");
        let message = at(o, "/status/message");
        match (status.is_empty(), message.is_empty()) {
            (false, false) => format!("{status}: {message}"),
            (false, true) => status,
            _ => message,
        }
    };
    if kind.group != GROUP {
        if kind.group.is_empty() && kind.kind == "Secret" {
            let keys = o
                .data
                .get("data")
                .and_then(Value::as_object)
                .map(|m| m.keys().cloned().collect::<Vec<_>>().join(", "))
                .unwrap_or_default();
            return vec![("Type", at(o, "/type")), ("Data keys", keys)];
        }
        return vec![
            (
                "Promise",
                crate::api::object::label(o, labels::PROMISE_NAME)
                    .unwrap_or_default()
                    .to_string(),
            ),
            ("Status", status_line()),
        ];
    }
    match kind.kind.as_str() {
        "Promise" => vec![
            ("Status", status_line()),
            (
                "Request Kind",
                format!("{} {}", at(o, "/status/kind"), at(o, "/status/apiVersion"))
                    .trim()
                    .to_string(),
            ),
            ("Version", at(o, "/status/version")),
            ("Workflows", workflow_counts(o)),
            ("Last Available", at(o, "/status/lastAvailableTime")),
            ("Required By", required_by(o)),
        ],
        "Destination" => vec![
            (
                "State Store",
                format!(
                    "{}/{}",
                    at(o, "/spec/stateStoreRef/kind"),
                    at(o, "/spec/stateStoreRef/name")
                ),
            ),
            ("Path", at(o, "/spec/path")),
            ("Filepath Mode", at(o, "/spec/filepath/mode")),
            ("Platform Sync", platform_sync(o)),
        ],
        "GitStateStore" => vec![
            ("URL", at(o, "/spec/url")),
            ("Branch", at(o, "/spec/branch")),
            ("Path", at(o, "/spec/path")),
        ],
        "BucketStateStore" => vec![
            ("Bucket", at(o, "/spec/bucketName")),
            ("Endpoint", at(o, "/spec/endpoint")),
            ("Path", at(o, "/spec/path")),
        ],
        "Work" | "WorkPlacement" => vec![
            ("Promise", at(o, "/spec/promiseName")),
            ("Request", at(o, "/spec/resourceName")),
            ("Destination", at(o, "/spec/targetDestinationName")),
        ],
        "PipelineRun" => vec![
            ("Promise", at(o, "/spec/promiseName")),
            ("Request", at(o, "/spec/resourceName")),
            ("Pipeline", at(o, "/spec/pipelineName")),
            ("Action", at(o, "/spec/workflowAction")),
            ("Phase", at(o, "/status/phase")),
            ("Message", at(o, "/status/message")),
        ],
        _ => vec![],
    }
}

/// A platform Destination's last sync: the revision and its counts.
fn platform_sync(o: &Object) -> String {
    let sync = |field: &str| at(o, &format!("/status/platformSync/{field}"));
    let revision = sync("revision");
    if revision.is_empty() {
        return String::new();
    }
    let inventory = o
        .data
        .pointer("/status/platformSync/inventory")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    format!(
        "revision {}: {} applied, {} pruned, {} waiting, {} failed; {inventory} objects applied",
        revision.get(..12).unwrap_or(&revision),
        sync("applied"),
        sync("pruned"),
        sync("waiting"),
        sync("failed"),
    )
}

/// A Promise's `status.workflowsSucceeded` of `status.workflows`, when it has workflows.
fn workflow_counts(o: &Object) -> String {
    let total = at(o, "/status/workflows");
    if total.is_empty() || total == "0" {
        return String::new();
    }
    let succeeded = at(o, "/status/workflowsSucceeded");
    let succeeded = if succeeded.is_empty() {
        "0".into()
    } else {
        succeeded
    };
    format!("{succeeded} of {total} succeeded")
}

/// A Promise's `status.requiredBy`: `name (version) requires VERSION`, one per line.
fn required_by(o: &Object) -> String {
    list_at(o, "/status/requiredBy")
        .iter()
        .map(|r| {
            let field = |p: &str| text(r.pointer(p));
            let wanted = match field("/requiredVersion") {
                v if v.is_empty() => "any version".to_string(),
                v => v,
            };
            format!(
                "{} ({}) requires {wanted}",
                field("/promise/name"),
                field("/promise/version")
            )
        })
        .collect::<Vec<_>>()
        .join(&format!("\n{:16}", ""))
}

/// The list at `pointer` of the object, empty when there is none.
fn list_at(o: &Object, pointer: &str) -> Vec<Value> {
    o.data
        .pointer(pointer)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn conditions(o: &Object, now: &str) -> String {
    let list = crate::api::condition::of(o);
    if list.is_empty() {
        return "Conditions:\n  <none>\n".into();
    }
    let mut rows = vec![["TYPE", "STATUS", "REASON", "AGE", "MESSAGE"]
        .map(String::from)
        .to_vec()];
    for c in &list {
        rows.push(vec![
            c.type_.clone(),
            c.status.as_str().to_string(),
            c.reason.clone(),
            c.last_transition_time
                .as_deref()
                .map(|since| age(since, now))
                .unwrap_or_default(),
            one_line(&c.message),
        ]);
    }
    format!("Conditions:\n{}", indent(&columns(&rows)))
}

/// One row per pipeline (and action): its last run's phase, attempts, duration, exit code.
fn pipelines(o: &Object, runs: &[Object]) -> String {
    // The current attempt's pipelines, in order, as the object's status lists them: the
    // configure workflow's, then (Kratix's keyed status) the delete workflow's.
    let listed: Vec<((String, String), String, String)> = [
        ("configure", "/status/pipelines"),
        ("delete", "/status/kratix/workflows/delete/pipelines"),
    ]
    .into_iter()
    .flat_map(|(action, pointer)| {
        o.data
            .pointer(pointer)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(move |p| {
                (
                    (action.to_string(), text(p.get("name"))),
                    text(p.get("phase")),
                    text(p.get("attempts")),
                )
            })
    })
    .collect();
    let mut last: BTreeMap<(String, String), &Object> = BTreeMap::new();
    let mut order: Vec<(String, String)> = Vec::new();
    for run in runs {
        let id = (
            at(run, "/spec/workflowAction"),
            at(run, "/spec/pipelineName"),
        );
        if !order.contains(&id) {
            order.push(id.clone());
        }
        last.insert(id, run);
    }
    for (id, _, _) in &listed {
        if !order.contains(id) {
            order.push(id.clone());
        }
    }
    if order.is_empty() {
        return "Pipelines:\n  <none>\n".into();
    }
    let mut rows = vec![[
        "PIPELINE",
        "ACTION",
        "PHASE",
        "ATTEMPTS",
        "DURATION",
        "EXIT CODE",
        "LAST RUN",
    ]
    .map(String::from)
    .to_vec()];
    for id in order {
        let run = last.get(&id);
        let entry = listed.iter().find(|(listed_id, _, _)| listed_id == &id);
        let attempts = match entry {
            Some((_, _, a)) if !a.is_empty() => a.clone(),
            _ => runs
                .iter()
                .filter(|r| (at(r, "/spec/workflowAction"), at(r, "/spec/pipelineName")) == id)
                .count()
                .to_string(),
        };
        let phase = match (entry, run) {
            (Some((_, p, _)), _) if !p.is_empty() => p.clone(),
            (_, Some(r)) => at(r, "/status/phase"),
            _ => phases::PENDING.into(),
        };
        rows.push(vec![
            id.1.clone(),
            id.0.clone(),
            phase,
            attempts,
            run.map(|r| {
                duration(
                    &at(r, "/status/startTime"),
                    &at(r, "/status/completionTime"),
                )
            })
            .unwrap_or_default(),
            run.map(|r| at(r, "/status/exitCode")).unwrap_or_default(),
            run.and_then(|r| r.metadata.name.clone())
                .unwrap_or_default(),
        ]);
    }
    format!("Pipelines:\n{}", indent(&columns(&rows)))
}

/// Per placement: destination (or, on a Destination, whose files), pipeline, commit, files,
/// Ready; then the last write's files.
fn destinations(placements: &[Object], by_destination: bool) -> String {
    if placements.is_empty() {
        return "Destinations:\n  <none>\n".into();
    }
    let mut out = String::from("Destinations:\n");
    for p in placements {
        let version = at(p, "/status/versionID");
        let files = p
            .data
            .pointer("/status/files")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        let ready = crate::api::condition::get(p, types::READY).map_or_else(
            || "not written yet".into(),
            |c| {
                let status = c.status.as_str();
                if c.is_true() || c.message.is_empty() {
                    format!("Ready={status}")
                } else {
                    format!("Ready={status} ({})", one_line(&c.message))
                }
            },
        );
        let pipeline = crate::api::object::label(p, labels::PIPELINE_NAME).unwrap_or_default();
        let commit = if version.is_empty() {
            "no commit yet".to_string()
        } else {
            format!(
                "commit {}",
                crate::api::work_placement::short_version(&version)
            )
        };
        out.push_str(&format!(
            "  {}: {commit}, {files} files, {ready}{}\n",
            if by_destination {
                at(p, "/spec/targetDestinationName")
            } else {
                owner_of(p)
            },
            if pipeline.is_empty() {
                String::new()
            } else {
                format!(" (pipeline {pipeline})")
            }
        ));
        for change in ["added", "changed", "deleted"] {
            let paths = p
                .data
                .pointer(&format!("/status/lastWrite/{change}"))
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            for path in paths {
                out.push_str(&format!("    {change:<8} {}\n", text(Some(&path))));
            }
        }
    }
    out
}

/// `promise` or `promise namespace/request`: whose files a placement holds.
fn owner_of(p: &Object) -> String {
    let request = at(p, "/spec/resourceName");
    let promise = at(p, "/spec/promiseName");
    if request.is_empty() {
        format!("Promise {promise}")
    } else {
        format!(
            "{promise} {}/{request}",
            p.metadata.namespace.clone().unwrap_or_default()
        )
    }
}
