//! Runs are numbered within their pipeline's stage of an attempt, so that pruning older runs
//! forgets neither how often a pipeline ran nor how long its retries wait.

use crate::api::Action;

use crate::controllers::workflow::decide::tests::*;

fn numbered(run: RunRecord, attempt: u32) -> RunRecord {
    RunRecord { attempt, ..run }
}

fn observed<'a>(pipelines: &'a [String], runs: &'a [RunRecord], now_ms: i64) -> Observed<'a> {
    Observed {
        action: Action::Configure,
        pipelines,
        hash: "h1",
        runs,
        manual_reconcile: false,
        resumed_run: None,
        retry_failures: true,
        now_ms,
    }
}

#[test]
fn a_started_run_is_numbered_within_its_pipelines_stage() {
    let pipelines = names(&["a", "b"]);
    let late = T + 10_000_000;
    let cases: Vec<(&str, Vec<RunRecord>, u32)> = vec![
        ("first run", vec![], 1),
        ("next pipeline", vec![ok(1, "a", 0, "h1")], 1),
        (
            "retry of unnumbered runs: counted",
            vec![
                ok(1, "a", 0, "h1"),
                failed(2, "b", 1, "h1"),
                failed(3, "b", 1, "h1"),
            ],
            3,
        ),
        (
            "retry after pruning: the newest number goes on",
            vec![
                ok(1, "a", 0, "h1"),
                numbered(failed(8, "b", 1, "h1"), 6),
                numbered(failed(9, "b", 1, "h1"), 7),
            ],
            8,
        ),
        (
            "resume",
            vec![numbered(suspended(1, "a", 0, "h1", Some(1)), 4)],
            5,
        ),
        (
            "spec changed: a new attempt",
            vec![numbered(failed(1, "a", 0, "h0"), 4)],
            1,
        ),
    ];
    for (name, runs, want) in cases {
        let o = observed(&pipelines, &runs, late);
        let step = next_step(&o);
        assert!(matches!(step, Step::Start { .. }), "{name}: {step:?}");
        assert_eq!(run_attempt(&o, &step), want, "{name}");
    }
    let waiting = vec![running(1, "a", 0, "h1")];
    let o = observed(&pipelines, &waiting, late);
    assert_eq!(run_attempt(&o, &next_step(&o)), 0, "not a start");
}

#[test]
fn pruned_failures_still_count_towards_attempts_and_backoff() {
    let pipelines = names(&["a"]);
    // The five newest of eight failures in a row: the backoff is the eighth's (5 min cap).
    let kept: Vec<RunRecord> = (4..=8)
        .map(|n| numbered(failed(i64::from(n), "a", 0, "h1"), n))
        .collect();
    let o = observed(&pipelines, &kept, T);
    assert_eq!(
        next_step(&o),
        Step::Failed {
            index: 0,
            pipeline: "a".into(),
            attempts: 8,
            retry_at_ms: Some(completed_at(8) + RETRY_BACKOFF_MAX_MS),
        }
    );
    let statuses = pipeline_statuses(Action::Configure, &pipelines, &kept, "h1", true);
    assert_eq!(statuses[0].attempts, 8);
    assert_eq!(
        statuses[0].next_retry_at_ms,
        Some(completed_at(8) + RETRY_BACKOFF_MAX_MS)
    );
    // A success between the failures ends the count, whatever the numbers say.
    let resumed = vec![
        numbered(suspended(6, "a", 0, "h1", Some(1)), 6),
        numbered(failed(7, "a", 0, "h1"), 7),
        numbered(failed(8, "a", 0, "h1"), 8),
    ];
    let o = observed(&pipelines, &resumed, T);
    assert!(
        matches!(next_step(&o), Step::Failed { attempts: 2, .. }),
        "{:?}",
        next_step(&o)
    );
}
