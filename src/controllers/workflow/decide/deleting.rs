//! One step of a Promise's or request's delete workflow, with no I/O: from the look its
//! reconcile took (the runs, the step decided, the run started), the status it writes (the
//! workflow's condition and keyed status, what its pipelines wrote), its labels, and when to
//! look again while the workflow has not finished.

use crate::api::{Action, Object};
use crate::controllers::next::Next;
use crate::controllers::workflow::decide::carry_over::{self, CarryOver};
use crate::controllers::workflow::decide::gate::{Decision, ExitStatus, Labels};
use crate::controllers::workflow::decide::plan::{self, Decided};
use crate::controllers::workflow::decide::{delete_condition, KeyedInputs, RunRecord};

/// One look at a delete workflow: its runs as read, and what it does next (a run it starts is
/// started before the status is written).
#[derive(Debug)]
pub(crate) struct DeleteLook {
    pub(crate) runs: Vec<(Object, RunRecord)>,
    pub(crate) records: Vec<RunRecord>,
    /// The delete workflow's pipelines, by name.
    pub(crate) names: Vec<String>,
    pub(crate) decided: Decided,
}

impl DeleteLook {
    /// Whether the delete workflow has nothing left to run.
    pub(crate) fn finished(&self) -> bool {
        plan::finished(&self.decided.step)
    }

    /// What the step writes about the object (`hash` and `generation` its own), and when it
    /// looks again while the workflow runs.
    pub(crate) fn decision<'a>(
        &'a self,
        hash: &'a str,
        generation: Option<i64>,
        retry_failures: bool,
        now_ms: i64,
    ) -> Decision<ExitStatus<'a>> {
        let step = &self.decided.step;
        let condition = delete_condition(step, &plan::failure_reason(&self.runs, step));
        let next = if self.finished() {
            Next::Done
        } else {
            plan::wake_after_at(step, now_ms).map_or(Next::Done, Next::After)
        };
        Decision {
            status: Some(ExitStatus::Deleting {
                condition,
                keyed: KeyedInputs {
                    action: Action::Delete,
                    pipelines: &self.names,
                    runs: &self.records,
                    hash,
                    retry_failures,
                    step,
                    generation,
                    now_ms,
                },
                carried: CarryOver::of(
                    self.runs
                        .iter()
                        .map(|(run, r)| (r.sequence, carry_over::recorded(run))),
                ),
            }),
            labels: Labels {
                rerun: false,
                clear_manual: self.decided.clears_manual_label(),
                suspended: self.decided.suspended_label,
                clear_reconcile_resources: false,
            },
            // As the delete workflow always did: its labels, then its status.
            labels_first: true,
            next,
        }
    }
}

/// Whether `namespace` (as read; `None` when there is none) is being deleted. Such a namespace
/// takes no new objects, so a delete workflow cannot run in it: its runs could never be made,
/// and the namespace would wait for ever on the object that waits for them.
pub(crate) fn namespace_terminating(namespace: Option<&Object>) -> bool {
    namespace.is_some_and(|ns| {
        ns.metadata.deletion_timestamp.is_some()
            || ns
                .data
                .pointer("/status/phase")
                .and_then(serde_json::Value::as_str)
                == Some("Terminating")
    })
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::controllers::workflow::decide::suspended_label::LabelChange;
    use crate::controllers::workflow::decide::{RunPhase, Step};

    fn look(step: Step, runs: Vec<(Object, RunRecord)>, manual: bool) -> DeleteLook {
        DeleteLook {
            records: runs.iter().map(|(_, r)| r.clone()).collect(),
            runs,
            names: vec!["bye".into()],
            decided: Decided {
                step,
                start: None,
                manual,
                suspended_label: LabelChange::Keep,
            },
        }
    }

    fn run(sequence: i64, phase: RunPhase, status: Value) -> (Object, RunRecord) {
        let object = serde_json::from_value(json!({
            "apiVersion": crate::api::API_VERSION, "kind": "PipelineRun",
            "metadata": {"name": format!("r-bye-{sequence}"), "namespace": "default"},
            "status": status,
        }))
        .expect("a run");
        let record = RunRecord {
            sequence,
            pipeline_name: "bye".into(),
            pipeline_index: 0,
            action: Action::Delete,
            hash: "h".into(),
            phase,
            completion_time_ms: Some(1000),
            suspend: None,
            progress: None,
            attempt: 1,
        };
        (object, record)
    }

    #[test]
    fn a_delete_step_writes_its_condition_and_what_its_pipelines_wrote() {
        let done = || {
            vec![run(
                4,
                RunPhase::Succeeded,
                json!({"phase": "Succeeded", "statusYaml": {"farewell": "said"}}),
            )]
        };
        let cases = [
            (
                "running",
                look(
                    Step::Wait,
                    vec![run(4, RunPhase::Running, json!({}))],
                    false,
                ),
                ("False", None, false),
            ),
            (
                "finished, asked by hand",
                look(
                    Step::Completed {
                        last_run_sequence: 4,
                    },
                    done(),
                    true,
                ),
                ("True", Some("said"), false),
            ),
            (
                "starting, asked by hand: the label goes",
                look(
                    Step::Start {
                        index: 0,
                        reason: crate::controllers::workflow::decide::StartReason::FirstRun,
                    },
                    vec![],
                    true,
                ),
                ("False", None, true),
            ),
        ];
        for (name, look, (completed, farewell, clears)) in cases {
            let d = look.decision("h", Some(2), true, 2000);
            let mut status = json!({});
            if let Some(change) = &d.status {
                change.apply(&mut status);
            }
            let condition = crate::api::condition::in_status(&status)
                .into_iter()
                .find(|c| c.type_ == "DeleteWorkflowCompleted")
                .map(|c| c.status.as_str().to_string());
            assert_eq!(condition.as_deref(), Some(completed), "{name}: {status:#}");
            assert_eq!(status["farewell"].as_str(), farewell, "{name}: {status:#}");
            assert!(
                status.pointer("/kratix/workflows/delete").is_some(),
                "{name}: {status:#}"
            );
            assert_eq!(d.labels.clear_manual, clears, "{name}");
            assert!(d.labels_first, "{name}");
            if look.finished() {
                assert_eq!(d.next, Next::Done, "{name}");
            }
        }
    }

    #[test]
    fn a_namespace_being_deleted_runs_no_delete_workflow() {
        let ns = |value: Value| -> Object { serde_json::from_value(value).expect("a namespace") };
        let cases = [
            ("no namespace object", None, false),
            (
                "active",
                Some(ns(json!({"apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": "a"}, "status": {"phase": "Active"}}))),
                false,
            ),
            (
                "deletion asked",
                Some(ns(json!({"apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": "a", "deletionTimestamp": "2026-12-06T10:00:00Z"}}))),
                true,
            ),
            (
                "terminating",
                Some(ns(json!({"apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": "a"}, "status": {"phase": "Terminating"}}))),
                true,
            ),
        ];
        for (name, namespace, terminating) in cases {
            assert_eq!(
                namespace_terminating(namespace.as_ref()),
                terminating,
                "{name}"
            );
        }
    }
}
