//! How a pipeline run's result is recorded on its PipelineRun: phase, message, exit code, the
//! workflow control the pipeline asked for and its `status.yaml`.

use std::time::Duration;

use crate::api::{PipelineRunPhase, WorkflowControl};
use crate::pipeline::metadata::WorkflowControl as RequestedControl;
use crate::pipeline::RunResult;

/// How a run ended, to be recorded on it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Finished {
    pub(crate) phase: PipelineRunPhase,
    /// Empty when there is nothing to say (then no message is recorded).
    pub(crate) message: String,
    pub(crate) exit_code: Option<i32>,
    pub(crate) control: Option<WorkflowControl>,
    /// The pipeline's `status.yaml` of a run that succeeded, for its owner to carry over.
    pub(crate) status_yaml: Option<serde_json::Value>,
}

impl Finished {
    /// A run the controller could not carry out.
    pub(crate) fn failed(message: String) -> Self {
        Finished {
            phase: PipelineRunPhase::Failed,
            message,
            exit_code: None,
            control: None,
            status_yaml: None,
        }
    }
}

/// The record of a run whose containers ran to `result`; `timeout` is the limit a timed-out
/// container hit, `requested` what the pipeline asked of its workflow.
pub(crate) fn finished(
    result: &RunResult,
    timeout: Duration,
    requested: &RequestedControl,
) -> Finished {
    let (phase, message, exit_code) = match result {
        RunResult::Succeeded => (PipelineRunPhase::Succeeded, String::new(), Some(0)),
        RunResult::Failed {
            container,
            exit_code: Some(code),
            reason,
        } => (
            PipelineRunPhase::Failed,
            format!(
                "container {container} exited with code {code}{}",
                suffix(reason)
            ),
            Some(*code),
        ),
        RunResult::Failed {
            container,
            exit_code: None,
            reason,
        } => (
            PipelineRunPhase::Failed,
            format!("container {container} failed{}", suffix(reason)),
            None,
        ),
        RunResult::TimedOut { container } => (
            PipelineRunPhase::Failed,
            format!(
                "container {container} timed out after {}s",
                timeout.as_secs()
            ),
            None,
        ),
    };
    Finished {
        phase,
        message,
        exit_code,
        control: control(requested),
        status_yaml: None,
    }
}

/// What is recorded of the pipeline's workflow control: only a request to suspend (which a
/// `retryAfter` alone makes).
fn control(requested: &RequestedControl) -> Option<WorkflowControl> {
    requested.suspends().then(|| WorkflowControl {
        suspend: true,
        retry_after_ms: requested
            .retry_after
            .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX)),
        message: requested.message.clone().unwrap_or_default(),
    })
}

fn suffix(reason: &str) -> String {
    if reason.is_empty() {
        String::new()
    } else {
        format!(": {reason}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(container: &str, exit_code: Option<i32>, reason: &str) -> RunResult {
        RunResult::Failed {
            container: container.into(),
            exit_code,
            reason: reason.into(),
        }
    }

    #[test]
    fn results_become_phase_message_and_exit_code() {
        let timeout = Duration::from_secs(90);
        let cases: Vec<(&str, RunResult, PipelineRunPhase, &str, Option<i32>)> = vec![
            (
                "success",
                RunResult::Succeeded,
                PipelineRunPhase::Succeeded,
                "",
                Some(0),
            ),
            (
                "exit code",
                failed("c1", Some(3), ""),
                PipelineRunPhase::Failed,
                "container c1 exited with code 3",
                Some(3),
            ),
            (
                "exit code and reason",
                failed("c1", Some(1), "OOM"),
                PipelineRunPhase::Failed,
                "container c1 exited with code 1: OOM",
                Some(1),
            ),
            (
                "no exit code",
                failed("work-writer", None, "bad output"),
                PipelineRunPhase::Failed,
                "container work-writer failed: bad output",
                None,
            ),
            (
                "no exit code, no reason",
                failed("c2", None, ""),
                PipelineRunPhase::Failed,
                "container c2 failed",
                None,
            ),
            (
                "timed out",
                RunResult::TimedOut {
                    container: "c3".into(),
                },
                PipelineRunPhase::Failed,
                "container c3 timed out after 90s",
                None,
            ),
        ];
        for (name, result, phase, message, exit_code) in cases {
            let got = finished(&result, timeout, &RequestedControl::default());
            assert_eq!(
                (got.phase, got.message.as_str(), got.exit_code, got.control),
                (phase, message, exit_code, None),
                "{name}"
            );
        }
    }

    #[test]
    fn only_a_request_to_suspend_or_retry_is_recorded() {
        let cases: Vec<(&str, RequestedControl, Option<WorkflowControl>)> = vec![
            ("nothing asked", RequestedControl::default(), None),
            (
                "a message alone",
                RequestedControl {
                    suspend: false,
                    retry_after: None,
                    message: Some("m".into()),
                },
                None,
            ),
            (
                "a retry without suspend suspends until then",
                RequestedControl {
                    suspend: false,
                    retry_after: Some(Duration::from_secs(5)),
                    message: Some("m".into()),
                },
                Some(WorkflowControl {
                    suspend: true,
                    retry_after_ms: Some(5000),
                    message: "m".into(),
                }),
            ),
            (
                "suspend",
                RequestedControl {
                    suspend: true,
                    retry_after: None,
                    message: None,
                },
                Some(WorkflowControl {
                    suspend: true,
                    retry_after_ms: None,
                    message: String::new(),
                }),
            ),
            (
                "suspend and retry",
                RequestedControl {
                    suspend: true,
                    retry_after: Some(Duration::from_millis(1500)),
                    message: Some("wait".into()),
                },
                Some(WorkflowControl {
                    suspend: true,
                    retry_after_ms: Some(1500),
                    message: "wait".into(),
                }),
            ),
        ];
        for (name, requested, want) in cases {
            let got = finished(&RunResult::Succeeded, Duration::ZERO, &requested);
            assert_eq!(got.control, want, "{name}");
        }
    }

    #[test]
    fn the_recorded_control_is_stored_as_before() {
        let stored = serde_json::to_value(control(&RequestedControl {
            suspend: true,
            retry_after: None,
            message: None,
        }))
        .expect("serializable");
        assert_eq!(
            stored,
            serde_json::json!({"suspend": true, "retryAfterMs": null, "message": ""})
        );
    }
}
