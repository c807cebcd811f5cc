//! The Job of one pipeline run. Kratix's shape
//! (https://github.com/syntasso/kratix/blob/ae170e22/api/v1alpha1/pipeline_factory.go) is init
//! containers `[reader, <the pipeline's containers>, work-writer]` and container
//! `status-writer`, sharing three emptyDir folders; the lean shape, the default, runs the
//! pipeline's containers as init containers and one adapter, `hand-back`, as the container, with
//! `object.yaml` mounted from the run's input ConfigMap (see [`PodShape`]). What the pipeline's
//! containers see is the same in both. Pure: the executor creates what this builds.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Capabilities, ConfigMapVolumeSource, Container, EmptyDirVolumeSource, EnvVar, EnvVarSource,
    KeyToPath, LocalObjectReference, ObjectFieldSelector, PodSpec, PodTemplateSpec,
    ResourceRequirements, SeccompProfile, SecurityContext, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::identity::Identity;
use super::spec::{self, PodSettings};
use crate::api::pipeline::Pipeline;
use crate::api::Action;
use crate::pipeline::{output, STATUS_WRITER, WORK_WRITER};

pub use super::settings::{
    PodShape, Settings, SettingsError, ADAPTER_IMAGE_ENV, ADAPTER_PULL_SECRET_ENV,
    DEFAULT_SYSTEM_NAMESPACE, JOBS_TO_KEEP_ENV, POD_SHAPE_ENV, SYSTEM_NAMESPACE_ENV,
};

/// The first init container of Kratix's pod shape: writes `object.yaml` into the input folder.
pub const READER: &str = "reader";
/// The one adapter of the lean pod shape, after the pipeline's containers.
pub(crate) const HAND_BACK: &str = "hand-back";
/// The subcommand of `kratix-rs` the adapter containers run.
pub(crate) const ADAPTER_COMMAND: &str = "pipeline-adapter";
/// Where the three shared folders are mounted in every container.
pub(crate) const INPUT_DIR: &str = "/kratix/input";
pub(crate) const OUTPUT_DIR: &str = "/kratix/output";
pub(crate) const METADATA_DIR: &str = "/kratix/metadata";
/// Variables the adapters read, besides `KRATIX_*` of the run.
pub(crate) const JOB_NAME_ENV: &str = "KRATIX_JOB_NAME";
pub(crate) const JOB_NAMESPACE_ENV: &str = "KRATIX_JOB_NAMESPACE";
pub(crate) const JOB_UID_ENV: &str = "KRATIX_JOB_UID";
/// The label the Job controller puts on a Job's pods, holding the Job's uid.
pub(crate) const CONTROLLER_UID_LABEL: &str = "controller-uid";
/// Kratix's default when the pipeline sets no `restartPolicy`.
const DEFAULT_RESTART_POLICY: &str = "OnFailure";
/// The adapters' failure reason reaches the pod status even where logs cannot be read.
const TERMINATION_MESSAGE_POLICY: &str = "FallbackToLogsOnError";
/// How long after the run's limit the Job stops itself.
pub(crate) const DEADLINE_MARGIN: Duration = Duration::from_secs(30);
/// Longest object name that is also a valid label value (`job-name` on the pods).
const MAX_NAME: usize = 63;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Spec(#[from] spec::Error),
    /// A container of the pipeline does not make a Kubernetes container.
    #[error("pipeline {pipeline}: container {container:?} is not a valid Kubernetes container")]
    Container {
        pipeline: String,
        container: String,
        #[source]
        source: serde_json::Error,
    },
}

/// One run to shape.
#[derive(Debug, Clone, Copy)]
pub struct JobRequest<'a> {
    pub identity: &'a Identity,
    pub pipeline: &'a Pipeline,
    /// `KRATIX_*` of the run.
    pub kratix_env: &'a [(String, String)],
    pub name: &'a str,
    /// The `kratix.io/hash` label: identifies the object's content.
    pub hash: &'a str,
    pub timeout: Duration,
    pub settings: &'a Settings,
}

