//! The keyed workflow status (`status.kratix.workflows.<action>`) and the migration of the flat
//! layout.

use crate::api::Action;

use serde_json::json;

use crate::api::workflow_status::{WorkflowPipelineStatus, WorkflowStatus};
use crate::controllers::workflow::decide::tests::*;

/// `T` (see the parent module) and a few seconds after it, as status times.
const AT_T: &str = "1970-01-01T00:16:40Z";
const NOW_MS: i64 = T + 100_000;
const NOW: &str = "1970-01-01T00:18:20Z";

fn entry(name: &str, hash: Option<&str>, phase: &str, attempts: i64) -> WorkflowPipelineStatus {
    WorkflowPipelineStatus {
        name: name.into(),
        hash: hash.map(str::to_string),
        phase: phase.into(),
        attempts,
        last_transition_time: Some(NOW.into()),
        ..WorkflowPipelineStatus::default()
    }
}

fn since(entry: WorkflowPipelineStatus, at: &str) -> WorkflowPipelineStatus {
    WorkflowPipelineStatus {
        last_transition_time: Some(at.into()),
        ..entry
    }
}

fn keyed_status(
    action: Action,
    pipelines: &[&str],
    runs: &[RunRecord],
    hash: &str,
    previous: Option<&WorkflowStatus>,
) -> WorkflowStatus {
    let names = names(pipelines);
    let step = next_step(&Observed {
        action,
        pipelines: &names,
        hash,
        runs,
        manual_reconcile: false,
        resumed_run: None,
        retry_failures: true,
        now_ms: NOW_MS,
    });
    workflow_status(
        &KeyedInputs {
            action,
            pipelines: &names,
            runs,
            hash,
            retry_failures: true,
            step: &step,
            generation: Some(4),
            now_ms: NOW_MS,
        },
        previous,
    )
}

#[test]
fn keyed_status_says_each_pipelines_phase_and_last_hash() {
    let done = WorkflowStatus {
        pipelines: vec![
            since(entry("a", Some("h2"), "Succeeded", 1), AT_T),
            since(entry("b", Some("h2"), "Succeeded", 1), AT_T),
        ],
        last_successful_configure_workflow_time: Some(AT_T.into()),
        ..WorkflowStatus::default()
    };
    type Case<'a> = (
        &'a str,
        Vec<RunRecord>,
        &'a str,
        Option<&'a WorkflowStatus>,
        WorkflowStatus,
    );
    let cases: Vec<Case> = vec![
        (
            "never ran: pending without a hash",
            vec![],
            "h1",
            None,
            WorkflowStatus {
                pipelines: vec![
                    entry("a", None, "Pending", 0),
                    entry("b", None, "Pending", 0),
                ],
                ..WorkflowStatus::default()
            },
        ),
        (
            "completed: settled, with the last run's completion",
            vec![ok(1, "a", 0, "h1"), ok(2, "b", 1, "h1")],
            "h1",
            None,
            WorkflowStatus {
                pipelines: vec![
                    entry("a", Some("h1"), "Succeeded", 1),
                    entry("b", Some("h1"), "Succeeded", 1),
                ],
                last_successful_configure_workflow_time: crate::api::formats::rfc3339_secs(
                    completed_at(2),
                ),
                ..WorkflowStatus::default()
            },
        ),
        (
            "spec changed: pending, still naming the old hash, the last success kept",
            vec![ok(1, "a", 0, "h2"), ok(2, "b", 1, "h2")],
            "h3",
            Some(&done),
            WorkflowStatus {
                pipelines: vec![
                    entry("a", Some("h2"), "Pending", 0),
                    entry("b", Some("h2"), "Pending", 0),
                ],
                last_successful_configure_workflow_time: Some(AT_T.into()),
                ..WorkflowStatus::default()
            },
        ),
        (
            "unchanged phases keep their transition time",
            vec![ok(1, "a", 0, "h2"), ok(2, "b", 1, "h2")],
            "h2",
            Some(&done),
            WorkflowStatus {
                last_successful_configure_workflow_time: crate::api::formats::rfc3339_secs(
                    completed_at(2),
                ),
                ..done.clone()
            },
        ),
        (
            "running second pipeline",
            vec![ok(1, "a", 0, "h1"), running(2, "b", 1, "h1")],
            "h1",
            None,
            WorkflowStatus {
                pipelines: vec![
                    entry("a", Some("h1"), "Succeeded", 1),
                    entry("b", Some("h1"), "Running", 1),
                ],
                ..WorkflowStatus::default()
            },
        ),
        (
            "failed twice: retry time",
            vec![
                ok(1, "a", 0, "h1"),
                failed(2, "b", 1, "h1"),
                failed(3, "b", 1, "h1"),
            ],
            "h1",
            None,
            WorkflowStatus {
                pipelines: vec![
                    entry("a", Some("h1"), "Succeeded", 1),
                    WorkflowPipelineStatus {
                        next_retry_at: crate::api::formats::rfc3339_secs(completed_at(3) + 10_000),
                        ..entry("b", Some("h1"), "Failed", 2)
                    },
                ],
                ..WorkflowStatus::default()
            },
        ),
        (
            "suspended: message, resume time and the suspended generation",
            vec![suspended(1, "a", 0, "h1", Some(3_600_000))],
            "h1",
            None,
            WorkflowStatus {
                pipelines: vec![
                    WorkflowPipelineStatus {
                        message: Some("waiting for a".into()),
                        next_retry_at: crate::api::formats::rfc3339_secs(
                            completed_at(1) + 3_600_000,
                        ),
                        ..entry("a", Some("h1"), "Suspended", 1)
                    },
                    entry("b", None, "Pending", 0),
                ],
                suspended_generation: Some(4),
                ..WorkflowStatus::default()
            },
        ),
    ];
    for (name, runs, hash, previous, want) in cases {
        let got = keyed_status(Action::Configure, &["a", "b"], &runs, hash, previous);
        assert_eq!(got, want, "{name}");
        for entry in &got.pipelines {
            assert_eq!(
                entry.settled_at(hash),
                entry.phase == "Succeeded",
                "{name}: {} succeeded in this attempt, so at the current hash",
                entry.name
            );
        }
    }
}

