//! The Prometheus text format (version 0.0.4) of [`Metrics`].

use std::sync::atomic::Ordering;

use super::{locked, Metrics};

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n"));
}

/// A family of one sample without labels, named once for both.
fn sample(out: &mut String, name: &str, kind: &str, help: &str, value: impl std::fmt::Display) {
    family(out, name, kind, help);
    out.push_str(&format!("{name} {value}\n"));
}

pub(super) fn render(m: &Metrics) -> String {
    let mut out = String::new();
    let counts = m.snapshot();
    family(
        &mut out,
        "kratix_reconcile_total",
        "counter",
        "Reconciles by controller.",
    );
    for (controller, c) in &counts {
        out.push_str(&format!(
            "kratix_reconcile_total{{controller=\"{controller}\"}} {}\n",
            c.total
        ));
    }
    family(
        &mut out,
        "kratix_reconcile_errors_total",
        "counter",
        "Reconciles that failed, by controller.",
    );
    for (controller, c) in &counts {
        out.push_str(&format!(
            "kratix_reconcile_errors_total{{controller=\"{controller}\"}} {}\n",
            c.errors
        ));
    }

    let runs = locked(&m.runs).clone();
    family(
        &mut out,
        "kratix_pipeline_runs_total",
        "counter",
        "Pipeline runs that ended, by workflow type, action and result.",
    );
    let run_labels = |l: &super::RunLabels| {
        format!(
            "workflow_type=\"{}\",action=\"{}\",result=\"{}\"",
            l.workflow_type, l.action, l.result
        )
    };
    for (labels, h) in &runs {
        out.push_str(&format!(
            "kratix_pipeline_runs_total{{{}}} {}\n",
            run_labels(labels),
            h.count()
        ));
    }
    family(
        &mut out,
        "kratix_pipeline_run_duration_seconds",
        "histogram",
        "How long pipeline runs took, by workflow type, action and result.",
    );
    for (labels, h) in &runs {
        h.render(
            "kratix_pipeline_run_duration_seconds",
            &run_labels(labels),
            &mut out,
        );
    }

    sample(
        &mut out,
        "kratix_queue_depth",
        "gauge",
        "Objects waiting in the controllers' queue.",
        m.queue_depth.load(Ordering::Relaxed),
    );

    family(
        &mut out,
        "kratix_pipeline_end_to_commit_seconds",
        "histogram",
        "From a pipeline storing its Work to that Work written to a Destination's state store (once per Destination).",
    );
    locked(&m.end_to_commit).render("kratix_pipeline_end_to_commit_seconds", "", &mut out);

    family(
        &mut out,
        "kratix_state_store_writes_total",
        "counter",
        "Writes of a Work's placements to a state store, by store kind and result (changed, unchanged: a no-op, failed).",
    );
    for ((store, result), n) in locked(&m.writes).iter() {
        out.push_str(&format!(
            "kratix_state_store_writes_total{{store=\"{store}\",result=\"{}\"}} {n}\n",
            result.label()
        ));
    }
    family(
        &mut out,
        "kratix_git_commits_per_push",
        "histogram",
        "Commits published by one push to a Git state store.",
    );
    locked(&m.commits_per_push).render("kratix_git_commits_per_push", "", &mut out);
    sample(
        &mut out,
        "kratix_git_push_conflicts_total",
        "counter",
        "Pushes refused because the branch had moved (the commits are re-applied on its tip).",
        m.push_conflicts.load(Ordering::Relaxed),
    );
    sample(
        &mut out,
        "kratix_git_push_retries_total",
        "counter",
        "Pushes made again after waiting, the branch having moved under a freshly fetched tip.",
        m.push_retries.load(Ordering::Relaxed),
    );
    out
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use statestores::PushEvents;

    use super::super::{RunLabels, WorkRef, WriteResult};
    use super::*;

    /// Every sample line is `name{labels} value` with a number for value, and every family
    /// is declared before its samples.
    fn check_format(text: &str) {
        let mut declared = Vec::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                declared.push(rest.split(' ').next().unwrap_or_default().to_string());
                continue;
            }
            if line.starts_with("# HELP ") {
                continue;
            }
            let (series, value) = line.rsplit_once(' ').expect("name and value");
            assert!(value.parse::<f64>().is_ok(), "{line}");
            let name = series.split('{').next().unwrap_or_default();
            assert!(
                declared.iter().any(|d| name == d
                    || ["_bucket", "_sum", "_count"]
                        .iter()
                        .any(|s| name.strip_suffix(s) == Some(d))),
                "{line} before its family"
            );
        }
    }

    /// What happens before a render.
    type Act = Box<dyn Fn(&Metrics)>;

    #[test]
    fn every_family_is_rendered_with_its_samples() {
        let m = Metrics::default();
        let cases: Vec<(&str, Act, &str)> = vec![
            ("nothing yet", Box::new(|_| {}), "kratix_queue_depth 0"),
            (
                "a reconcile",
                Box::new(|m| m.record(crate::api::GROUP, "Work", true)),
                "kratix_reconcile_total{controller=\"work\"} 1",
            ),
            (
                "a run",
                Box::new(|m| {
                    m.run_finished(
                        RunLabels::of("resource", "configure", true),
                        Duration::from_millis(700),
                    )
                }),
                "kratix_pipeline_run_duration_seconds_bucket{workflow_type=\"resource\",action=\"configure\",result=\"succeeded\",le=\"1\"} 1",
            ),
            (
                "its count",
                Box::new(|_| {}),
                "kratix_pipeline_runs_total{workflow_type=\"resource\",action=\"configure\",result=\"succeeded\"} 1",
            ),
            (
                "the queue",
                Box::new(|m| m.set_queue_depth(7)),
                "kratix_queue_depth 7",
            ),
            (
                "a write after a pipeline",
                Box::new(|m| {
                    let work = WorkRef {
                        namespace: "default".into(),
                        promise: "p".into(),
                        resource: String::new(),
                        pipeline: "main".into(),
                    };
                    m.pipeline_ended(work.clone());
                    m.placement_written("git", &work, "dev", WriteResult::Unchanged);
                }),
                "kratix_pipeline_end_to_commit_seconds_count 1",
            ),
            (
                "the write's result",
                Box::new(|_| {}),
                "kratix_state_store_writes_total{store=\"git\",result=\"unchanged\"} 1",
            ),
            (
                "a push",
                Box::new(|m| m.pushed(3)),
                "kratix_git_commits_per_push_bucket{le=\"2\"} 0",
            ),
            (
                "its commits",
                Box::new(|_| {}),
                "kratix_git_commits_per_push_sum 3",
            ),
            (
                "a conflict and a retry",
                Box::new(|m| {
                    m.conflict();
                    m.conflict();
                    m.retry();
                }),
                "kratix_git_push_conflicts_total 2",
            ),
            ("the retry", Box::new(|_| {}), "kratix_git_push_retries_total 1"),
        ];
        for (name, act, want) in cases {
            act(&m);
            let text = m.render();
            check_format(&text);
            assert!(
                text.lines().any(|l| l == want),
                "{name}: {want} missing in\n{text}"
            );
        }
    }
}
