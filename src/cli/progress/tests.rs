use super::*;
use serde_json::json;

use crate::cli::test_objects::{redis as object, redis_kind as kind};

fn pipelines(phases: &[(&str, &str)]) -> Value {
    json!(phases
        .iter()
        .map(|(name, phase)| json!({"name": name, "phase": phase, "attempts": 1}))
        .collect::<Vec<_>>())
}

fn running(obs: i64, phases: &[(&str, &str)]) -> Value {
    json!({"observedGeneration": obs, "pipelines": pipelines(phases),
           "conditions": [{"type": "Reconciled", "status": "False", "message": "pending"}]})
}

#[test]
fn status_is_read_from_the_current_generation_only() {
    let cases = [
        ("gone", None, Outcome::Gone, 0, 0),
        (
            "older generation: its pipelines are not this one's",
            Some(object(2, running(1, &[("a", "Succeeded")]))),
            Outcome::Waiting("not reconciled yet".into()),
            0,
            0,
        ),
        (
            "current generation, one written",
            Some(object(
                1,
                json!({"observedGeneration": 1, "pipelines": [
                    {"name": "a", "phase": "Succeeded", "attempts": 1, "destinations": [
                        {"destination": "d", "version": "abc", "written": true},
                        {"destination": "e", "version": null, "written": false}]}],
                    "conditions": [{"type": "Reconciled", "status": "True"}]}),
            )),
            Outcome::Settled,
            1,
            1,
        ),
    ];
    let deleting = |status: Value| {
        let mut obj = object(1, status);
        obj.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                "2026-01-01T00:00:00Z".parse().expect("a time"),
            ));
        obj
    };
    let cases = cases.into_iter().chain([
        (
            "being deleted: the delete workflow's pipelines, whatever the generation",
            Some(deleting(json!({"observedGeneration": 0, "pipelines": pipelines(&[("a", "Succeeded")]),
                "kratix": {"workflows": {
                    "configure": {"pipelines": pipelines(&[("a", "Succeeded")])},
                    "delete": {"pipelines": pipelines(&[("bye", "Suspended"), ("two", "Pending")])}}}}))),
            Outcome::Deleting,
            2,
            0,
        ),
        (
            "being deleted, no delete workflow",
            Some(deleting(running(1, &[("a", "Succeeded")]))),
            Outcome::Deleting,
            0,
            0,
        ),
    ]);
    for (name, obj, outcome, n_pipelines, n_written) in cases {
        let s = status_of(&kind(), obj.as_ref());
        assert_eq!(s.outcome, outcome, "{name}");
        assert_eq!(s.pipelines.len(), n_pipelines, "{name}");
        assert_eq!(s.written.len(), n_written, "{name}");
    }
}

