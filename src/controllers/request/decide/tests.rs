//! Tables of cases for the request's decisions.

use crate::controllers::request::decide::*;
use crate::controllers::workflow::decide::StartReason;

#[test]
fn promise_available_condition_names_the_promise_while_waiting() {
    let cases = [
        (
            true,
            ConditionStatus::True,
            "PromiseAvailable",
            "Promise is available",
        ),
        (
            false,
            ConditionStatus::False,
            "PromiseNotAvailable",
            "Promise db is not available yet",
        ),
    ];
    for (available, status, reason, message) in cases {
        let c = promise_available_condition(available, "db");
        assert_eq!(c.type_, "PromiseAvailable", "{available}");
        assert_eq!(
            (c.status, c.reason.as_str(), c.message.as_str()),
            (status, reason, message),
            "{available}"
        );
    }
}

#[test]
fn a_request_waiting_for_its_promise_says_pending_in_reconciled_too() {
    let got: Vec<(String, ConditionStatus, String, String)> = waiting_for_promise("db")
        .into_iter()
        .map(|c| (c.type_, c.status, c.reason, c.message))
        .collect();
    assert_eq!(
        got,
        [
            (
                "PromiseAvailable".to_string(),
                ConditionStatus::False,
                "PromiseNotAvailable".to_string(),
                "Promise db is not available yet".to_string()
            ),
            (
                "Reconciled".to_string(),
                ConditionStatus::Unknown,
                "PromiseNotAvailable".to_string(),
                PENDING.to_string()
            ),
        ]
    );
}

#[test]
fn message_says_requested_unless_a_pipeline_said_otherwise() {
    let completed = Step::Completed {
        last_run_sequence: 1,
    };
    let start = Step::Start {
        index: 0,
        reason: StartReason::FirstRun,
    };
    let failed = Step::Failed {
        index: 0,
        pipeline: "a".into(),
        attempts: 1,
        retry_at_ms: None,
    };
    let pending = json!("Pending");
    let custom = json!("db is up");
    let odd = json!(3);
    let cases: Vec<(&str, &Step, Option<&Value>, Option<&str>)> = vec![
        (
            "completed, none yet",
            &completed,
            None,
            Some("Resource requested"),
        ),
        (
            "completed, pending",
            &completed,
            Some(&pending),
            Some("Resource requested"),
        ),
        (
            "completed, not text",
            &completed,
            Some(&odd),
            Some("Resource requested"),
        ),
        ("completed, pipeline's own", &completed, Some(&custom), None),
        ("starting, none yet", &start, None, Some("Pending")),
        ("starting, pipeline's own", &start, Some(&custom), None),
        ("waiting, none yet", &Step::Wait, None, Some("Pending")),
        (
            "nothing to run, none yet",
            &Step::NothingToRun,
            None,
            Some("Resource requested"),
        ),
        (
            "nothing to run, pending",
            &Step::NothingToRun,
            Some(&pending),
            Some("Resource requested"),
        ),
        (
            "nothing to run, pipeline's own",
            &Step::NothingToRun,
            Some(&custom),
            None,
        ),
        ("failed", &failed, Some(&pending), None),
    ];
    for (name, step, current, want) in cases {
        assert_eq!(request_message(step, current), want, "{name}");
    }
}

mod configure {
    use std::collections::HashMap;
    use std::time::Duration;

    use serde_json::{json, Value};

    use crate::api::workflow_status::Landing;
    use crate::api::WorkflowType;
    use crate::api::{KindInfo, Object};
    use crate::controllers::next::Next;
    use crate::controllers::request::binding::decide::RequestVersions;
    use crate::controllers::request::decide::{decide, Observed};
    use crate::controllers::subject::Subject;
    use crate::controllers::workflow::decide::carry_over::{self, CarryOver};
    use crate::controllers::workflow::decide::plan::plan_configure;
    use crate::controllers::workflow::decide::plan::Configured;
    use crate::controllers::workflow::decide::RunPhase;
    use crate::controllers::workflow::decide::RunRecord;

    const HASH: &str = "h1";
    const NOW: i64 = 1_800_000_000_000;

    fn subject(labels: Value) -> Subject {
        Subject {
            kind: KindInfo {
                group: "example.com".into(),
                version: "v1".into(),
                kind: "Thing".into(),
                plural: "things".into(),
                singular: "thing".into(),
                short_names: vec![],
                namespaced: true,
            },
            object: serde_json::from_value(json!({
                "apiVersion": "example.com/v1", "kind": "Thing",
                "metadata": {"name": "r1", "namespace": "default", "generation": 2,
                             "labels": labels},
                "spec": {},
            }))
            .expect("an object"),
            promise_name: "thing".into(),
            workflow_type: WorkflowType::Resource,
            hash: HASH.into(),
            promise_version: "not-set".into(),
        }
    }

