use std::collections::BTreeMap;
use std::path::PathBuf;

use statestores::PushEvents;

use super::ends::work;
use super::*;
use crate::api::GROUP;

/// Metrics with a known value in every family and several series in the labelled ones, recorded
/// out of label order.
fn filled(m: Metrics) -> Metrics {
    m.record("example.com", "Redis", None);
    m.record(GROUP, "Work", None);
    m.record(GROUP, "Promise", Some(ErrorCategory::PipelineRun));
    m.record(GROUP, "Promise", None);
    m.record("other.org", "Database", Some(ErrorCategory::ControlPlane));
    m.record(GROUP, "Promise", Some(ErrorCategory::InvalidObject));
    m.record(GROUP, "GitStateStore", None);
    let configure = RunLabels::of("resource", "configure", true);
    m.run_finished(configure, Duration::from_millis(750));
    m.run_finished(configure, Duration::from_secs(2));
    m.run_finished(
        RunLabels::of("promise", "delete", false),
        Duration::from_secs(700),
    );
    m.set_queue_depth(7);
    let start = Instant::now();
    let at = |ms: u64| start + Duration::from_millis(ms);
    m.pipeline_ended_at(work("main"), at(0));
    let writes = [
        ("git", "dev", WriteResult::Failed, 100),
        ("git", "dev", WriteResult::Changed, 500),
        ("git", "dev", WriteResult::Unchanged, 900),
        ("bucket", "prod", WriteResult::Unchanged, 4_000),
    ];
    for (store, destination, result, ms) in writes {
        m.placement_written_at(store, &work("main"), destination, result, at(ms));
    }
    m.pushed(1);
    m.pushed(3);
    m.conflict();
    m.conflict();
    m.retry();
    m.synced(SyncOutcome::Waiting, 1);
    m.synced(SyncOutcome::Applied, 2);
    m.set_leader(true);
    m
}

/// `/metrics` as a whole, compared with `fixtures/metrics/metrics.txt`; `KRATIX_BLESS=1` rewrites
/// the file after a deliberate change.
#[test]
fn the_whole_text_matches_the_golden_file() {
    let got = filled(Metrics::with_leader()).render().expect("rendered");
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/metrics/metrics.txt");
    if std::env::var_os("KRATIX_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().expect("a folder")).expect("fixtures/metrics");
        std::fs::write(&path, &got).expect("golden file written");
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (KRATIX_BLESS=1 writes it)", path.display()));
    assert_eq!(
        got,
        want,
        "{} differs (KRATIX_BLESS=1 rewrites it)",
        path.display()
    );
    // The same counts render the same text: series come out in label order.
    assert_eq!(
        filled(Metrics::with_leader()).render().expect("rendered"),
        got
    );
}

/// The families of docs/metrics.md's table: name, type and label names.
fn documented() -> BTreeMap<String, (String, Vec<String>)> {
    let doc = include_str!("../../docs/metrics.md");
    let mut out = BTreeMap::new();
    let mut above = Vec::new();
    for row in doc.lines().filter(|l| l.starts_with("| `kratix_")) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let (name, kind, labels) = (cells[1], cells[2], cells[3]);
        let labels: Vec<String> = if labels == "as above" {
            above.clone()
        } else {
            labels
                .split(',')
                .map(|l| l.trim().trim_matches('`').to_string())
                .filter(|l| !l.is_empty())
                .collect()
        };
        above = labels.clone();
        out.insert(
            name.trim_matches('`').to_string(),
            (kind.to_string(), labels),
        );
    }
    out
}

/// The families of a rendered text, as [`documented`] has them.
fn rendered(text: &str) -> BTreeMap<String, (String, Vec<String>)> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("name and type");
            out.insert(name.to_string(), (kind.to_string(), vec![]));
        }
    }
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let (series, _) = line.rsplit_once(' ').expect("series and value");
        let (name, labels) = series.split_once('{').unwrap_or((series, ""));
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| name.strip_suffix(s).filter(|f| out.contains_key(*f)))
            .unwrap_or(name);
        let (_, names) = out
            .get_mut(family)
            .unwrap_or_else(|| panic!("{line} comes before its family"));
        *names = labels
            .trim_end_matches('}')
            .split(',')
            .filter_map(|l| l.split_once('=').map(|(k, _)| k.to_string()))
            .filter(|k| k != "le")
            .collect();
    }
    out
}

#[test]
fn the_families_are_those_docs_metrics_md_lists() {
    let text = filled(Metrics::with_leader()).render().expect("rendered");
    assert_eq!(rendered(&text), documented());
    // `serve` has no leader.
    let text = filled(Metrics::default()).render().expect("rendered");
    let mut want = documented();
    want.remove("kratix_leader");
    assert_eq!(rendered(&text), want);
}

#[test]
fn label_values_are_fixed_never_object_names() {
    let text = filled(Metrics::with_leader()).render().expect("rendered");
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        for name in ["redis", "r1", "main", "dev", "prod", "default", "Redis"] {
            assert!(!line.contains(&format!("\"{name}\"")), "{name} in {line}");
        }
    }
}