#[test]
fn changes_report_each_step_once_in_order() {
    let st = |phases: &[(&str, &str)], written: &[(&str, &str)], outcome: Outcome| Status {
        pipelines: phases
            .iter()
            .map(|(n, p)| PipelineState {
                name: n.to_string(),
                phase: p.to_string(),
                message: if *p == "Failed" {
                    "exit 1".into()
                } else {
                    String::new()
                },
            })
            .collect(),
        written: written
            .iter()
            .map(|(d, c)| (d.to_string(), c.to_string()))
            .collect(),
        outcome,
    };
    let waiting = || Outcome::Waiting("Reconciled: pending".into());
    let first = st(&[("a", "Running"), ("b", "Pending")], &[], waiting());
    let second = st(
        &[("a", "Succeeded"), ("b", "Running")],
        &[("d", "abc")],
        waiting(),
    );
    let done = st(
        &[("a", "Succeeded"), ("b", "Succeeded")],
        &[("d", "abc"), ("d", "def")],
        Outcome::Settled,
    );
    let failed = st(
        &[("a", "Succeeded"), ("b", "Failed")],
        &[],
        Outcome::Failed("b failed".into()),
    );
    let gone = st(&[], &[], Outcome::Gone);
    let deleting = st(&[], &[], Outcome::Deleting);
    let mut pulling = first.clone();
    pulling.pipelines[0].message = "pulling image x:1".into();
    let cases: Vec<(&str, Option<&Status>, &Status, Vec<&str>)> = vec![
        (
            "first look",
            None,
            &first,
            vec![
                "pipeline a (1 of 2) running",
                "waiting: Reconciled: pending",
            ],
        ),
        ("nothing changed", Some(&first), &first, vec![]),
        (
            "a pull under way",
            Some(&first),
            &pulling,
            vec!["pipeline a (1 of 2) running: pulling image x:1"],
        ),
        (
            "the pull over, the pipeline runs on",
            Some(&pulling),
            &first,
            vec!["pipeline a (1 of 2) running"],
        ),
        (
            "next pipeline, a write",
            Some(&first),
            &second,
            vec![
                "pipeline a (1 of 2) succeeded",
                "pipeline b (2 of 2) running",
                "written to d at abc",
            ],
        ),
        (
            "settled",
            Some(&second),
            &done,
            vec![
                "pipeline b (2 of 2) succeeded",
                "written to d at def",
                "settled",
            ],
        ),
        (
            "failed",
            Some(&second),
            &failed,
            vec!["pipeline b (2 of 2) failed: exit 1", "failed: b failed"],
        ),
        ("gone", Some(&done), &gone, vec!["deleted"]),
        ("deleting", Some(&done), &deleting, vec!["deleting"]),
    ];
    for (name, before, now, want) in cases {
        let got: Vec<String> = changes(before, now).iter().map(Change::text).collect();
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn a_terminal_line_says_what_runs_or_how_it_ended() {
    let st = |phases: &[(&str, &str, &str)], written: &[(&str, &str)], outcome: Outcome| Status {
        pipelines: phases
            .iter()
            .map(|(n, p, m)| PipelineState {
                name: n.to_string(),
                phase: p.to_string(),
                message: m.to_string(),
            })
            .collect(),
        written: written
            .iter()
            .map(|(d, c)| (d.to_string(), c.to_string()))
            .collect(),
        outcome,
    };
    let waiting = || Outcome::Waiting("not reconciled yet".into());
    let cases = [
        (
            "nothing yet",
            st(&[], &[], waiting()),
            "waiting: not reconciled yet",
        ),
        (
            "second of three running",
            st(
                &[
                    ("a", "Succeeded", ""),
                    ("b", "Running", ""),
                    ("c", "Pending", ""),
                ],
                &[("d", "0123456789abcdef")],
                waiting(),
            ),
            "pipeline b (2 of 3) running, written to d at 0123456789ab",
        ),
        (
            "pulling its image",
            st(&[("a", "Running", "pulling image x:1")], &[], waiting()),
            "pipeline a (1 of 1) running: pulling image x:1",
        ),
        (
            "failed pipeline, retried later",
            st(&[("a", "Failed", "exit 2")], &[], waiting()),
            "pipeline a (1 of 1) failed: exit 2",
        ),
        (
            "suspended",
            st(&[("a", "Suspended", "approval")], &[], waiting()),
            "pipeline a suspended: approval",
        ),
        (
            "settled",
            st(&[("a", "Succeeded", "")], &[("d", "abc")], Outcome::Settled),
            "settled, written to d at abc",
        ),
        (
            "failed",
            st(&[], &[], Outcome::Failed("x".into())),
            "failed: x",
        ),
        ("gone", st(&[], &[], Outcome::Gone), "deleted"),
        ("deleting", st(&[], &[], Outcome::Deleting), "deleting"),
        (
            "deleting, the delete pipeline suspended",
            st(&[("bye", "Suspended", "approval")], &[], Outcome::Deleting),
            "deleting: pipeline bye suspended: approval",
        ),
        (
            "deleting, the delete pipeline running",
            st(&[("bye", "Running", "")], &[], Outcome::Deleting),
            "deleting: pipeline bye (1 of 1) running",
        ),
    ];
    for (name, s, want) in cases {
        assert_eq!(line(&s), want, "{name}");
    }
}

#[test]
fn json_events_carry_their_kind_and_fields() {
    let cases = [
        (
            Change::PipelineRunning {
                pipeline: "a".into(),
                index: 1,
                total: 2,
                message: None,
            },
            json!({"event": "PipelineRunning", "pipeline": "a", "index": 1, "total": 2}),
        ),
        (
            Change::PipelineRunning {
                pipeline: "a".into(),
                index: 1,
                total: 2,
                message: Some("pulling image x:1".into()),
            },
            json!({"event": "PipelineRunning", "pipeline": "a", "index": 1, "total": 2,
                   "message": "pulling image x:1"}),
        ),
        (
            Change::Written {
                destination: "d".into(),
                commit: "abc".into(),
            },
            json!({"event": "Written", "destination": "d", "commit": "abc"}),
        ),
        (Change::Settled, json!({"event": "Settled"})),
    ];
    for (change, want) in cases {
        assert_eq!(serde_json::to_value(&change).expect("serializable"), want);
    }
}
