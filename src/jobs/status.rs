//! What a pipeline Job's status and its pods' statuses say about the run. Pure.

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ContainerStateTerminated, ContainerStatus, Pod};

use super::job::HAND_BACK;
use crate::pipeline::{RunResult, STATUS_WRITER, WORK_WRITER};

/// How a Job ended, once it has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Finished {
    Complete,
    /// `reason` of the Job's `Failed` condition (`BackoffLimitExceeded`, `DeadlineExceeded`).
    Failed {
        reason: String,
    },
}

/// `None` while the Job runs.
pub(crate) fn finished(job: &Job) -> Option<Finished> {
    let conditions = job.status.as_ref()?.conditions.as_ref()?;
    conditions
        .iter()
        .filter(|c| c.status == "True")
        .find_map(|c| match c.type_.as_str() {
            "Complete" => Some(Finished::Complete),
            "Failed" => Some(Finished::Failed {
                reason: c.reason.clone().unwrap_or_default(),
            }),
            _ => None,
        })
}

/// A pod's container statuses in the order the containers run.
fn statuses(pod: &Pod) -> impl Iterator<Item = &ContainerStatus> {
    let status = pod.status.as_ref();
    status
        .and_then(|s| s.init_container_statuses.as_deref())
        .unwrap_or_default()
        .iter()
        .chain(
            status
                .and_then(|s| s.container_statuses.as_deref())
                .unwrap_or_default(),
        )
}

fn terminated(s: &ContainerStatus) -> Option<&ContainerStateTerminated> {
    s.state
        .as_ref()
        .and_then(|st| st.terminated.as_ref())
        .or_else(|| s.last_state.as_ref().and_then(|st| st.terminated.as_ref()))
}

/// The last pod the Job started: the one whose story is the run's.
fn latest(pods: &[Pod]) -> Option<&Pod> {
    pods.iter()
        .max_by_key(|p| p.metadata.creation_timestamp.as_ref().map(|t| t.0))
}

/// The container that was running (or about to) when the run was stopped.
pub(crate) fn current_container(pods: &[Pod], order: &[String]) -> String {
    let done: Vec<&str> = latest(pods)
        .map(|pod| {
            statuses(pod)
                .filter(|s| terminated(s).is_some_and(|t| t.exit_code == 0))
                .map(|s| s.name.as_str())
                .collect()
        })
        .unwrap_or_default();
    order
        .iter()
        .find(|name| !done.contains(&name.as_str()))
        .or(order.last())
        .cloned()
        .unwrap_or_default()
}

/// How a failed Job ends the run: the first container of the latest pod that failed, with the
/// same reasons the local executor gives. The adapters' message is their check's refusal.
pub(crate) fn failure(pods: &[Pod], order: &[String], job_reason: &str) -> RunResult {
    if job_reason == "DeadlineExceeded" {
        return RunResult::TimedOut {
            container: current_container(pods, order),
        };
    }
    let failed = latest(pods).and_then(|pod| {
        statuses(pod).find_map(|s| {
            terminated(s)
                .filter(|t| t.exit_code != 0)
                .map(|t| (s.name.clone(), t.clone()))
        })
    });
    match failed {
        Some((name, t)) if name == HAND_BACK => {
            let message = t.message.as_deref().map(adapter_reason).unwrap_or_default();
            // `hand-back` names the Kratix container whose check refused.
            let named = [WORK_WRITER, STATUS_WRITER].into_iter().find_map(|c| {
                message
                    .strip_prefix(c)
                    .and_then(|m| m.strip_prefix(": "))
                    .map(|reason| (c, reason.to_string()))
            });
            match named {
                Some((container, reason)) => RunResult::Failed {
                    container: container.into(),
                    exit_code: None,
                    reason,
                },
                None => RunResult::Failed {
                    reason: Some(message).filter(|m| !m.is_empty()).unwrap_or_else(|| {
                        format!("container {name:?} exited with code {}", t.exit_code)
                    }),
                    container: name,
                    exit_code: None,
                },
            }
        }
        Some((name, t)) if name == WORK_WRITER || name == STATUS_WRITER => RunResult::Failed {
            reason: t
                .message
                .as_deref()
                .map(adapter_reason)
                .filter(|m| !m.is_empty())
                .unwrap_or_else(|| format!("container {name:?} exited with code {}", t.exit_code)),
            container: name,
            exit_code: None,
        },
        Some((name, t)) => RunResult::Failed {
            reason: match t.reason.as_deref() {
                Some("OOMKilled") => format!(
                    "container {name:?} exited with code {} (out of memory)",
                    t.exit_code
                ),
                _ => format!("container {name:?} exited with code {}", t.exit_code),
            },
            container: name,
            exit_code: Some(t.exit_code),
        },
        None => RunResult::Failed {
            container: current_container(pods, order),
            exit_code: None,
            reason: format!("the pipeline Job failed ({job_reason}) before any container did"),
        },
    }
}

