//! Live progress of the waiting commands (`apply`, `delete`, `reconcile`, `wait`), derived from
//! the stored objects alone: a pure function from what was shown before and what is stored now
//! to the changes to report. [`printer`] shows them: one line per object updated in place on a
//! terminal, append-only lines otherwise, or one JSON event per line.

pub(crate) mod printer;

use serde::Serialize;
use serde_json::Value;

use crate::api::words::phases;
use crate::api::{KindInfo, Object};

use super::wait::{observed_current_generation, settlement, Settlement};

/// Where one object stands, as progress shows it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Status {
    /// The pipelines of the current attempt, in order (empty until the controller has looked
    /// at the object's current generation).
    pub pipelines: Vec<PipelineState>,
    /// Where files were written: destination and version (Git commit), in order.
    pub written: Vec<(String, String)>,
    pub outcome: Outcome,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PipelineState {
    pub name: String,
    /// `Pending`, `Running`, `Succeeded`, `Failed` or `Suspended`.
    pub phase: String,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    Waiting(String),
    Settled,
    Failed(String),
    Deleting,
    Gone,
}

impl Default for Outcome {
    fn default() -> Self {
        Outcome::Waiting(String::new())
    }
}

/// One change to report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "event", rename_all_fields = "camelCase")]
pub(crate) enum Change {
    PipelineRunning {
        pipeline: String,
        index: usize,
        total: usize,
        /// What the run says it is doing (`pulling image …`), when it says anything.
        #[serde(skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    PipelineSucceeded {
        pipeline: String,
        index: usize,
        total: usize,
    },
    PipelineFailed {
        pipeline: String,
        index: usize,
        total: usize,
        reason: String,
    },
    PipelineSuspended {
        pipeline: String,
        reason: String,
    },
    Written {
        destination: String,
        commit: String,
    },
    Waiting {
        reason: String,
    },
    Settled,
    Failed {
        reason: String,
    },
    Deleting,
    Deleted,
}

impl Change {
    /// The change as a line of text.
    pub(crate) fn text(&self) -> String {
        match self {
            Change::PipelineRunning {
                pipeline,
                index,
                total,
                message,
            } => format!(
                "pipeline {pipeline} ({index} of {total}) running{}",
                doing(message.as_deref().unwrap_or_default())
            ),
            Change::PipelineSucceeded {
                pipeline,
                index,
                total,
            } => format!("pipeline {pipeline} ({index} of {total}) succeeded"),
            Change::PipelineFailed {
                pipeline,
                index,
                total,
                reason,
            } => format!("pipeline {pipeline} ({index} of {total}) failed: {reason}"),
            Change::PipelineSuspended { pipeline, reason } => {
                format!("pipeline {pipeline} suspended: {reason}")
            }
            Change::Written {
                destination,
                commit,
            } => format!("written to {destination} at {}", short(commit)),
            Change::Waiting { reason } => format!("waiting: {reason}"),
            Change::Settled => "settled".into(),
            Change::Failed { reason } => format!("failed: {reason}"),
            Change::Deleting => "deleting".into(),
            Change::Deleted => "deleted".into(),
        }
    }
}

/// `: message`, or nothing for an empty one.
fn doing(message: &str) -> String {
    if message.is_empty() {
        String::new()
    } else {
        format!(": {message}")
    }
}

fn short(commit: &str) -> &str {
    crate::api::work_placement::short_version(commit)
}

fn text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// What progress shows of `obj` (`None`: it is gone).
pub(crate) fn status_of(kind: &KindInfo, obj: Option<&Object>) -> Status {
    let Some(obj) = obj else {
        return Status {
            outcome: Outcome::Gone,
            ..Status::default()
        };
    };
    let outcome = if obj.metadata.deletion_timestamp.is_some() {
        Outcome::Deleting
    } else {
        match settlement(kind, obj) {
            Settlement::Settled => Outcome::Settled,
            Settlement::Failed(reason) => Outcome::Failed(reason),
            Settlement::Pending(reason) => Outcome::Waiting(reason),
        }
    };
    // A status written for an older generation says nothing about this one's pipelines. Once
    // the object is being deleted, its delete workflow's pipelines are what runs (Kratix's
    // keyed status: the same fields).
    let deleting = obj.metadata.deletion_timestamp.is_some();
    let entries = if deleting || observed_current_generation(obj) {
        let at = if deleting {
            "/status/kratix/workflows/delete/pipelines"
        } else {
            "/status/pipelines"
        };
        obj.data
            .pointer(at)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    } else {
        vec![]
    };
    let pipelines = entries
        .iter()
        .map(|p| PipelineState {
            name: text(p.get("name")),
            phase: text(p.get("phase")),
            message: text(p.get("message")),
        })
        .collect();
    let written = entries
        .iter()
        .flat_map(|p| {
            p.get("destinations")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        })
        .filter(|l| l.get("written").and_then(Value::as_bool) == Some(true))
        .map(|l| (text(l.get("destination")), text(l.get("version"))))
        .filter(|(_, version)| !version.is_empty())
        .collect();
    Status {
        pipelines,
        written,
        outcome,
    }
}

