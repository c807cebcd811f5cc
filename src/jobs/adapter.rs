//! `kratix-rs pipeline-adapter reader|work-writer|status-writer`: Kratix's adapter containers,
//! and `hand-back`, the one adapter of a lean pod that does what the work-writer and the
//! status-writer do, run by the same binary as the controller so one image serves both. They make the local
//! executor's checks (the same functions) inside the pod, and hand what passed back to the
//! controller (see [`super::handback`]).

use std::path::PathBuf;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::PostParams;
use kube::{Api, Client};
use statestores::error_chain::ErrorChain;

use super::handback::{self, Bundle, Part};
use super::identity::{self, Identity};
use super::job::{
    INPUT_DIR, JOB_NAMESPACE_ENV, JOB_NAME_ENV, JOB_UID_ENV, METADATA_DIR, OUTPUT_DIR,
};
use crate::api::Action;
use crate::pipeline::{check_folders, metadata, output, STATUS_WRITER, WORK_WRITER};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Step {
    /// Writes the object the workflow runs for to `/kratix/input/object.yaml`.
    Reader,
    /// Checks the output folder and the destination selectors, and hands the output back.
    WorkWriter,
    /// Checks the metadata folder and hands it back.
    StatusWriter,
    /// The work-writer's checks (configure workflows) and the status-writer's, then hands both
    /// back.
    HandBack,
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A variable the Job sets is missing: not run from a pipeline Job.
    #[error("{0} is not set: pipeline-adapter runs inside a pipeline Job")]
    MissingVar(&'static str),
    #[error("{ACTION_ENV}={0:?} is not one of configure, delete")]
    BadAction(String),
    #[error("cannot reach the Kubernetes API")]
    Client(#[source] kube::Error),
    #[error("cannot read ConfigMap {name}")]
    ReadInput {
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("ConfigMap {name} has no {key}")]
    EmptyInput { name: String, key: &'static str },
    #[error("cannot write {path}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The check refused what the pipeline wrote: the message is the check's, as locally.
    #[error("{0}")]
    Refused(String),
    /// One of the checks of `hand-back` refused: named after the Kratix container that makes
    /// it, so that the run fails naming the same container as with Kratix's pod shape.
    #[error("{container}: {reason}")]
    RefusedBy {
        container: &'static str,
        reason: String,
    },
    #[error(transparent)]
    Limits(output::Error),
    #[error(transparent)]
    Identity(#[from] identity::Error),
    #[error(transparent)]
    HandBack(#[from] handback::Error),
    #[error("cannot hand back {name}")]
    Create {
        name: String,
        #[source]
        source: kube::Error,
    },
}

fn var(name: &'static str) -> Result<String, Error> {
    std::env::var(name).map_err(|_| Error::MissingVar(name))
}

fn dir(env: &str, default: &str) -> PathBuf {
    std::env::var_os(env)
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from(default), PathBuf::from)
}

/// The pod's view of its Job.
struct Pod {
    job: String,
    namespace: String,
    uid: String,
    client: Client,
}

impl Pod {
    async fn connect() -> Result<Self, Error> {
        // The TLS of the API client needs a process-wide crypto provider; failing means one is
        // installed already, which is as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
        Ok(Pod {
            job: var(JOB_NAME_ENV)?,
            namespace: var(JOB_NAMESPACE_ENV)?,
            uid: var(JOB_UID_ENV)?,
            client: Client::try_default().await.map_err(Error::Client)?,
        })
    }

    async fn hand_back(&self, bundle: &Bundle, part: Part) -> Result<(), Error> {
        let env: Vec<(String, String)> = std::env::vars().collect();
        let labels = Identity::from_env(&self.job, &env)?.run_labels();
        let owner = (!self.uid.is_empty()).then(|| handback::job_owner(&self.job, &self.uid));
        let maps: Api<ConfigMap> = Api::namespaced(self.client.clone(), &self.namespace);
        for cm in handback::encode(bundle, part, &self.job, &self.namespace, owner, &labels)? {
            let name = cm.metadata.name.clone().unwrap_or_default();
            maps.create(&PostParams::default(), &cm)
                .await
                .map_err(|source| Error::Create { name, source })?;
        }
        Ok(())
    }
}

pub(crate) async fn run(step: Step) -> Result<(), Error> {
    let input = dir("KRATIX_INPUT_DIR", INPUT_DIR);
    let output_dir = dir("KRATIX_OUTPUT_DIR", OUTPUT_DIR);
    let metadata_dir = dir("KRATIX_METADATA_DIR", METADATA_DIR);
    match step {
        Step::Reader => {
            let pod = Pod::connect().await?;
            let name = handback::input_name(&pod.job);
            let maps: Api<ConfigMap> = Api::namespaced(pod.client.clone(), &pod.namespace);
            let cm = maps.get(&name).await.map_err(|source| Error::ReadInput {
                name: name.clone(),
                source,
            })?;
            let text = cm
                .data
                .and_then(|mut d| d.remove(handback::OBJECT_KEY))
                .ok_or(Error::EmptyInput {
                    name,
                    key: handback::OBJECT_KEY,
                })?;
            let path = input.join(handback::OBJECT_KEY);
            std::fs::write(&path, text).map_err(|source| Error::Write { path, source })
        }
        Step::WorkWriter => {
            let limits = output::Limits::from_env().map_err(Error::Limits)?;
            let checked = match check_folders(&output_dir, &metadata_dir, limits) {
                Ok((out, _)) => out,
                Err(refused) if refused.container == WORK_WRITER => {
                    return Err(Error::Refused(refused.reason))
                }
                // The status-writer's to report; the output itself passed.
                Err(_) => output::read_output(&output_dir, limits)
                    .map_err(|e| Error::Refused(ErrorChain(&e).to_string()))?,
            };
            let pod = Pod::connect().await?;
            pod.hand_back(&Bundle::new(&checked.files, &checked.dirs), Part::Output)
                .await
        }
        Step::StatusWriter => {
            let files = metadata_files(&metadata_dir).map_err(Error::Refused)?;
            let pod = Pod::connect().await?;
            pod.hand_back(&Bundle::new(&files, &[]), Part::Metadata)
                .await
        }
        Step::HandBack => {
            let action: Action = {
                let text = var(ACTION_ENV)?;
                text.parse().map_err(|_| Error::BadAction(text))?
            };
            let output = match action {
                Action::Configure => {
                    let limits = output::Limits::from_env().map_err(Error::Limits)?;
                    let (out, _) =
                        check_folders(&output_dir, &metadata_dir, limits).map_err(|refused| {
                            Error::RefusedBy {
                                container: refused.container,
                                reason: refused.reason,
                            }
                        })?;
                    Some(Bundle::new(&out.files, &out.dirs))
                }
                // Delete workflows have no work-writer: their output goes nowhere.
                Action::Delete => None,
            };
            let files = metadata_files(&metadata_dir).map_err(|reason| Error::RefusedBy {
                container: STATUS_WRITER,
                reason,
            })?;
            let pod = Pod::connect().await?;
            if let Some(output) = output {
                pod.hand_back(&output, Part::Output).await?;
            }
            pod.hand_back(&Bundle::new(&files, &[]), Part::Metadata)
                .await
        }
    }
}

/// The run's action, which tells `hand-back` whether there is an output to hand back.
const ACTION_ENV: &str = "KRATIX_WORKFLOW_ACTION";

/// The status-writer's check of the metadata folder, and the files it hands back; the refusal
/// is the check's message.
fn metadata_files(metadata_dir: &std::path::Path) -> Result<Vec<(String, Vec<u8>)>, String> {
    metadata::read_metadata(metadata_dir).map_err(|e| ErrorChain(&e).to_string())?;
    let mut files = Vec::new();
    for file in [
        metadata::STATUS_FILE,
        metadata::DESTINATION_SELECTORS_FILE,
        metadata::WORKFLOW_CONTROL_FILE,
    ] {
        if let Some(text) =
            metadata::read_optional(metadata_dir, file).map_err(|e| ErrorChain(&e).to_string())?
        {
            files.push((file.to_string(), text.into_bytes()));
        }
    }
    Ok(files)
}
