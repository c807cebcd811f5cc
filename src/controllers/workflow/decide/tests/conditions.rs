//! Tables of the workflow's conditions, pipeline statuses' phases and labels.

use crate::controllers::workflow::decide::tests::*;

#[test]
fn configure_conditions_table() {
    let failed = Step::Failed {
        index: 1,
        pipeline: "b".into(),
        attempts: 1,
        retry_at_ms: Some(0),
    };
    let suspended = Step::Suspended {
        index: 1,
        retry_at_ms: None,
        message: "hold".into(),
    };
    let done = Step::Completed {
        last_run_sequence: 3,
    };
    use ConditionStatus::*;
    type Expected = (
        Option<(ConditionStatus, &'static str, &'static str)>,
        (ConditionStatus, &'static str, &'static str),
    );
    let cases: Vec<(&str, Step, &str, WorksState, Expected)> = vec![
        (
            "waiting",
            Step::Wait,
            "",
            WorksState::Ready,
            (
                Some((
                    False,
                    "PipelinesInProgress",
                    "Pipelines are still in progress",
                )),
                (Unknown, "WorkflowPending", "Pending"),
            ),
        ),
        (
            "starting",
            start(0, StartReason::FirstRun),
            "",
            WorksState::Ready,
            (
                Some((
                    False,
                    "PipelinesInProgress",
                    "Pipelines are still in progress",
                )),
                (Unknown, "WorkflowPending", "Pending"),
            ),
        ),
        (
            "failed with exit reason",
            failed.clone(),
            "exit code 3",
            WorksState::Ready,
            (
                Some((
                    False,
                    "ConfigureWorkflowFailed",
                    "A Configure Pipeline has failed: b (exit code 3)",
                )),
                (False, "ConfigureWorkflowFailed", "Failing"),
            ),
        ),
        (
            "failed without exit reason",
            failed,
            "",
            WorksState::Ready,
            (
                Some((
                    False,
                    "ConfigureWorkflowFailed",
                    "A Configure Pipeline has failed: b",
                )),
                (False, "ConfigureWorkflowFailed", "Failing"),
            ),
        ),
        (
            "suspended",
            suspended,
            "",
            WorksState::Ready,
            (
                Some((
                    False,
                    "PipelinesInProgress",
                    "Pipelines are still in progress",
                )),
                (Unknown, "WorkflowSuspended", "Suspended"),
            ),
        ),
        (
            "completed, works ready",
            done.clone(),
            "",
            WorksState::Ready,
            (
                Some((True, "PipelinesExecutedSuccessfully", "Pipelines completed")),
                (True, "Reconciled", "Reconciled"),
            ),
        ),
        (
            "completed, works pending",
            done.clone(),
            "",
            WorksState::Pending,
            (
                Some((True, "PipelinesExecutedSuccessfully", "Pipelines completed")),
                (Unknown, "WorksPending", "Pending"),
            ),
        ),
        (
            "completed, works failing",
            done,
            "",
            WorksState::Failing,
            (
                Some((True, "PipelinesExecutedSuccessfully", "Pipelines completed")),
                (False, "WorksFailing", "Failing"),
            ),
        ),
        (
            "no pipelines",
            Step::NothingToRun,
            "",
            WorksState::NoWorks,
            (None, (True, "Reconciled", "Reconciled")),
        ),
    ];
    for (name, step, exit_reason, works, (cwc, rec)) in cases {
        let got = configure_conditions(&step, exit_reason, works);
        let summary: Vec<(&str, ConditionStatus, &str, &str)> = got
            .iter()
            .map(|c| {
                (
                    c.type_.as_str(),
                    c.status,
                    c.reason.as_str(),
                    c.message.as_str(),
                )
            })
            .collect();
        let mut expected = Vec::new();
        if let Some((status, reason, message)) = cwc {
            expected.push((CONFIGURE_WORKFLOW_COMPLETED, status, reason, message));
        }
        expected.push((RECONCILED, rec.0, rec.1, rec.2));
        assert_eq!(summary, expected, "{name}");
    }
}