/// The changes from `before` (`None`: not shown yet) to `now`, in the order they happened:
/// pipelines in order, then writes, then the outcome.
pub(crate) fn changes(before: Option<&Status>, now: &Status) -> Vec<Change> {
    let empty = Status::default();
    let before_status = before.unwrap_or(&empty);
    let mut out = Vec::new();
    let total = now.pipelines.len();
    for (i, p) in now.pipelines.iter().enumerate() {
        let was = before_status
            .pipelines
            .iter()
            .find(|b| b.name == p.name)
            .map(|b| (b.phase.as_str(), b.message.as_str()));
        if was == Some((p.phase.as_str(), p.message.as_str())) {
            continue;
        }
        let (pipeline, index) = (p.name.clone(), i + 1);
        match p.phase.as_str() {
            phases::RUNNING => out.push(Change::PipelineRunning {
                pipeline,
                index,
                total,
                message: (!p.message.is_empty()).then(|| p.message.clone()),
            }),
            phases::SUCCEEDED => out.push(Change::PipelineSucceeded {
                pipeline,
                index,
                total,
            }),
            phases::FAILED => out.push(Change::PipelineFailed {
                pipeline,
                index,
                total,
                reason: p.message.clone(),
            }),
            phases::SUSPENDED => out.push(Change::PipelineSuspended {
                pipeline,
                reason: p.message.clone(),
            }),
            _ => {}
        }
    }
    for (destination, commit) in &now.written {
        if !before_status
            .written
            .iter()
            .any(|(d, c)| d == destination && c == commit)
        {
            out.push(Change::Written {
                destination: destination.clone(),
                commit: commit.clone(),
            });
        }
    }
    if before.map(|b| &b.outcome) != Some(&now.outcome) {
        out.push(match &now.outcome {
            Outcome::Waiting(reason) => Change::Waiting {
                reason: reason.clone(),
            },
            Outcome::Settled => Change::Settled,
            Outcome::Failed(reason) => Change::Failed {
                reason: reason.clone(),
            },
            Outcome::Deleting => Change::Deleting,
            Outcome::Gone => Change::Deleted,
        });
    }
    out
}

/// The one line a terminal shows for an object: its outcome when final, else what runs.
pub(crate) fn line(status: &Status) -> String {
    let total = status.pipelines.len();
    let at = |phase: &str| {
        status
            .pipelines
            .iter()
            .enumerate()
            .find(|(_, p)| p.phase == phase)
    };
    let written = status
        .written
        .last()
        .map(|(d, c)| format!(", written to {d} at {}", short(c)))
        .unwrap_or_default();
    let pipeline = if let Some((i, p)) = at(phases::RUNNING) {
        Some(format!(
            "pipeline {} ({} of {total}) running{}",
            p.name,
            i + 1,
            doing(&p.message)
        ))
    } else if let Some((i, p)) = at(phases::FAILED) {
        Some(format!(
            "pipeline {} ({} of {total}) failed: {}",
            p.name,
            i + 1,
            p.message
        ))
    } else {
        at(phases::SUSPENDED).map(|(_, p)| format!("pipeline {} suspended: {}", p.name, p.message))
    };
    match (&status.outcome, pipeline) {
        (Outcome::Gone, _) => "deleted".into(),
        (Outcome::Failed(reason), _) => format!("failed: {reason}"),
        (Outcome::Settled, _) => format!("settled{written}"),
        (Outcome::Deleting, None) => "deleting".into(),
        (Outcome::Deleting, Some(pipeline)) => format!("deleting: {pipeline}"),
        // Where files went matters while the configure pipelines run, not once one stopped.
        (Outcome::Waiting(_), Some(pipeline)) if at(phases::RUNNING).is_some() => {
            format!("{pipeline}{written}")
        }
        (Outcome::Waiting(_), Some(pipeline)) => pipeline,
        (Outcome::Waiting(reason), None) => format!("waiting: {reason}{written}"),
    }
}

#[cfg(test)]
mod tests;
