//! Executor tests: real shell scripts, in the bubblewrap sandbox and as plain processes.

use std::path::Path;

use super::*;
use crate::api::pipeline::{Container, EnvVar, PipelineMetadata, PipelineSpec};
use crate::api::Action;
use statestores::error_chain::ErrorChain;

const MODES: [Isolation; 2] = [Isolation::Sandbox, Isolation::Process];

fn script(name: &str, script: &str) -> Container {
    Container {
        name: name.into(),
        image: "acme/shell:v1".into(),
        command: Some(vec!["sh".into(), "-c".into()]),
        args: Some(vec![script.into()]),
        ..Container::default()
    }
}

fn request(work_dir: &Path, isolation: Isolation, containers: Vec<Container>) -> RunRequest {
    RunRequest {
        run_name: "test-run".into(),
        pipeline: Pipeline {
            api_version: crate::api::API_VERSION.into(),
            kind: "Pipeline".into(),
            metadata: PipelineMetadata {
                name: "instance".into(),
                ..PipelineMetadata::default()
            },
            spec: PipelineSpec {
                containers,
                ..PipelineSpec::default()
            },
        },
        object_yaml: "apiVersion: example.com/v1\nkind: Database\nmetadata:\n  name: mydb\n".into(),
        env: kratix_env(&WorkflowEnv {
            action: Action::Configure,
            promise_name: "database".into(),
            promise_version: "v1.2.0".into(),
            pipeline_name: "instance".into(),
            subject: Subject::Resource(ResourceObject {
                kind: "Database".into(),
                group: "example.com".into(),
                version: "v1".into(),
                plural: "databases".into(),
                name: "mydb".into(),
                namespace: "default".into(),
                cluster_scoped: false,
            }),
            dry_run: false,
        }),
        work_dir: work_dir.to_path_buf(),
        timeout: Duration::from_secs(120),
        images: ImageMap::default(),
        isolation,
        hidden: Vec::new(),
        progress: Default::default(),
        executor: crate::pipeline::ExecutorSetting::Process,
        registries: Vec::new(),
    }
}

async fn run_in(
    isolation: Isolation,
    containers: Vec<Container>,
) -> (tempfile::TempDir, RunOutcome) {
    let dir = tempfile::tempdir().expect("tempdir");
    let outcome = run(request(dir.path(), isolation, containers))
        .await
        .unwrap_or_else(|e| panic!("{isolation:?}: {}", ErrorChain(&e)));
    assert_eq!(outcome.isolation_used, isolation);
    (dir, outcome)
}

fn file<'a>(outcome: &'a RunOutcome, path: &str) -> &'a str {
    let output = outcome.output.as_ref().expect("output on success");
    let (_, bytes) = output
        .files
        .iter()
        .find(|(p, _)| p == path)
        .unwrap_or_else(|| panic!("no {path} in {:?}", output.files));
    std::str::from_utf8(bytes).expect("utf-8")
}

fn assert_failed(outcome: &RunOutcome, container: &str, exit_code: Option<i32>, reason_has: &str) {
    match &outcome.result {
        RunResult::Failed {
            container: c,
            exit_code: code,
            reason,
        } => {
            assert_eq!(c, container, "{reason}");
            assert_eq!(*code, exit_code, "{reason}");
            assert!(
                reason.contains(reason_has),
                "reason {reason:?} lacks {reason_has:?}"
            );
            assert!(
                outcome.logs.contains(reason.as_str()),
                "logs: {}",
                outcome.logs
            );
        }
        other => panic!(
            "expected failure of {container}, got {other:?}\n{}",
            outcome.logs
        ),
    }
    assert_eq!(outcome.output, None);
}

mod contract;
mod runs;
