//! The label sets of the metrics. Every label value comes from a closed set (an enum, or a
//! state store backend's fixed name), never from an object: the number of series stays small
//! however many Promises, requests or Destinations there are.

use std::fmt::Write;

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};

use crate::api::GROUP;

/// The controller that reconciles objects of a kind: one per built-in kind, and one for every
/// request kind together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Controller {
    Promise,
    Request,
    PipelineRun,
    Work,
    WorkPlacement,
    Destination,
    StateStore,
    PromiseRevision,
    PromiseRelease,
    Other,
}

impl Controller {
    /// The controller of objects of `kind` in `group`.
    pub(crate) fn of(group: &str, kind: &str) -> Self {
        if group != GROUP {
            return Controller::Request;
        }
        match kind {
            "Promise" => Controller::Promise,
            "PipelineRun" => Controller::PipelineRun,
            "Work" => Controller::Work,
            "WorkPlacement" => Controller::WorkPlacement,
            "Destination" => Controller::Destination,
            "GitStateStore" | "BucketStateStore" => Controller::StateStore,
            "PromiseRevision" => Controller::PromiseRevision,
            "PromiseRelease" => Controller::PromiseRelease,
            _ => Controller::Other,
        }
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Controller::Promise => "promise",
            Controller::Request => "request",
            Controller::PipelineRun => "pipelinerun",
            Controller::Work => "work",
            Controller::WorkPlacement => "workplacement",
            Controller::Destination => "destination",
            Controller::StateStore => "statestore",
            Controller::PromiseRevision => "promiserevision",
            Controller::PromiseRelease => "promiserelease",
            Controller::Other => "other",
        }
    }
}

/// A pipeline run's workflow type, as its `workflowType` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum WorkflowType {
    Resource,
    Promise,
    Other,
}

impl WorkflowType {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            WorkflowType::Resource => "resource",
            WorkflowType::Promise => "promise",
            WorkflowType::Other => "other",
        }
    }
}

/// A pipeline run's workflow action, as its `workflowAction` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Action {
    Configure,
    Delete,
    Other,
}

impl Action {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Action::Configure => "configure",
            Action::Delete => "delete",
            Action::Other => "other",
        }
    }
}

/// What a failed reconcile failed on: a closed set, so that failures can be told apart
/// without an object's name or an error's text becoming a label value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum ErrorCategory {
    /// Reading or writing the control plane.
    ControlPlane,
    /// A stored object that the controllers cannot use as it is (fixed by changing it).
    InvalidObject,
    /// Carrying out a pipeline run, or storing what it produced.
    PipelineRun,
    /// The executor (containers, processes or Jobs) outside of a run.
    Executor,
    /// The platform's kinds could not be read.
    Platform,
    /// The reconcile's task ended without an answer (it panicked).
    Panic,
    /// The controllers failed on their own data (an object they made could not be serialized):
    /// a defect of kratix-rs, not of anything stored.
    Internal,
}

impl ErrorCategory {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ErrorCategory::ControlPlane => "control_plane",
            ErrorCategory::InvalidObject => "invalid_object",
            ErrorCategory::PipelineRun => "pipeline_run",
            ErrorCategory::Executor => "executor",
            ErrorCategory::Platform => "platform",
            ErrorCategory::Panic => "panic",
            ErrorCategory::Internal => "internal",
        }
    }
}

/// How a pipeline run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum RunResult {
    Succeeded,
    Failed,
}

impl RunResult {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            RunResult::Succeeded => "succeeded",
            RunResult::Failed => "failed",
        }
    }
}

/// How a write of a Work's placements to a state store went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum WriteResult {
    /// Something changed: a commit, or objects uploaded or deleted.
    Changed,
    /// The store already held exactly that.
    Unchanged,
    Failed,
}

impl WriteResult {
    /// How a store's answer to a write counts.
    pub(crate) fn of<E>(written: &Result<statestores::WriteOutcome, E>) -> Self {
        match written {
            Err(_) => WriteResult::Failed,
            Ok(o) if o.version.is_some() || o.changed() => WriteResult::Changed,
            Ok(_) => WriteResult::Unchanged,
        }
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            WriteResult::Changed => "changed",
            WriteResult::Unchanged => "unchanged",
            WriteResult::Failed => "failed",
        }
    }
}

/// Each enum is written as its `as_str`: the derive of `prometheus-client` would write the
/// variant's name (`PipelineRun`), and the label values are lower case.
macro_rules! label_value {
    ($($t:ty),*) => {$(
        impl EncodeLabelValue for $t {
            fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
                encoder.write_str(self.as_str())
            }
        }
    )*};
}

/// What the platform Destination's sync did with one document or inventory entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum SyncOutcome {
    /// Created or changed in the control plane.
    Applied,
    /// Already as the document says.
    Unchanged,
    /// Left the store, so deleted from the control plane.
    Pruned,
    /// Of a kind not served yet: tried again once it is.
    Waiting,
    /// Refused (unparseable, invalid, a conflict, not served here).
    Failed,
}

