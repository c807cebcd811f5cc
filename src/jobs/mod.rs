//! Runs pipelines as Kubernetes Jobs shaped like Kratix's: the [`Executor`] of the Kubernetes
//! runtime (see docs/architecture.md).
//!
//! The objects are built by pure functions ([`job`], [`rbac`], [`handback`]); [`KubeJobs`]
//! creates them, waits for the Job, and reads back what the adapters handed back, so that a run
//! ends in the same [`RunOutcome`] as with the local executor and the controllers stay the same.

pub(crate) mod adapter;
mod granted;
pub(crate) mod handback;
pub(crate) mod history;
pub mod identity;
pub mod job;
pub(crate) mod leftovers;
mod prune;
pub mod rbac;
pub(crate) mod rights;
mod rights_api;
mod rundir;
pub(crate) mod settings;
pub mod spec;
pub(crate) mod status;
pub(crate) mod sweep;
mod wait;

use std::path::{Path, PathBuf};

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams, PropagationPolicy};
use kube::{Api, Client};
use md5::{Digest, Md5};
use statestores::error_chain::ErrorChain;

use crate::api::Action;
use crate::pipeline::{
    self, Executor, Isolation, Metadata, Output, Refused, RunOutcome, RunRequest, RunResult,
    LOGS_FILE,
};
use handback::Part;
use identity::Identity;