/// An adapter's refusal from its termination message (the tail of its log): from the last line
/// that starts with the `error: ` the command prints, else the whole message.
fn adapter_reason(message: &str) -> String {
    const PREFIX: &str = "error: ";
    let from = match message.rfind(&format!("\n{PREFIX}")) {
        Some(i) => i + 1 + PREFIX.len(),
        None if message.starts_with(PREFIX) => PREFIX.len(),
        None => 0,
    };
    message[from..].trim().to_string()
}

/// The termination message of each container that left one, for the logs.
pub(crate) fn messages(pods: &[Pod]) -> Vec<(String, String)> {
    latest(pods)
        .map(|pod| {
            statuses(pod)
                .filter_map(|s| {
                    terminated(s)
                        .and_then(|t| t.message.clone())
                        .filter(|m| !m.trim().is_empty())
                        .map(|m| (s.name.clone(), m))
                })
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(init: serde_json::Value, containers: serde_json::Value) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "p", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "status": {"initContainerStatuses": init, "containerStatuses": containers}
        }))
        .expect("pod parses")
    }

    fn status(name: &str, exit: Option<i32>, message: &str) -> serde_json::Value {
        let state = match exit {
            Some(code) => json!({"terminated": {"exitCode": code, "message": message}}),
            None => json!({"running": {}}),
        };
        json!({"name": name, "image": "i", "imageID": "", "ready": false, "restartCount": 0, "state": state})
    }

    fn order() -> Vec<String> {
        ["reader", "a", "b", "work-writer", "status-writer"]
            .map(String::from)
            .to_vec()
    }

    #[test]
    fn failures_name_the_container_and_its_reason() {
        let cases = [
            (
                "user container exits 3",
                pod(
                    json!([status("reader", Some(0), ""), status("a", Some(3), "boom")]),
                    json!([]),
                ),
                "BackoffLimitExceeded",
                RunResult::Failed {
                    container: "a".into(),
                    exit_code: Some(3),
                    reason: "container \"a\" exited with code 3".into(),
                },
            ),
            (
                "work-writer refuses the output",
                pod(
                    json!([
                        status("reader", Some(0), ""),
                        status("a", Some(0), ""),
                        status("b", Some(0), ""),
                        status(
                            "work-writer",
                            Some(1),
                            "WARN something\nerror: output file x is a symbolic link: error: detail\n"
                        )
                    ]),
                    json!([]),
                ),
                "BackoffLimitExceeded",
                RunResult::Failed {
                    container: "work-writer".into(),
                    exit_code: None,
                    reason: "output file x is a symbolic link: error: detail".into(),
                },
            ),
            (
                "hand-back refuses the metadata as the status-writer would",
                pod(
                    json!([status("a", Some(0), ""), status("b", Some(0), "")]),
                    json!([status(
                        "hand-back",
                        Some(1),
                        "error: status-writer: status.yaml is not a YAML mapping\n"
                    )]),
                ),
                "BackoffLimitExceeded",
                RunResult::Failed {
                    container: "status-writer".into(),
                    exit_code: None,
                    reason: "status.yaml is not a YAML mapping".into(),
                },
            ),
            (
                "hand-back fails otherwise",
                pod(
                    json!([status("a", Some(0), "")]),
                    json!([status("hand-back", Some(1), "error: cannot reach the Kubernetes API\n")]),
                ),
                "BackoffLimitExceeded",
                RunResult::Failed {
                    container: "hand-back".into(),
                    exit_code: None,
                    reason: "cannot reach the Kubernetes API".into(),
                },
            ),
            (
                "deadline while b runs",
                pod(
                    json!([
                        status("reader", Some(0), ""),
                        status("a", Some(0), ""),
                        status("b", None, "")
                    ]),
                    json!([]),
                ),
                "DeadlineExceeded",
                RunResult::TimedOut {
                    container: "b".into(),
                },
            ),
            (
                "no pod at all",
                pod(json!([]), json!([])),
                "BackoffLimitExceeded",
                RunResult::Failed {
                    container: "reader".into(),
                    exit_code: None,
                    reason:
                        "the pipeline Job failed (BackoffLimitExceeded) before any container did"
                            .into(),
                },
            ),
        ];
        for (case, pod, reason, want) in cases {
            assert_eq!(failure(&[pod], &order(), reason), want, "{case}");
        }
    }

    #[test]
    fn job_conditions_tell_when_it_finished() {
        let job = |conditions: serde_json::Value| -> Job {
            serde_json::from_value(json!({"metadata": {}, "status": {"conditions": conditions}}))
                .expect("job parses")
        };
        let cases = [
            ("running", job(json!([])), None),
            (
                "complete",
                job(json!([{"type": "Complete", "status": "True"}])),
                Some(Finished::Complete),
            ),
            (
                "failed",
                job(
                    json!([{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]),
                ),
                Some(Finished::Failed {
                    reason: "BackoffLimitExceeded".into(),
                }),
            ),
            (
                "not yet",
                job(json!([{"type": "Complete", "status": "False"}])),
                None,
            ),
        ];
        for (case, job, want) in cases {
            assert_eq!(finished(&job), want, "{case}");
        }
    }
}