/// Kratix's Job name: `kratix-<promise>[-<request>]-<pipeline>`, cut to leave room for `-` and
/// the five characters of `suffix` that make it unique.
pub fn job_name(identity: &Identity, suffix: &str) -> String {
    let mut name = format!("kratix-{}", identity.promise);
    if let Some(r) = &identity.resource {
        name = format!("{name}-{}", r.name);
    }
    name = format!("{name}-{}", identity.pipeline);
    let suffix: String = suffix.chars().take(5).collect();
    let room = MAX_NAME - suffix.len() - 1;
    let base = name
        .to_lowercase()
        .chars()
        .take(room)
        .collect::<String>()
        .trim_end_matches(['-', '.'])
        .to_string();
    format!("{base}-{suffix}")
}

/// Kratix's security context for its own containers.
pub(crate) fn kratix_security_context() -> SecurityContext {
    SecurityContext {
        allow_privilege_escalation: Some(false),
        capabilities: Some(Capabilities {
            drop: Some(vec!["ALL".into()]),
            add: None,
        }),
        run_as_non_root: Some(true),
        seccomp_profile: Some(SeccompProfile {
            type_: "RuntimeDefault".into(),
            localhost_profile: None,
        }),
        privileged: Some(false),
        ..SecurityContext::default()
    }
}

/// Kratix's resources for containers that set none.
pub(crate) fn default_resources() -> ResourceRequirements {
    let list = |cpu: &str, mem: &str| {
        BTreeMap::from([
            ("cpu".to_string(), Quantity(cpu.into())),
            ("memory".to_string(), Quantity(mem.into())),
            ("ephemeral-storage".to_string(), Quantity(mem.into())),
        ])
    };
    ResourceRequirements {
        requests: Some(list("100m", "128Mi")),
        limits: Some(list("200m", "256Mi")),
        ..ResourceRequirements::default()
    }
}

fn value(name: &str, value: &str) -> EnvVar {
    EnvVar {
        name: name.into(),
        value: Some(value.into()),
        value_from: None,
    }
}

fn mount(name: &str, path: &str, read_only: bool) -> VolumeMount {
    VolumeMount {
        name: name.into(),
        mount_path: path.into(),
        read_only: read_only.then_some(true),
        ..VolumeMount::default()
    }
}

const SHARED: [(&str, &str); 3] = [
    ("shared-input", INPUT_DIR),
    ("shared-output", OUTPUT_DIR),
    ("shared-metadata", METADATA_DIR),
];

/// `KRATIX_*` of the run, then where the folders are, as the local executor sets them.
fn run_env(kratix: &[(String, String)]) -> Vec<EnvVar> {
    kratix
        .iter()
        .map(|(k, v)| value(k, v))
        .chain([
            value("KRATIX_INPUT_DIR", INPUT_DIR),
            value("KRATIX_OUTPUT_DIR", OUTPUT_DIR),
            value("KRATIX_METADATA_DIR", METADATA_DIR),
        ])
        .collect()
}

fn adapter(
    r: &JobRequest,
    name: &str,
    mounts: Vec<VolumeMount>,
    extra_env: Vec<EnvVar>,
) -> Container {
    let namespace = r.identity.namespace(&r.settings.system_namespace);
    let mut env = run_env(r.kratix_env);
    env.extend([
        value(JOB_NAME_ENV, r.name),
        value(JOB_NAMESPACE_ENV, &namespace),
        EnvVar {
            name: JOB_UID_ENV.into(),
            value: None,
            value_from: Some(EnvVarSource {
                field_ref: Some(ObjectFieldSelector {
                    field_path: format!("metadata.labels['{CONTROLLER_UID_LABEL}']"),
                    api_version: None,
                }),
                ..EnvVarSource::default()
            }),
        },
    ]);
    env.extend(extra_env);
    Container {
        name: name.into(),
        image: Some(r.settings.adapter_image.clone()),
        args: Some(vec![ADAPTER_COMMAND.into(), name.into()]),
        env: Some(env),
        volume_mounts: Some(mounts),
        security_context: Some(kratix_security_context()),
        resources: Some(default_resources()),
        termination_message_policy: Some(TERMINATION_MESSAGE_POLICY.into()),
        ..Container::default()
    }
}

