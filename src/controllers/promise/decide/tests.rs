//! Tables of cases for the Promise's decisions.

use crate::controllers::promise::decide::*;
use serde_json::json;

use crate::api::WorkflowType;
use crate::api::{Object, PromiseStatus};
use crate::controllers::promise::requirements::Requirements;
use crate::controllers::subject::Subject;
use crate::controllers::workflow::decide::plan::plan_configure;
use crate::controllers::workflow::decide::RunPhase;
use crate::controllers::workflow::decide::RunRecord;

const NOW: i64 = 1_800_000_000_000;

fn subject() -> Subject {
    Subject {
        kind: crate::platform::builtin(crate::api::Builtin::Promise),
        object: serde_json::from_value(json!({
            "apiVersion": crate::api::API_VERSION, "kind": "Promise",
            "metadata": {"name": "db", "generation": 3},
            "spec": {},
        }))
        .expect("an object"),
        promise_name: "db".into(),
        workflow_type: WorkflowType::Promise,
        hash: "h".into(),
        promise_version: "not-set".into(),
    }
}

fn succeeded(sequence: i64, pipeline: &str, index: usize) -> (Object, RunRecord) {
    let object = serde_json::from_value(json!({
        "apiVersion": crate::api::API_VERSION, "kind": "PipelineRun",
        "metadata": {"name": format!("db-{pipeline}-{sequence}"), "namespace": "kratix-platform-system"},
    }))
    .expect("an object");
    let record = RunRecord {
        sequence,
        pipeline_name: pipeline.into(),
        pipeline_index: index,
        action: crate::api::Action::Configure,
        hash: "h".into(),
        phase: RunPhase::Succeeded,
        completion_time_ms: Some(NOW - 1000),
        suspend: None,
        progress: None,
        attempt: 1,
    };
    (object, record)
}

#[test]
fn available_once_configured_and_said_once() {
    let names = vec!["a".to_string(), "b".to_string()];
    let done = vec![succeeded(1, "a", 0), succeeded(2, "b", 1)];
    let available = PromiseStatus {
        status: Some("Available".into()),
        last_available_time: Some("2026-01-01T00:00:00Z".into()),
        ..PromiseStatus::default()
    };
    let cases = [
        // (case, runs, before, status, became available, message, counters)
        (
            "first look",
            vec![],
            PromiseStatus::default(),
            "Unavailable",
            false,
            None,
            json!([2, 0, 0]),
        ),
        (
            "configured now",
            done.clone(),
            PromiseStatus::default(),
            "Available",
            true,
            Some("Promise configured"),
            json!([2, 2, 0]),
        ),
        (
            "configured before",
            done.clone(),
            available.clone(),
            "Available",
            false,
            Some("Promise configured"),
            json!([2, 2, 0]),
        ),
    ];
    let subject = subject();
    for (name, runs, before, want_status, want_became, message, counters) in cases {
        let configured = plan_configure(&subject, &names, &runs, &[], true, NOW);
        let requirements = Requirements {
            statuses: vec![],
            condition: None,
        };
        let d = decide(&Observed {
            configured: &configured,
            names: &names,
            hash: "h",
            generation: Some(3),
            before: &before,
            requirements: &requirements,
            required_by: &[],
            version: "not-set",
            api: Some(("Database".into(), "example.com/v1".into())),
            interval: (None, false),
            retry_failures: true,
            now_ms: NOW,
            carried: Default::default(),
            reconcile_resources: false,
        });
        let mut status = serde_json::to_value(&before).expect("a status");
        d.write
            .status
            .as_ref()
            .expect("a status")
            .apply(&mut status);
        assert_eq!(status["status"], want_status, "{name}: {status:#}");
        assert_eq!(status["kratix"]["status"], want_status, "{name}");
        assert_eq!(d.became_available, want_became, "{name}");
        assert_eq!(status["message"].as_str(), message, "{name}");
        assert_eq!(
            json!([
                status["workflows"],
                status["workflowsSucceeded"],
                status["workflowsFailed"]
            ]),
            counters,
            "{name}"
        );
        assert_eq!(status["kind"], "Database", "{name}");
        assert_eq!(status["observedGeneration"], 3, "{name}");
        assert_eq!(
            status.pointer("/lastAvailableTime").is_some(),
            want_status == "Available",
            "{name}: {status:#}"
        );
        let phases: Vec<&str> = status["pipelines"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p["phase"].as_str())
            .collect();
        let want_phases = if runs.is_empty() {
            ["Running", "Pending"]
        } else {
            ["Succeeded", "Succeeded"]
        };
        assert_eq!(phases, want_phases, "{name}");
    }
}

#[test]
fn what_its_pipelines_wrote_is_carried_over_before_its_own_fields() {
    use crate::controllers::workflow::decide::carry_over::CarryOver;
    let names = vec!["a".to_string()];
    let runs = vec![succeeded(1, "a", 0)];
    let configured = plan_configure(&subject(), &names, &runs, &[], true, NOW);
    let requirements = Requirements {
        statuses: vec![],
        condition: None,
    };
    let file = json!({"message": "from a", "url": "https://db", "observedGeneration": 1});
    let before = PromiseStatus::default();
    let d = decide(&Observed {
        configured: &configured,
        names: &names,
        hash: "h",
        generation: Some(3),
        before: &before,
        requirements: &requirements,
        required_by: &[],
        version: "not-set",
        api: None,
        interval: (None, false),
        retry_failures: true,
        now_ms: NOW,
        carried: CarryOver::of([(1, Some(&file))]),
        reconcile_resources: false,
    });
    let mut status = json!({});
    d.write
        .status
        .as_ref()
        .expect("a status")
        .apply(&mut status);
    assert_eq!(
        status["url"], "https://db",
        "the pipeline's own field: {status:#}"
    );
    assert_eq!(status["kratix"]["statusYamlRun"], 1, "{status:#}");
    // Fields the reconcile decides are its own, as when the pipeline's file was merged before
    // the reconcile wrote the status.
    assert_eq!(status["message"], "Promise configured", "{status:#}");
    assert_eq!(status["observedGeneration"], 3, "{status:#}");
    // Once carried over, the file is not merged again.
    status["url"] = json!("changed since");
    d.write
        .status
        .as_ref()
        .expect("a status")
        .apply(&mut status);
    assert_eq!(status["url"], "changed since", "{status:#}");
}