/// The field manager of the objects the executor applies.
const FIELD_MANAGER: &str = "kratix-rs";

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Identity(#[from] identity::Error),
    #[error(transparent)]
    Job(#[from] job::Error),
    #[error(transparent)]
    HandBack(#[from] handback::Error),
    #[error("{action} {what}")]
    Api {
        action: &'static str,
        what: String,
        #[source]
        source: kube::Error,
    },
    #[error("cannot watch Job {name}")]
    Watch {
        name: String,
        #[source]
        source: kube::runtime::wait::Error,
    },
    #[error("cannot write {path}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("a file handed back by the pod is not a plain relative name: {name:?}")]
    BadName { name: String },
    #[error("the Job {name} of an interrupted run is still there after its deletion")]
    LeftoverStays { name: String },
}

fn api_error(action: &'static str, what: impl Into<String>) -> impl FnOnce(kube::Error) -> Error {
    let what = what.into();
    move |source| Error::Api {
        action,
        what,
        source,
    }
}

/// The executor of the Kubernetes runtime.
#[derive(Clone)]
pub struct KubeJobs {
    config: kube::Config,
    client: Client,
    settings: job::Settings,
    /// The runs holding their version's rights (see [`rights`]).
    in_flight: rights::InFlight,
    /// Held shared while a run counts itself in and applies its rights, exclusively while a
    /// version's rights are judged unused and deleted: a run starting meanwhile applies them
    /// again after.
    rights_lock: std::sync::Arc<tokio::sync::RwLock<()>>,
    /// The rights applied lately, which the next runs need not apply again.
    granted: granted::Granted,
}

impl std::fmt::Debug for KubeJobs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeJobs")
            .field("cluster", &self.config.cluster_url.to_string())
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl KubeJobs {
    /// From a client configuration (kubeconfig or in-cluster).
    pub fn new(config: kube::Config, settings: job::Settings) -> Result<Self, Error> {
        let client = Client::try_from(config.clone())
            .map_err(api_error("connect to", config.cluster_url.to_string()))?;
        Ok(KubeJobs {
            config,
            client,
            settings,
            in_flight: rights::InFlight::default(),
            rights_lock: std::sync::Arc::default(),
            granted: granted::Granted::default(),
        })
    }

    /// Deletes the rights of the pipeline's other versions in `namespace` that no run uses any
    /// more (see [`rights`]). A failure is only logged: the next run's end tries again.
    async fn clean_rights(&self, identity: &Identity, namespace: &str) {
        let cleaning = rights_api::clean(
            &self.client,
            &self.in_flight,
            &self.rights_lock,
            &self.granted,
            identity,
            namespace,
        );
        if let Err(error) = cleaning.await {
            tracing::warn!(pipeline = %identity.pipeline_id(), %namespace, error = %ErrorChain(&error), "cannot clean up the rights of old versions");
        }
    }

    /// Reads back one part the adapters handed back, chunk by chunk.
    async fn hand_back(
        &self,
        maps: &Api<ConfigMap>,
        job: &str,
        part: Part,
        max_bytes: u64,
    ) -> Result<handback::Bundle, Error> {
        let get = |index| {
            let name = handback::chunk_name(job, part, index);
            async move {
                maps.get(&name)
                    .await
                    .map_err(api_error("read the hand-back", name))
            }
        };
        let first = get(0).await?;
        let count = handback::chunk_count(&first, part)?;
        let mut chunks = vec![first];
        for index in 1..count {
            chunks.push(get(index).await?);
        }
        Ok(handback::decode(&chunks, part, max_bytes)?)
    }

    /// Deletes the oldest finished Jobs of the pipeline beyond the number to keep. A failure is
    /// only logged: the run's outcome does not depend on it, and the next run prunes again.
    async fn prune(&self, jobs: &Api<Job>, identity: &Identity) {
        let selector = history::pipeline_selector(identity);
        let listed = match jobs.list(&ListParams::default().labels(&selector)).await {
            Ok(list) => list.items,
            Err(error) => {
                tracing::warn!(%selector, error = %ErrorChain(&error), "cannot list pipeline Jobs to prune");
                return;
            }
        };
        let finished: Vec<Job> = listed
            .into_iter()
            .filter(|j| status::finished(j).is_some())
            .collect();
        for name in history::to_prune(&finished, self.settings.jobs_to_keep) {
            if let Err(error) = delete_job(jobs, &name).await {
                tracing::warn!(job = %name, error = %ErrorChain(&error), "cannot prune a pipeline Job");
            }
        }
    }

    /// The input and every hand-back chunk of the Job that exists.
    async fn hand_back_names(&self, maps: &Api<ConfigMap>, job: &str) -> Vec<String> {
        let mut names = vec![handback::input_name(job)];
        for part in [Part::Output, Part::Metadata] {
            let first = handback::chunk_name(job, part, 0);
            if let Ok(Some(cm)) = maps.get_opt(&first).await {
                let count = handback::chunk_count(&cm, part).unwrap_or(1);
                names.extend((0..count).map(|i| handback::chunk_name(job, part, i)));
            }
        }
        names
    }

    /// Reads back what the adapters of a completed Job handed back into the run's folder, and
    /// checks it there as the local executor checks its folders: the pod's adapters made the
    /// same checks, but the controller does not take a pod's word for it.
    async fn collect(
        &self,
        maps: &Api<ConfigMap>,
        job: &str,
        action: Action,
        work_dir: &Path,
    ) -> Result<Result<(Output, Metadata), Refused>, Error> {
        let limits = self.settings.limits;
        let output_dir = work_dir.join("output");
        let metadata_dir = work_dir.join("metadata");
        let output = match action {
            Action::Configure => {
                self.hand_back(maps, job, Part::Output, limits.max_bytes)
                    .await?
            }
            // Delete pipelines have no work-writer: their output goes nowhere.
            Action::Delete => handback::Bundle::default(),
        };
        rundir::unpack(&output, Part::Output, &output_dir)?;
        let metadata = self
            .hand_back(maps, job, Part::Metadata, limits.max_bytes)
            .await?;
        rundir::unpack(&metadata, Part::Metadata, &metadata_dir)?;
        Ok(pipeline::check_folders_off_workers(&output_dir, &metadata_dir, limits).await)
    }

    async fn run_job(&self, req: &RunRequest, logs: &mut String) -> Result<RunOutcome, Error> {
        let identity = Identity::from_env(&req.run_name, &req.env)?;
        let namespace = identity.namespace(&self.settings.system_namespace);
        let suffix: String = uuid::Uuid::new_v4().simple().to_string()[..5].to_string();
        let name = job::job_name(&identity, &suffix);
        let hash = hex::encode(Md5::digest(req.object_yaml.as_bytes()));
        let settings = &self.settings;
        let request = job::JobRequest {
            identity: &identity,
            pipeline: &req.pipeline,
            kratix_env: &req.env,
            name: &name,
            hash: &hash,
            timeout: req.timeout,
            settings,
        };
        let job_object = job::job(&request)?;
        let pod_settings = spec::PodSettings::of(&req.pipeline).map_err(job::Error::from)?;
        let grants = rbac::grants(&identity, &pod_settings.rbac, &namespace);
        let labels = identity.job_labels(&hash);
        let order: Vec<String> = job_object
            .spec
            .as_ref()
            .and_then(|s| s.template.spec.as_ref())
            .map(|s| {
                s.init_containers
                    .iter()
                    .flatten()
                    .chain(&s.containers)
                    .map(|c| c.name.clone())
                    .collect()
            })
            .unwrap_or_default();

        let in_flight = {
            let _applying = self.rights_lock.read().await;
            let counted = self.in_flight.enter(&identity, &namespace);
            self.granted
                .ensure(&grants, || {
                    rights_api::grant(&self.client, &grants, &namespace)
                })
                .await?;
            counted
        };
        let jobs: Api<Job> = Api::namespaced(self.client.clone(), &namespace);
        let maps: Api<ConfigMap> = Api::namespaced(self.client.clone(), &namespace);
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &namespace);
        let input = handback::input_config_map(&name, &namespace, &labels, &req.object_yaml);
        leftovers::stop(&jobs, &identity).await?;
        // Noted before it exists, so that a crash right after creating it leaves nothing unknown.
        rundir::note_job(&req.work_dir, &namespace, &name)?;
        maps.create(&PostParams::default(), &input)
            .await
            .map_err(api_error("create", handback::input_name(&name)))?;
        let created = match jobs.create(&PostParams::default(), &job_object).await {
            Ok(created) => created,
            Err(source) => {
                let _ = maps
                    .delete(&handback::input_name(&name), &DeleteParams::default())
                    .await;
                return Err(Error::Api {
                    action: "create",
                    what: format!("Job {namespace}/{name}"),
                    source,
                });
            }
        };
        let uid = created.metadata.uid.clone().unwrap_or_default();
        let owner = serde_json::json!({"metadata": {"ownerReferences": [handback::job_owner(&name, &uid)]}});
        maps.patch(
            &handback::input_name(&name),
            &PatchParams::default(),
            &Patch::Merge(&owner),
        )
        .await
        .map_err(api_error("own", handback::input_name(&name)))?;

        let (finished, pod_list) = wait::job_finished(&jobs, &pods, &name, req.timeout).await?;
        *logs = wait::collect_logs(&pods, &pod_list, &order).await;

        let mut outcome = RunOutcome {
            result: RunResult::Succeeded,
            logs: String::new(),
            output: None,
            metadata: Metadata::default(),
            // A pod is isolated at least as well as the local sandbox.
            isolation_used: Isolation::Sandbox,
        };
        match finished {
            wait::Waited::Gone => {
                outcome.result = RunResult::Failed {
                    container: status::current_container(&pod_list, &order),
                    exit_code: None,
                    reason: format!(
                        "pipeline Job {namespace}/{name} was deleted before it finished"
                    ),
                };
            }
            wait::Waited::TimedOut => {
                outcome.result = RunResult::TimedOut {
                    container: status::current_container(&pod_list, &order),
                };
                delete_job(&jobs, &name).await?;
            }
            wait::Waited::Finished(status::Finished::Failed { reason }) => {
                outcome.result = status::failure(&pod_list, &order, &reason);
            }
            wait::Waited::Finished(status::Finished::Complete) => {
                match self
                    .collect(&maps, &name, identity.action, &req.work_dir)
                    .await?
                {
                    Ok((output, metadata)) => {
                        outcome.output = Some(output);
                        outcome.metadata = metadata;
                    }
                    Err(refused) => {
                        logs.push_str(&format!(
                            "== {} ==\n{}\n",
                            refused.container, refused.reason
                        ));
                        outcome.result = RunResult::Failed {
                            container: refused.container.to_string(),
                            exit_code: None,
                            reason: refused.reason,
                        };
                    }
                }
            }
        }
        self.prune(&jobs, &identity).await;
        drop(in_flight);
        self.clean_rights(&identity, &namespace).await;
        // The results are in the outcome now: the ConfigMaps go (they can be large), the Job
        // stays for inspection and takes whatever is left with it when it goes.
        for cm in self.hand_back_names(&maps, &name).await {
            let _ = maps.delete(&cm, &DeleteParams::default()).await;
        }
        if let RunResult::Failed { reason, .. } = &outcome.result {
            if !logs.ends_with(&format!("{reason}\n")) {
                logs.push_str(&format!("{reason}\n"));
            }
        }
        Ok(outcome)
    }
}

/// Deletes a Job and, through foreground propagation, its pods before the Job itself.
async fn delete_job(jobs: &Api<Job>, name: &str) -> Result<(), Error> {
    let params = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Foreground),
        ..DeleteParams::default()
    };
    match jobs.delete(name, &params).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(source) => Err(Error::Api {
            action: "delete",
            what: format!("Job {name}"),
            source,
        }),
    }
}

