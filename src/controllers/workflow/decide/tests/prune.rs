//! Which runs of a workflow are pruned, and when.

use crate::api::Action;

use crate::controllers::workflow::decide::tests::*;

#[test]
fn runs_to_prune_keep_the_newest_of_each_current_pipeline() {
    let many_b: Vec<RunRecord> = (1..=7).map(|seq| failed(seq, "b", 0, "h1")).collect();
    type Case = (
        &'static str,
        Action,
        &'static [&'static str],
        Vec<RunRecord>,
        usize,
        Vec<i64>,
    );
    let cases: Vec<Case> = vec![
        (
            "nothing to prune",
            Action::Configure,
            &["a"],
            vec![ok(1, "a", 0, "h1")],
            5,
            vec![],
        ),
        (
            "beyond the newest two of b",
            Action::Configure,
            &["b"],
            many_b.clone(),
            2,
            vec![1, 2, 3, 4, 5],
        ),
        (
            "a removed pipeline's runs all go",
            Action::Configure,
            &["a", "x"],
            vec![
                ok(1, "a", 0, "h1"),
                ok(2, "b", 1, "h1"),
                ok(3, "c", 2, "h1"),
                ok(4, "a", 0, "h2"),
            ],
            5,
            vec![2, 3],
        ),
        (
            "no pipelines left: every finished run goes",
            Action::Configure,
            &[],
            vec![ok(1, "a", 0, "h1"), ok(2, "b", 1, "h1")],
            5,
            vec![1, 2],
        ),
        (
            "an active run is never pruned, and counts towards the newest kept",
            Action::Configure,
            &["b"],
            vec![
                failed(1, "b", 0, "h1"),
                failed(2, "b", 0, "h1"),
                running(3, "b", 0, "h1"),
                pending(4, "x", 1, "h1"),
            ],
            1,
            vec![1, 2],
        ),
        (
            "runs of the other action are left alone",
            Action::Delete,
            &["bye"],
            vec![
                ok(1, "gone", 0, "h1"),
                ok(2, "old", 0, "h1").delete(),
                ok(3, "bye", 0, "h1").delete(),
            ],
            5,
            vec![2],
        ),
    ];
    for (name, action, pipelines, runs, keep, want) in cases {
        assert_eq!(
            runs_to_prune(action, &names(pipelines), &runs, keep),
            want,
            "{name}"
        );
    }
}

#[test]
fn runs_are_pruned_after_every_step_but_waiting() {
    let cases = [
        (Step::Wait, false),
        (Step::NothingToRun, true),
        (start(0, StartReason::Resume), true),
        (
            Step::Completed {
                last_run_sequence: 1,
            },
            true,
        ),
        (
            Step::Failed {
                index: 0,
                pipeline: "a".into(),
                attempts: 1,
                retry_at_ms: None,
            },
            true,
        ),
        (
            Step::Suspended {
                index: 0,
                retry_at_ms: None,
                message: String::new(),
            },
            true,
        ),
    ];
    for (step, want) in cases {
        assert_eq!(prunes_after(&step), want, "{step:?}");
    }
}

/// A pipeline that keeps suspending with `retryAfter` never has more than the kept number of
/// runs, however often it is resumed: each resume prunes with the new run counted.
#[test]
fn a_suspension_loop_keeps_at_most_the_kept_runs() {
    let pipelines = names(&["a"]);
    let mut runs: Vec<RunRecord> = Vec::new();
    for seq in 1..=12 {
        let mut with_new = runs.clone();
        with_new.push(pending(seq, "a", 0, "h1"));
        let doomed = runs_to_prune(Action::Configure, &pipelines, &with_new, 5);
        with_new.retain(|r| !doomed.contains(&r.sequence));
        assert!(with_new.len() <= 5, "after start {seq}: {with_new:?}");
        runs = with_new
            .into_iter()
            .map(|r| {
                if r.sequence == seq {
                    suspended(seq, "a", 0, "h1", Some(1))
                } else {
                    r
                }
            })
            .collect();
    }
    assert_eq!(
        runs.iter().map(|r| r.sequence).collect::<Vec<_>>(),
        [8, 9, 10, 11, 12]
    );
}