/// A container of the pipeline: its own fields as written, the run's variables before its own
/// (its own win, as in Kubernetes), the shared folders before its own mounts, and Kratix's
/// defaults where it sets nothing.
fn user_container(r: &JobRequest, c: &crate::api::pipeline::Container) -> Result<Container, Error> {
    let invalid = |source| Error::Container {
        pipeline: r.pipeline.metadata.name.clone(),
        container: c.name.clone(),
        source,
    };
    let json = serde_json::to_value(c).map_err(invalid)?;
    let mut k: Container = serde_json::from_value(json).map_err(invalid)?;
    let mut env = run_env(r.kratix_env);
    env.extend(k.env.take().unwrap_or_default());
    k.env = Some(env);
    let mut mounts: Vec<VolumeMount> = SHARED
        .iter()
        .map(|(name, path)| mount(name, path, *path == INPUT_DIR))
        .collect();
    mounts.extend(k.volume_mounts.take().unwrap_or_default());
    k.volume_mounts = Some(mounts);
    if k.resources.is_none() {
        k.resources = Some(default_resources());
    }
    if k.termination_message_policy.is_none() {
        k.termination_message_policy = Some(TERMINATION_MESSAGE_POLICY.into());
    }
    Ok(k)
}

/// The output limits, for the adapter that checks the output.
fn limit_env(r: &JobRequest) -> Vec<EnvVar> {
    let limits = r.settings.limits;
    vec![
        value(output::MAX_FILES_ENV, &limits.max_files.to_string()),
        value(output::MAX_BYTES_ENV, &limits.max_bytes.to_string()),
    ]
}

/// The one adapter of a lean pod: it checks what the pipeline wrote and hands it back.
fn lean_adapter(r: &JobRequest) -> Container {
    let mut mounts = vec![mount("shared-metadata", METADATA_DIR, true)];
    if r.identity.action == Action::Configure {
        mounts.insert(0, mount("shared-output", OUTPUT_DIR, true));
    }
    adapter(r, HAND_BACK, mounts, limit_env(r))
}

/// Kratix's adapters around the pipeline's containers `user`: the init containers and the
/// container of the pod.
fn kratix_adapters(r: &JobRequest, user: Vec<Container>) -> (Vec<Container>, Container) {
    let reader = adapter(
        r,
        READER,
        vec![mount("shared-input", INPUT_DIR, false)],
        vec![],
    );
    let mut init = vec![reader];
    init.extend(user);
    if r.identity.action == Action::Configure {
        init.push(adapter(
            r,
            WORK_WRITER,
            vec![
                mount("shared-output", OUTPUT_DIR, true),
                mount("shared-metadata", METADATA_DIR, true),
            ],
            limit_env(r),
        ));
    }
    let status_writer = adapter(
        r,
        STATUS_WRITER,
        vec![mount("shared-metadata", METADATA_DIR, true)],
        vec![],
    );
    (init, status_writer)
}