#[test]
fn a_delete_workflow_has_its_own_entries_and_no_last_success() {
    let runs = vec![
        ok(1, "a", 0, "h1"),
        ok(2, "b", 1, "h1"),
        ok(3, "bye", 0, "h1").delete(),
    ];
    let delete = keyed_status(Action::Delete, &["bye"], &runs, "h1", None);
    assert_eq!(
        delete,
        WorkflowStatus {
            pipelines: vec![entry("bye", Some("h1"), "Succeeded", 1)],
            ..WorkflowStatus::default()
        }
    );
    let configure = keyed_status(Action::Configure, &["a", "b"], &runs, "h1", None);
    assert_eq!(
        configure
            .pipelines
            .iter()
            .map(|e| e.name.as_str())
            .collect::<Vec<_>>(),
        ["a", "b"],
        "the delete run is no configure entry"
    );
}

#[test]
fn the_flat_layout_is_recognised() {
    let cases = [
        (json!({"pipelines": [{}]}), true),
        (json!({"suspendedGeneration": 2}), true),
        (
            json!({"lastSuccessfulConfigureWorkflowTime": "x", "configure": {}}),
            true,
        ),
        (json!({"configure": {"pipelines": []}, "delete": {}}), false),
        (json!({}), false),
        (json!("odd"), false),
    ];
    for (workflows, want) in cases {
        assert_eq!(has_flat_layout(&workflows), want, "{workflows}");
    }
}

#[test]
fn migration_rebuilds_each_pipeline_from_its_newest_run() {
    let bare = |name: &str, hash: Option<&str>, phase: &str| WorkflowPipelineStatus {
        name: name.into(),
        hash: hash.map(str::to_string),
        phase: phase.into(),
        ..WorkflowPipelineStatus::default()
    };
    let cases: Vec<(&str, Action, Vec<RunRecord>, Vec<WorkflowPipelineStatus>)> = vec![
        (
            "no runs: every pipeline pending",
            Action::Configure,
            vec![],
            vec![bare("a", None, "Pending"), bare("b", None, "Pending")],
        ),
        (
            "newest run per pipeline, whatever the hash; b never ran",
            Action::Configure,
            vec![failed(1, "a", 0, "h1"), ok(2, "a", 0, "h2")],
            vec![
                bare("a", Some("h2"), "Succeeded"),
                bare("b", None, "Pending"),
            ],
        ),
        (
            "failed, running and suspended runs",
            Action::Configure,
            vec![
                suspended(1, "a", 0, "h1", None),
                failed(2, "b", 1, "h1"),
                running(3, "b", 1, "h1"),
            ],
            vec![
                bare("a", Some("h1"), "Suspended"),
                bare("b", Some("h1"), "Running"),
            ],
        ),
        (
            "a pending run counts as under way",
            Action::Configure,
            vec![ok(1, "a", 0, "h1"), pending(2, "b", 1, "h1")],
            vec![
                bare("a", Some("h1"), "Succeeded"),
                bare("b", Some("h1"), "Running"),
            ],
        ),
        (
            "only the migrated action's runs",
            Action::Delete,
            vec![ok(1, "a", 0, "h1"), failed(2, "a", 0, "h1").delete()],
            vec![bare("a", Some("h1"), "Failed"), bare("b", None, "Pending")],
        ),
    ];
    for (name, action, runs, want) in cases {
        let got = migrated(action, &names(&["a", "b"]), &runs);
        assert_eq!(
            got,
            WorkflowStatus {
                pipelines: want,
                ..WorkflowStatus::default()
            },
            "{name}"
        );
    }
}
