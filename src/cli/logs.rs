//! `logs`: the output of an object's pipeline runs, oldest first.

use crate::api::{labels, KindInfo, Object, GROUP, SYSTEM_NAMESPACE};
use crate::platform::Platform;
use crate::store::Selector;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Platform(#[from] crate::platform::Error),
    #[error("reading pipeline runs")]
    Store(#[source] crate::store::Error),
    /// The object has no runs (or none of the named pipeline).
    #[error("{what} has no pipeline runs{pipeline}")]
    NoRuns { what: String, pipeline: String },
}

/// Selector and namespace of the runs of an object: promise workflows run in the system namespace.
pub(crate) fn runs_selector(kind: &KindInfo, name: &str) -> (String, Vec<(String, String)>) {
    if kind.group == GROUP && kind.kind == "Promise" {
        (
            SYSTEM_NAMESPACE.to_string(),
            vec![
                (labels::PROMISE_NAME.into(), name.into()),
                (labels::WORKFLOW_TYPE.into(), "promise".into()),
            ],
        )
    } else {
        (
            String::new(),
            vec![
                (labels::RESOURCE_NAME.into(), name.into()),
                (labels::WORKFLOW_TYPE.into(), "resource".into()),
            ],
        )
    }
}

pub(crate) async fn run(
    platform: &Platform,
    kind_name: &str,
    name: &str,
    namespace: Option<&str>,
    pipeline: Option<&str>,
) -> Result<String, Error> {
    let kind = platform.resolve_kind(kind_name).await?;
    let runs = runs_of(platform, &kind, name, namespace, pipeline).await?;
    if runs.is_empty() {
        return Err(Error::NoRuns {
            what: format!("{} {name}", kind.kind),
            pipeline: pipeline
                .map(|p| format!(" of pipeline {p:?}"))
                .unwrap_or_default(),
        });
    }
    let mut out = String::new();
    for run in runs {
        let run_name = run.metadata.name.clone().unwrap_or_default();
        let phase = run
            .data
            .pointer("/status/phase")
            .and_then(serde_json::Value::as_str)
            .unwrap_or(crate::api::words::phases::PENDING);
        out.push_str(&format!("=== {run_name} ({phase})\n"));
        let path = platform.logs_path(&run);
        match std::fs::read_to_string(&path) {
            Ok(text) => out.push_str(&text),
            Err(_) => out.push_str("(no output yet)\n"),
        }
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    Ok(out)
}

/// The pipeline runs of an object (of one pipeline when given), oldest first.
pub(crate) async fn runs_of(
    platform: &Platform,
    kind: &KindInfo,
    name: &str,
    namespace: Option<&str>,
    pipeline: Option<&str>,
) -> Result<Vec<Object>, Error> {
    let (ns, mut selector) = runs_selector(kind, name);
    let ns = if ns.is_empty() {
        namespace.unwrap_or("default").to_string()
    } else {
        ns
    };
    if let Some(p) = pipeline {
        selector.push((labels::PIPELINE_NAME.into(), p.into()));
    }
    let sel = Selector::from_labels(selector.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let mut runs: Vec<Object> = platform
        .store
        .list(
            &crate::platform::builtin(crate::api::Builtin::PipelineRun),
            Some(&ns),
            &sel,
        )
        .await
        .map_err(Error::Store)?;
    if kind.group != GROUP {
        let promises = platform.promises().await?;
        let promise_of_kind = crate::platform::promise_defining(&promises, kind)
            .and_then(|p| p.metadata.name.clone())
            .unwrap_or_default();
        runs.retain(|r| {
            crate::api::object::label(r, labels::PROMISE_NAME).is_some_and(|p| p == promise_of_kind)
        });
    }
    runs.sort_by_key(|r| {
        r.data
            .pointer("/spec/sequence")
            .and_then(serde_json::Value::as_i64)
            .unwrap_or_default()
    });
    Ok(runs)
}
