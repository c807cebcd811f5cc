//! The next step's table, retry backoff and wake-up times.

use crate::controllers::workflow::decide::tests::*;

fn next_step_cases() -> Vec<Case> {
    let mut cases = super::next_step_order::cases();
    cases.extend(super::next_step_retries::cases());
    cases
}

#[test]
fn next_step_table() {
    let mut failures = Vec::new();
    for case in next_step_cases() {
        let pipelines = names(case.pipelines);
        let observed = Observed {
            action: case.action,
            pipelines: &pipelines,
            hash: case.hash,
            runs: &case.runs,
            manual_reconcile: case.manual,
            resumed_run: case.resumed,
            retry_failures: case.retry,
            now_ms: case.now,
        };
        let got = next_step(&observed);
        if got != case.expected {
            failures.push(format!(
                "{}: expected {:?}, got {:?}",
                case.name, case.expected, got
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} case(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn retry_backoff_doubles_up_to_five_minutes() {
    let cases = [
        (0, 5_000),
        (1, 5_000),
        (2, 10_000),
        (3, 20_000),
        (4, 40_000),
        (5, 80_000),
        (6, 160_000),
        (7, 300_000),
        (8, 300_000),
        (64, 300_000),
        (u32::MAX, 300_000),
    ];
    for (attempts, expected) in cases {
        assert_eq!(retry_backoff_ms(attempts), expected, "attempts {attempts}");
    }
}

#[test]
fn wake_at_is_the_retry_or_resume_time() {
    let cases = [
        (Step::Wait, None),
        (Step::NothingToRun, None),
        (start(0, StartReason::FirstRun), None),
        (
            Step::Completed {
                last_run_sequence: 1,
            },
            None,
        ),
        (
            Step::Failed {
                index: 0,
                pipeline: "a".into(),
                attempts: 1,
                retry_at_ms: Some(42),
            },
            Some(42),
        ),
        (
            Step::Suspended {
                index: 0,
                retry_at_ms: Some(7),
                message: String::new(),
            },
            Some(7),
        ),
        (
            Step::Suspended {
                index: 0,
                retry_at_ms: None,
                message: String::new(),
            },
            None,
        ),
    ];
    for (step, expected) in cases {
        assert_eq!(step.wake_at_ms(), expected, "{step:?}");
    }
}