    fn run(sequence: i64, pipeline: &str, index: usize, phase: RunPhase) -> (Object, RunRecord) {
        let object = serde_json::from_value(json!({
            "apiVersion": crate::api::API_VERSION, "kind": "PipelineRun",
            "metadata": {"name": format!("r1-{pipeline}-{sequence}"), "namespace": "default"},
        }))
        .expect("an object");
        let record = RunRecord {
            sequence,
            pipeline_name: pipeline.into(),
            pipeline_index: index,
            action: crate::api::Action::Configure,
            hash: HASH.into(),
            phase,
            completion_time_ms: (!phase.is_active()).then_some(NOW - 1000),
            suspend: None,
            progress: None,
            attempt: 1,
        };
        (object, record)
    }

    /// A Work of pipeline `pipeline` whose `Ready` condition is `ready`.
    fn work(pipeline: &str, ready: &str) -> Object {
        serde_json::from_value(json!({
            "apiVersion": crate::api::API_VERSION, "kind": "Work",
            "metadata": {"name": format!("thing-r1-{pipeline}"), "namespace": "default",
                         "generation": 1,
                         "labels": {"kratix.io/pipeline-name": pipeline}},
            "status": {"observedGeneration": 1, "conditions": [
                {"type": "Ready", "status": ready, "reason": "r", "message": if ready == "True" { "Ready" } else { "Pending" },
                 "lastTransitionTime": "2026-01-01T00:00:00Z"}]},
        }))
        .expect("an object")
    }

    struct Case {
        name: &'static str,
        labels: Value,
        runs: Vec<(Object, RunRecord)>,
        works: Vec<Object>,
        versions: Option<RequestVersions>,
        interval: (Option<Duration>, bool),
    }

    fn configured(case: &Case, names: &[String]) -> (Subject, Configured) {
        let subject = subject(case.labels.clone());
        let configured = plan_configure(&subject, names, &case.runs, &case.works, true, NOW);
        (subject, configured)
    }

    /// The status a case decides, written over an empty one.
    fn decided(case: &Case) -> (Value, bool, bool, Next) {
        let names = vec!["a".to_string(), "b".to_string()];
        let (subject, configured) = configured(case, &names);
        let landed: HashMap<String, Vec<Landing>> = HashMap::from([(
            "a".to_string(),
            vec![Landing {
                destination: Some("dev".into()),
                version: Some("abc123".into()),
                written: true,
            }],
        )]);
        let d = decide(&Observed {
            configured: &configured,
            names: &names,
            hash: &subject.hash,
            generation: Some(2),
            promise_name: "thing",
            promise_generation: Some(7),
            landed: &landed,
            health: None,
            versions: case.versions.clone(),
            interval: case.interval,
            retry_failures: true,
            now_ms: NOW,
            carried: CarryOver::of(
                case.runs
                    .iter()
                    .map(|(run, r)| (r.sequence, carry_over::recorded(run))),
            ),
            asks: (None, None),
            reconciled_before: true,
        });
        let mut status = json!({});
        d.status.as_ref().expect("a status").apply(&mut status);
        (status, d.labels.clear_manual, d.labels.rerun, d.next)
    }