/// The Job of the run.
pub fn job(r: &JobRequest) -> Result<Job, Error> {
    let pod = PodSettings::of(r.pipeline)?;
    let namespace = r.identity.namespace(&r.settings.system_namespace);
    let user = r
        .pipeline
        .spec
        .containers
        .iter()
        .map(|c| user_container(r, c))
        .collect::<Result<Vec<_>, _>>()?;
    let (init, main) = match r.settings.pod_shape {
        PodShape::Lean => (user, lean_adapter(r)),
        PodShape::Kratix => kratix_adapters(r, user),
    };

    let mut volumes: Vec<Volume> = SHARED
        .iter()
        .map(|(name, path)| match r.settings.pod_shape {
            // The object as it was when the run started, from the ConfigMap the executor made
            // before the Job: no container has to fetch it.
            PodShape::Lean if *path == INPUT_DIR => Volume {
                name: name.to_string(),
                config_map: Some(ConfigMapVolumeSource {
                    name: super::handback::input_name(r.name),
                    items: Some(vec![KeyToPath {
                        key: super::handback::OBJECT_KEY.into(),
                        path: super::handback::OBJECT_KEY.into(),
                        ..KeyToPath::default()
                    }]),
                    ..ConfigMapVolumeSource::default()
                }),
                ..Volume::default()
            },
            _ => Volume {
                name: name.to_string(),
                empty_dir: Some(EmptyDirVolumeSource::default()),
                ..Volume::default()
            },
        })
        .collect();
    volumes.extend(pod.volumes.iter().cloned());

    let mut pull_secrets: Vec<LocalObjectReference> = r
        .settings
        .adapter_pull_secret
        .iter()
        .map(|name| LocalObjectReference { name: name.clone() })
        .collect();
    pull_secrets.extend(pod.image_pull_secrets.iter().cloned());

    let mut labels = r.identity.job_labels(r.hash);
    labels.extend(r.pipeline.metadata.labels.clone());
    let annotations = r.pipeline.metadata.annotations.clone();

    let service_account = super::rbac::service_account_name(r.identity, &pod.rbac);
    Ok(Job {
        metadata: ObjectMeta {
            name: Some(r.name.to_string()),
            namespace: Some(namespace),
            labels: Some(labels.clone()),
            ..ObjectMeta::default()
        },
        spec: Some(JobSpec {
            backoff_limit: pod.job_options.backoff_limit,
            // The run's time limit holds even when no controller is watching; a watching
            // executor stops the Job itself a little earlier, while its pod still tells which
            // container was running.
            active_deadline_seconds: Some(
                i64::try_from((r.timeout + DEADLINE_MARGIN).as_secs()).unwrap_or(i64::MAX),
            ),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    annotations: (!annotations.is_empty()).then_some(annotations),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    init_containers: Some(init),
                    containers: vec![main],
                    volumes: Some(volumes),
                    image_pull_secrets: (!pull_secrets.is_empty()).then_some(pull_secrets),
                    node_selector: pod.node_selector.clone(),
                    tolerations: pod.tolerations.clone(),
                    restart_policy: Some(
                        pod.restart_policy
                            .clone()
                            .unwrap_or_else(|| DEFAULT_RESTART_POLICY.into()),
                    ),
                    service_account_name: Some(service_account),
                    ..PodSpec::default()
                }),
            },
            ..JobSpec::default()
        }),
        status: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::identity::Resource;

    fn identity(promise: &str, resource: Option<&str>, pipeline: &str) -> Identity {
        Identity {
            action: Action::Configure,
            promise: promise.into(),
            promise_version: "v1".into(),
            pipeline: pipeline.into(),
            resource: resource.map(|name| Resource {
                name: name.into(),
                namespace: "default".into(),
                group: "example.com".into(),
                plural: "things".into(),
            }),
        }
    }

    #[test]
    fn job_names_are_kratix_names_cut_to_a_label_value() {
        let long = "x".repeat(80);
        let cases = [
            (
                "promise",
                identity("db", None, "setup"),
                "kratix-db-setup-ab12c",
            ),
            (
                "resource",
                identity("db", Some("mine"), "inst"),
                "kratix-db-mine-inst-ab12c",
            ),
            (
                "upper case",
                identity("DB", None, "Setup"),
                "kratix-db-setup-ab12c",
            ),
        ];
        for (case, id, want) in cases {
            assert_eq!(job_name(&id, "ab12c"), want, "{case}");
        }
        let cut = job_name(&identity(&long, None, "p"), "ab12c");
        assert_eq!(cut.len(), MAX_NAME);
        assert!(cut.ends_with("x-ab12c"), "{cut}");
    }
}