#[async_trait::async_trait]
impl Executor for KubeJobs {
    #[tracing::instrument(skip_all, fields(run = %req.run_name))]
    async fn run(&self, req: RunRequest) -> Result<RunOutcome, pipeline::Error> {
        let mut logs = String::new();
        let mut outcome =
            self.run_job(&req, &mut logs)
                .await
                .map_err(|e| pipeline::Error::Backend {
                    run: req.run_name.clone(),
                    source: Box::new(e),
                })?;
        outcome.logs = logs;
        let path = req.work_dir.join(LOGS_FILE);
        std::fs::write(&path, &outcome.logs)
            .map_err(|source| pipeline::Error::WriteFile { path, source })?;
        Ok(outcome)
    }

    /// Deletes the Job the interrupted run started (foreground: its pods go first). Nothing of
    /// it runs on this machine, so there are no process groups to report.
    /// Deletes everything labelled for `owner` (see [`sweep`]).
    async fn sweep(&self, owner: &pipeline::Owner) -> Result<(), pipeline::Error> {
        for step in sweep::plan(owner, &self.settings.system_namespace) {
            let deleted =
                sweep::run(&self.client, &step)
                    .await
                    .map_err(|e| pipeline::Error::Sweep {
                        owner: owner.to_string(),
                        source: Box::new(e),
                    })?;
            if deleted > 0 {
                tracing::info!(%owner, kind = ?step.kind, deleted, "swept what the pipelines left");
            }
        }
        // A Promise's sweep takes its pipelines' rights: the next runs apply them again.
        self.granted.forget_all();
        Ok(())
    }

    /// Deletes the finished Jobs of the workflow that [`history::to_prune_in_workflow`] picks
    /// (see [`prune`]).
    async fn prune(
        &self,
        owner: &pipeline::Owner,
        action: Action,
        pipelines: &[String],
    ) -> Result<(), pipeline::Error> {
        prune::run(&self.client, &self.settings, owner, action, pipelines)
            .await
            .map_err(|e| pipeline::Error::Prune {
                owner: owner.to_string(),
                action,
                source: Box::new(e),
            })
    }

    async fn kill_leftovers(&self, work_dir: &Path) -> Vec<i32> {
        let Some(job) = rundir::noted_job(work_dir) else {
            return Vec::new();
        };
        let jobs: Api<Job> = Api::namespaced(self.client.clone(), &job.namespace);
        match delete_job(&jobs, &job.name).await {
            Ok(()) => {
                tracing::warn!(namespace = %job.namespace, job = %job.name, "deleted the Job of an interrupted run");
            }
            Err(e) => {
                let error = ErrorChain(&e).to_string();
                tracing::warn!(namespace = %job.namespace, job = %job.name, %error, "cannot delete the Job of an interrupted run");
            }
        }
        Vec::new()
    }
}