    fn condition<'a>(status: &'a Value, type_: &str) -> (&'a str, &'a str) {
        let c = status["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == type_)
            .unwrap_or(&Value::Null);
        (
            c["status"].as_str().unwrap_or("absent"),
            c["reason"].as_str().unwrap_or(""),
        )
    }

    fn phases(status: &Value) -> Vec<(String, String)> {
        status["pipelines"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| {
                (
                    p["name"].as_str().unwrap_or_default().to_string(),
                    p["phase"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect()
    }

    #[test]
    fn the_status_shows_what_the_reconcile_did_in_one_write() {
        use RunPhase::*;
        let cases = [
            // (case, pipelines' phases, Reconciled, message, clear label, rerun label, next)
            (
                Case {
                    name: "first look: the first pipeline shows as started",
                    labels: json!({}),
                    runs: vec![],
                    works: vec![],
                    versions: None,
                    interval: (None, false),
                },
                vec![("a", "Running"), ("b", "Pending")],
                "Unknown",
                "Pending",
                false,
                false,
                Next::Done,
            ),
            (
                Case {
                    name: "manual reconciliation starts again and clears its label",
                    labels: json!({"kratix.io/manual-reconciliation": "true"}),
                    runs: vec![run(1, "a", 0, Succeeded), run(2, "b", 1, Succeeded)],
                    works: vec![work("a", "True"), work("b", "True")],
                    versions: None,
                    interval: (None, false),
                },
                vec![("a", "Running"), ("b", "Pending")],
                "Unknown",
                "Pending",
                true,
                false,
                Next::Done,
            ),
            (
                Case {
                    name: "the first succeeded: the second shows as started",
                    labels: json!({}),
                    runs: vec![run(1, "a", 0, Succeeded)],
                    works: vec![work("a", "True")],
                    versions: None,
                    interval: (None, false),
                },
                vec![("a", "Succeeded"), ("b", "Running")],
                "Unknown",
                "Pending",
                false,
                false,
                Next::Done,
            ),
            (
                Case {
                    name: "completed, Works written: reconciled",
                    labels: json!({}),
                    runs: vec![run(1, "a", 0, Succeeded), run(2, "b", 1, Succeeded)],
                    works: vec![work("a", "True"), work("b", "True")],
                    versions: Some(RequestVersions {
                        completed: Some("v2".into()),
                        binding: "latest".into(),
                    }),
                    interval: (Some(Duration::from_secs(60)), false),
                },
                vec![("a", "Succeeded"), ("b", "Succeeded")],
                "True",
                "Resource requested",
                false,
                false,
                Next::After(Duration::from_secs(60)),
            ),
            (
                Case {
                    name: "completed, a Work pending: not reconciled yet",
                    labels: json!({}),
                    runs: vec![run(1, "a", 0, Succeeded), run(2, "b", 1, Succeeded)],
                    works: vec![work("a", "True"), work("b", "Unknown")],
                    versions: None,
                    interval: (None, false),
                },
                vec![("a", "Succeeded"), ("b", "Succeeded")],
                "Unknown",
                "Resource requested",
                false,
                false,
                Next::Done,
            ),
            (
                Case {
                    name: "the interval passed: labelled to run again",
                    labels: json!({}),
                    runs: vec![run(1, "a", 0, Succeeded), run(2, "b", 1, Succeeded)],
                    works: vec![work("a", "True"), work("b", "True")],
                    versions: None,
                    interval: (None, true),
                },
                vec![("a", "Succeeded"), ("b", "Succeeded")],
                "True",
                "Resource requested",
                false,
                true,
                Next::Done,
            ),
            (
                Case {
                    name: "a pipeline running: waits",
                    labels: json!({}),
                    runs: vec![run(1, "a", 0, Running)],
                    works: vec![],
                    versions: None,
                    interval: (None, false),
                },
                vec![("a", "Running"), ("b", "Pending")],
                "Unknown",
                "Pending",
                false,
                false,
                Next::Done,
            ),
        ];
        for (case, want_phases, reconciled, message, clear, rerun, next) in cases {
            let (status, got_clear, got_rerun, got_next) = decided(&case);
            let want: Vec<(String, String)> = want_phases
                .iter()
                .map(|(n, p)| (n.to_string(), p.to_string()))
                .collect();
            assert_eq!(phases(&status), want, "{}: {status:#}", case.name);
            assert_eq!(
                condition(&status, "Reconciled").0,
                reconciled,
                "{}: {status:#}",
                case.name
            );
            assert_eq!(status["message"], message, "{}", case.name);
            assert_eq!(
                (got_clear, got_rerun, got_next),
                (clear, rerun, next),
                "{}",
                case.name
            );
            assert_eq!(status["observedGeneration"], 2, "{}", case.name);
            assert_eq!(status["observedPromiseGeneration"], 7, "{}", case.name);
            assert_eq!(
                status["kratix"]["workflows"]["configure"]["pipelines"][0]["name"], "a",
                "{}: keyed status",
                case.name
            );
            if let Some(v) = &case.versions {
                assert_eq!(
                    status["resourceBindingVersion"],
                    v.binding.as_str(),
                    "{}",
                    case.name
                );
                assert_eq!(
                    status["promiseVersion"].as_str(),
                    v.completed.as_deref(),
                    "{}",
                    case.name
                );
            }
        }
    }

    #[test]
    fn where_the_files_landed_is_in_the_pipelines_entry() {
        let case = Case {
            name: "completed",
            labels: json!({}),
            runs: vec![
                run(1, "a", 0, RunPhase::Succeeded),
                run(2, "b", 1, RunPhase::Succeeded),
            ],
            works: vec![work("a", "True"), work("b", "True")],
            versions: None,
            interval: (None, false),
        };
        let (status, ..) = decided(&case);
        assert_eq!(
            status["pipelines"][0]["destinations"],
            json!([{"destination": "dev", "version": "abc123", "written": true}])
        );
        assert!(
            status["pipelines"][1].get("destinations").is_none(),
            "{status:#}"
        );
    }

    #[test]
    fn what_its_pipelines_wrote_is_carried_over_before_its_own_fields() {
        let (mut a, a_record) = run(1, "a", 0, RunPhase::Succeeded);
        a.data["status"] = json!({"phase": "Succeeded",
            "statusYaml": {"message": "db is up", "url": "https://db", "workflows": 9}});
        let case = Case {
            name: "completed",
            labels: json!({}),
            runs: vec![(a, a_record), run(2, "b", 1, RunPhase::Succeeded)],
            works: vec![work("a", "True"), work("b", "True")],
            versions: None,
            interval: (None, false),
        };
        let (status, ..) = decided(&case);
        assert_eq!(status["url"], "https://db", "{status:#}");
        assert_eq!(status["kratix"]["statusYamlRun"], 1, "{status:#}");
        // The pipeline's message stands; what the reconcile decides is its own.
        assert_eq!(status["message"], "db is up", "{status:#}");
        assert_eq!(status["workflows"], 2, "{status:#}");
    }
}
