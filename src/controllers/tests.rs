use super::*;
use crate::metrics::ErrorCategory;

#[test]
fn each_failure_falls_in_one_bounded_category() {
    let key = ObjectKey::new(crate::api::GROUP, "Promise", None, "p");
    let json = || serde_json::from_str::<serde_json::Value>("{").expect_err("not JSON");
    let cases = [
        (
            Error::Store(store::Error::Conflict {
                key: key.clone(),
                expected: "3".into(),
            }),
            ErrorCategory::ControlPlane,
        ),
        (
            Error::Malformed {
                key: key.clone(),
                kind: "Promise".into(),
                source: json(),
            },
            ErrorCategory::InvalidObject,
        ),
        (
            Error::Destination(destination::error::Error::InvalidPath {
                key: key.clone(),
                source: statestores::KeyError::Invalid {
                    path: "../x".into(),
                    reason: "leaves the store",
                },
            }),
            ErrorCategory::InvalidObject,
        ),
        (
            Error::Workflow(workflow::error::Error::EncodeRun {
                run: "r".into(),
                what: "its status",
                source: json(),
            }),
            ErrorCategory::PipelineRun,
        ),
        (
            Error::Promise(promise::error::Error::InvalidWorkflows {
                key: key.clone(),
                source: crate::api::pipeline::Error::Invalid {
                    path: "spec.workflows.promise.configure[0]".into(),
                    reason: "no containers".into(),
                },
            }),
            ErrorCategory::InvalidObject,
        ),
        (
            Error::Run(run::error::Error::not_carried_out(
                "r",
                run::failure::Error::PromiseNotFound("p".into()),
            )),
            ErrorCategory::PipelineRun,
        ),
        (
            Error::Work(work::error::Error::Refused {
                name: "w".into(),
                source: work::Refusal::StillDeleting {
                    namespace: "default".into(),
                    name: "w".into(),
                },
            }),
            ErrorCategory::PipelineRun,
        ),
        (
            Error::Sweep(crate::pipeline::Error::Sweep {
                owner: "default/t".into(),
                source: "gone".into(),
            }),
            ErrorCategory::Executor,
        ),
    ];
    for (err, want) in cases {
        assert_eq!(err.category(), want, "{err}");
    }
}
