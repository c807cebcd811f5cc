//! Why a pipeline run could not be carried out. Not a pipeline's own failure (a container that
//! exits non-zero is recorded on the run): these are the controller's, and fail the run too.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The stored run does not parse as a PipelineRun.
    #[error("stored run is invalid")]
    StoredRun(#[source] serde_json::Error),
    /// The run's stored pipeline does not parse.
    #[error("stored pipeline is invalid")]
    StoredPipeline(#[source] serde_json::Error),
    #[error("Promise {0:?} not found")]
    PromiseNotFound(String),
    /// The stored Promise does not parse.
    #[error("Promise {name:?} is invalid")]
    InvalidPromise {
        name: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("Promise {0:?} defines no request kind")]
    NoRequestKind(String),
    /// The request the run is for is gone.
    #[error("{kind} {namespace}/{name} not found")]
    RequestNotFound {
        kind: String,
        namespace: String,
        name: String,
    },
    /// The object could not be written out for the pipeline to read.
    #[error("cannot write the object as YAML")]
    ObjectYaml(#[source] serde_yaml::Error),
    #[error("clearing {}", path.display())]
    ClearDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("creating {}", path.display())]
    CreateDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The task preparing the run's folder ended without an answer (it panicked).
    #[error("preparing the run's folder")]
    FolderTask(#[source] tokio::task::JoinError),
    #[error(transparent)]
    Executor(#[from] crate::pipeline::container::setting::Error),
    #[error(transparent)]
    Images(#[from] crate::pipeline::images::Error),
    /// The containers could not be run (not that they failed).
    #[error(transparent)]
    Pipeline(#[from] crate::pipeline::Error),
    /// The pipeline's output does not make Works.
    #[error(transparent)]
    Works(#[from] crate::controllers::work::from_output::Error),
    /// The run's Work could not be written this time.
    #[error(transparent)]
    Work(#[from] crate::controllers::work::Refusal),
}