#[test]
fn reconciled_precedence_table() {
    use ConditionStatus::*;
    let cases = [
        (
            false,
            WorksState::Ready,
            Unknown,
            "WorkflowPending",
            "Pending",
        ),
        (
            false,
            WorksState::Failing,
            Unknown,
            "WorkflowPending",
            "Pending",
        ),
        (
            true,
            WorksState::Pending,
            Unknown,
            "WorksPending",
            "Pending",
        ),
        (true, WorksState::Failing, False, "WorksFailing", "Failing"),
        (
            true,
            WorksState::Misplaced,
            False,
            "WorksFailing",
            "Failing",
        ),
        (true, WorksState::Ready, True, "Reconciled", "Reconciled"),
        (true, WorksState::NoWorks, True, "Reconciled", "Reconciled"),
    ];
    for (configure_done, works, status, reason, message) in cases {
        let got = reconciled(configure_done, works);
        assert_eq!(
            (
                got.type_.as_str(),
                got.status,
                got.reason.as_str(),
                got.message.as_str()
            ),
            (RECONCILED, status, reason, message),
            "configure_done={configure_done} works={works:?}"
        );
    }
}

#[test]
fn delete_condition_table() {
    use ConditionStatus::*;
    let cases = [
        (
            Step::Wait,
            "",
            False,
            "PipelinesInProgress",
            "Delete pipelines are still in progress",
        ),
        (
            start(1, StartReason::Next),
            "",
            False,
            "PipelinesInProgress",
            "Delete pipelines are still in progress",
        ),
        (
            Step::NothingToRun,
            "",
            True,
            "PipelinesExecutedSuccessfully",
            "Delete pipelines completed",
        ),
        (
            Step::Completed {
                last_run_sequence: 1,
            },
            "",
            True,
            "PipelinesExecutedSuccessfully",
            "Delete pipelines completed",
        ),
        (
            Step::Failed {
                index: 0,
                pipeline: "d1".into(),
                attempts: 2,
                retry_at_ms: Some(0),
            },
            "exit code 1",
            False,
            "DeleteWorkflowFailed",
            "A Delete Pipeline has failed: d1 (exit code 1)",
        ),
        (
            Step::Suspended {
                index: 0,
                retry_at_ms: None,
                message: "hold".into(),
            },
            "",
            False,
            "DeleteWorkflowSuspended",
            "The delete workflow is suspended",
        ),
    ];
    for (step, exit_reason, status, reason, message) in cases {
        let got = delete_condition(&step, exit_reason);
        assert_eq!(
            (
                got.type_.as_str(),
                got.status,
                got.reason.as_str(),
                got.message.as_str()
            ),
            (DELETE_WORKFLOW_COMPLETED, status, reason, message),
            "{step:?}"
        );
    }
}

#[test]
fn obsolete_pipelines_table() {
    let cases: [(&[&str], &[&str], &[&str]); 6] = [
        (&[], &["a"], &[]),
        (&["a", "b"], &["a", "b"], &[]),
        (&["a", "b", "c"], &["a", "c"], &["b"]),
        (&["a", "old"], &["a", "new"], &["old"]),
        (&["x", "y", "x"], &[], &["x", "y"]),
        (&["b", "a"], &["c"], &["b", "a"]),
    ];
    for (works, current, expected) in cases {
        assert_eq!(
            obsolete_pipelines(&names(works), &names(current)),
            names(expected),
            "works {works:?} current {current:?}"
        );
    }
}

#[test]
fn labels_round_trip_and_unknown_values_are_refused() {
    for action in [Action::Configure, Action::Delete] {
        assert_eq!(action.as_str().parse::<Action>().ok(), Some(action));
    }
    for workflow_type in [WorkflowType::Promise, WorkflowType::Resource] {
        assert_eq!(
            workflow_type.as_str().parse::<WorkflowType>().ok(),
            Some(workflow_type)
        );
    }
    assert!(matches!(
        "Configure".parse::<Action>(),
        Err(Error::UnknownAction { .. })
    ));
    assert!(matches!(
        "cluster".parse::<WorkflowType>(),
        Err(Error::UnknownWorkflowType { .. })
    ));
    assert_eq!(
        RunPhase::from(crate::api::PipelineRunPhase::Running),
        RunPhase::Running
    );
}
