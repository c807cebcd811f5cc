use std::time::Duration;

use serde_json::json;

use super::*;

const WHAT: &str = "configure pipeline p";

fn failed(code: i32) -> RunResult {
    RunResult::Failed {
        container: "main".into(),
        exit_code: Some(code),
        reason: String::new(),
    }
}

fn suspend(message: &str, retry_after: Option<Duration>) -> RequestedControl {
    RequestedControl {
        suspend: retry_after.is_none(),
        retry_after,
        message: Some(message.into()).filter(|m: &String| !m.is_empty()),
    }
}

/// One case: how the run ended, and what it decides (phase, message, Work, whether its
/// `status.yaml` is recorded, event).
struct Case {
    name: &'static str,
    workflow_type: WorkflowType,
    action: Action,
    result: RunResult,
    control: RequestedControl,
    status_yaml: Option<Value>,
    has_output: bool,
    want: (
        PipelineRunPhase,
        &'static str,
        bool,
        bool,
        Reason,
        &'static str,
    ),
}

fn case(name: &'static str) -> Case {
    Case {
        name,
        workflow_type: WorkflowType::Resource,
        action: Action::Configure,
        result: RunResult::Succeeded,
        control: RequestedControl::default(),
        status_yaml: None,
        has_output: true,
        want: (
            PipelineRunPhase::Succeeded,
            "",
            true,
            false,
            Reason::PipelineSucceeded,
            "configure pipeline p succeeded",
        ),
    }
}

#[test]
fn an_ended_run_decides_its_record_its_work_its_status_and_its_event() {
    let misfit = "container status-writer failed: metadata/status.yaml does not fit a Promise's status: field message: invalid type: integer `3`, expected a string";
    let cases = vec![
        case("a configure run that succeeded writes its Work"),
        Case {
            status_yaml: Some(json!({"ready": true})),
            want: (PipelineRunPhase::Succeeded, "", true, true, Reason::PipelineSucceeded, "configure pipeline p succeeded"),
            ..case("its status.yaml is recorded on the run")
        },
        Case {
            action: Action::Delete,
            has_output: false,
            status_yaml: Some(json!({"gone": true})),
            want: (PipelineRunPhase::Succeeded, "", false, true, Reason::PipelineSucceeded, "configure pipeline p succeeded"),
            ..case("a delete run writes no Work")
        },
        Case {
            result: failed(3),
            status_yaml: Some(json!({"ready": true})),
            want: (PipelineRunPhase::Failed, "container main exited with code 3", false, false, Reason::PipelineFailed, "configure pipeline p failed: container main exited with code 3"),
            ..case("a failed run writes nothing")
        },
        Case {
            control: suspend("waiting", None),
            status_yaml: Some(json!({"waiting": true})),
            want: (PipelineRunPhase::Succeeded, "", false, true, Reason::WorkflowSuspended, "configure pipeline p suspended the workflow: waiting"),
            ..case("a run that suspends its workflow writes no Work")
        },
        Case {
            control: suspend("", Some(Duration::from_secs(90))),
            want: (PipelineRunPhase::Succeeded, "", false, false, Reason::WorkflowSuspended, "configure pipeline p suspended the workflow (runs again in 90s)"),
            ..case("a retry suspends it too")
        },
        Case {
            workflow_type: WorkflowType::Promise,
            status_yaml: Some(json!({"message": 3})),
            want: (PipelineRunPhase::Failed, misfit, false, false, Reason::PipelineFailed, "configure pipeline p failed: container status-writer failed: metadata/status.yaml does not fit a Promise's status: field message: invalid type: integer `3`, expected a string"),
            ..case("a Promise's status.yaml that does not fit fails the run and writes nothing")
        },
        Case {
            workflow_type: WorkflowType::Promise,
            control: suspend("later", None),
            status_yaml: Some(json!({"message": 3})),
            want: (PipelineRunPhase::Failed, misfit, false, false, Reason::PipelineFailed, "configure pipeline p failed: container status-writer failed: metadata/status.yaml does not fit a Promise's status: field message: invalid type: integer `3`, expected a string"),
            ..case("it fails even when the pipeline asked to suspend")
        },
        Case {
            workflow_type: WorkflowType::Promise,
            status_yaml: Some(json!({"message": "configured by p"})),
            want: (PipelineRunPhase::Succeeded, "", true, true, Reason::PipelineSucceeded, "configure pipeline p succeeded"),
            ..case("a Promise's status.yaml that fits is recorded")
        },
        Case {
            status_yaml: Some(json!({"message": 3})),
            want: (PipelineRunPhase::Succeeded, "", true, true, Reason::PipelineSucceeded, "configure pipeline p succeeded"),
            ..case("a request's status is the pipelines' own")
        },
    ];
    for c in cases {
        let got = after_run(&Ended {
            workflow_type: c.workflow_type,
            action: c.action,
            what: WHAT,
            result: &c.result,
            timeout: Duration::from_secs(60),
            control: &c.control,
            status_yaml: c.status_yaml.as_ref(),
            has_output: c.has_output,
        });
        let (phase, message, work, merge, reason, event) = c.want;
        assert_eq!(
            (
                got.finished.phase,
                got.finished.message.as_str(),
                got.write_work,
                got.finished.status_yaml.clone(),
                got.event.0,
                got.event.1.as_str(),
            ),
            (
                phase,
                message,
                work,
                c.status_yaml.clone().filter(|_| merge),
                reason,
                event
            ),
            "{}",
            c.name
        );
    }
}