impl SyncOutcome {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SyncOutcome::Applied => "applied",
            SyncOutcome::Unchanged => "unchanged",
            SyncOutcome::Pruned => "pruned",
            SyncOutcome::Waiting => "waiting",
            SyncOutcome::Failed => "failed",
        }
    }
}

label_value!(
    Controller,
    WorkflowType,
    Action,
    RunResult,
    WriteResult,
    ErrorCategory,
    SyncOutcome
);

/// The labels of the platform sync's counter.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, EncodeLabelSet)]
pub(super) struct SyncLabels {
    pub outcome: SyncOutcome,
}

/// The labels of the reconcile counters.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, EncodeLabelSet)]
pub(super) struct ControllerLabels {
    pub controller: Controller,
}

/// The labels of the reconcile failures: the controller and what failed.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, EncodeLabelSet)]
pub(super) struct FailureLabels {
    pub controller: Controller,
    pub category: ErrorCategory,
}

/// The labels of a pipeline run: its workflow's type and action, and how it ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, EncodeLabelSet)]
pub(crate) struct RunLabels {
    pub workflow_type: WorkflowType,
    pub action: Action,
    pub result: RunResult,
}

impl RunLabels {
    /// From a run's `workflowType` and `workflowAction` as stored; anything unexpected is
    /// counted as `other` rather than becoming a label value of its own.
    pub(crate) fn of(workflow_type: &str, action: &str, succeeded: bool) -> Self {
        Self {
            workflow_type: match workflow_type {
                "resource" => WorkflowType::Resource,
                "promise" => WorkflowType::Promise,
                _ => WorkflowType::Other,
            },
            action: match action {
                "configure" => Action::Configure,
                "delete" => Action::Delete,
                _ => Action::Other,
            },
            result: if succeeded {
                RunResult::Succeeded
            } else {
                RunResult::Failed
            },
        }
    }
}

/// The labels of a write to a state store: the store's backend (`StateStore::kind`: `git`,
/// `bucket`, ..., a name fixed in its code) and the result.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, EncodeLabelSet)]
pub(super) struct WriteLabels {
    pub store: &'static str,
    pub result: WriteResult,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_a_controller_and_request_kinds_share_one() {
        let cases = [
            (GROUP, "Promise", "promise"),
            (GROUP, "PipelineRun", "pipelinerun"),
            (GROUP, "Work", "work"),
            (GROUP, "WorkPlacement", "workplacement"),
            (GROUP, "Destination", "destination"),
            (GROUP, "GitStateStore", "statestore"),
            (GROUP, "BucketStateStore", "statestore"),
            (GROUP, "PromiseRevision", "promiserevision"),
            (GROUP, "PromiseRelease", "promiserelease"),
            (GROUP, "HealthRecord", "other"),
            ("example.com", "Thing", "request"),
            ("other.org", "Database", "request"),
        ];
        for (group, kind, want) in cases {
            assert_eq!(Controller::of(group, kind).as_str(), want, "{group} {kind}");
        }
    }

    #[test]
    fn run_labels_take_fixed_values_only() {
        let cases = [
            (
                "resource",
                "configure",
                true,
                ("resource", "configure", "succeeded"),
            ),
            ("promise", "delete", false, ("promise", "delete", "failed")),
            (
                "Resource",
                "reconfigure",
                true,
                ("other", "other", "succeeded"),
            ),
            ("", "", false, ("other", "other", "failed")),
        ];
        for (workflow_type, action, ok, (t, a, r)) in cases {
            let got = RunLabels::of(workflow_type, action, ok);
            assert_eq!(
                (
                    got.workflow_type.as_str(),
                    got.action.as_str(),
                    got.result.as_str()
                ),
                (t, a, r),
                "{workflow_type} {action} {ok}"
            );
        }
    }

    #[test]
    fn a_write_counts_as_changed_only_when_the_store_changed() {
        use statestores::{Key, Version, WriteOutcome};
        let key = Key::parse("a/b.yaml").expect("key");
        let cases: [(Result<WriteOutcome, ()>, WriteResult); 4] = [
            (Err(()), WriteResult::Failed),
            (Ok(WriteOutcome::default()), WriteResult::Unchanged),
            (
                Ok(WriteOutcome {
                    version: Some(Version("abc".into())),
                    written: vec![key.clone()],
                    deleted: vec![],
                }),
                WriteResult::Changed,
            ),
            (
                Ok(WriteOutcome {
                    version: None,
                    written: vec![],
                    deleted: vec![key],
                }),
                WriteResult::Changed,
            ),
        ];
        for (written, want) in cases {
            assert_eq!(WriteResult::of(&written), want, "{written:?}");
        }
    }
}
