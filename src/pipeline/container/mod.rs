//! The container executor: pipeline containers run from their images in a container engine that
//! speaks the Docker Engine API (Docker, Podman's compatible socket, Colima, Rancher Desktop,
//! OrbStack), with Kubernetes' semantics for command, environment, pull policy and security
//! context. Which containers go there is [`setting`]'s decision; the rest of this module turns a
//! container into engine settings (pure) and runs it ([`run`]).

pub(crate) mod auth;
pub(crate) mod command;
pub(crate) mod engine;
pub(crate) mod labels;
pub(crate) mod pull;
pub(crate) mod reference;
mod removal;
pub(crate) mod run;
pub(crate) mod security;
pub(crate) mod setting;

use std::path::Path;

use crate::api::pipeline::Container;

use super::images;

/// An engine container, checked before anything of the pipeline runs.
#[derive(Debug, Clone)]
pub(crate) struct Planned {
    pub container: Container,
    pub env: Vec<(String, String)>,
    pub pull_policy: pull::PullPolicy,
    pub security: security::EngineSecurity,
    pub working_dir: Option<String>,
}

/// Why a container cannot run in the engine; the run fails with this before any container runs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Refusal {
    #[error("pipeline {pipeline:?}, container {container:?}: {field} {why}")]
    Field {
        pipeline: String,
        container: String,
        field: String,
        why: String,
    },
    #[error("pipeline {pipeline:?}, container {container:?}: {0}", .refusal)]
    Env {
        pipeline: String,
        container: String,
        refusal: images::Refusal,
    },
    /// An image-only container, and no engine to run it in.
    #[error("container {container:?}: image {image:?} runs in a container engine, and none is reachable ({detail}); start Docker or Podman (or set DOCKER_HOST to your engine's socket), or give the container a `command` the host can run")]
    NoEngine {
        container: String,
        image: String,
        detail: String,
    },
}

/// Checks and translates what the engine needs of `container`.
pub(crate) fn plan(pipeline: &str, container: &Container) -> Result<Planned, Refusal> {
    let field = |field: &str, why: String| Refusal::Field {
        pipeline: pipeline.to_string(),
        container: container.name.clone(),
        field: field.to_string(),
        why,
    };
    let env = images::container_env(container).map_err(|refusal| Refusal::Env {
        pipeline: pipeline.to_string(),
        container: container.name.clone(),
        refusal,
    })?;
    let given = match container.extra.get("imagePullPolicy") {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(s)) => Some(s.as_str()),
        Some(_) => return Err(field("imagePullPolicy", "must be a string".into())),
    };
    let pull_policy = pull::policy(given, &container.image).map_err(|value| {
        field(
            "imagePullPolicy",
            format!("{value:?} is not one of Always, IfNotPresent, Never"),
        )
    })?;
    let security = security::translate(container.extra.get("securityContext"))
        .map_err(|u| field(&u.field, u.why))?;
    let working_dir = match container.extra.get("workingDir") {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(field("workingDir", "must be a string".into())),
    };
    Ok(Planned {
        container: container.clone(),
        env,
        pull_policy,
        security,
        working_dir,
    })
}

/// Lets any user write the run's folders, so that a container running as another user (a
/// non-root image, `runAsUser`, or rootless Podman's mapped users) can write its output. The
/// folders sit inside the home, which only its owner can enter.
pub(crate) fn open_folders(folders: &[&Path]) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    for folder in folders {
        std::fs::set_permissions(folder, std::fs::Permissions::from_mode(0o777))?;
    }
    Ok(())
}

/// Removes what an executor that is gone left in the engine for the run in `work_dir`.
pub(crate) async fn remove_leftovers(work_dir: &Path) -> Vec<String> {
    if !engine::maybe_present() {
        return Vec::new();
    }
    labels::remove_leftovers(work_dir).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn container(extra: serde_json::Value) -> Container {
        Container {
            name: "render".into(),
            image: "ghcr.io/acme/render:v1".into(),
            extra: serde_json::from_value(extra).expect("mapping"),
            ..Container::default()
        }
    }

    #[test]
    fn plans_and_refusals_name_pipeline_container_and_field() {
        let ok = plan(
            "instance",
            &container(json!({"imagePullPolicy": "Never", "workingDir": "/w"})),
        )
        .expect("plan");
        assert_eq!(ok.pull_policy, pull::PullPolicy::Never);
        assert_eq!(ok.working_dir.as_deref(), Some("/w"));
        let cases = [
            (
                json!({"imagePullPolicy": "Sometimes"}),
                "imagePullPolicy \"Sometimes\"",
            ),
            (
                json!({"securityContext": {"seLinuxOptions": {}}}),
                "securityContext.seLinuxOptions is not supported",
            ),
            (json!({"workingDir": 3}), "workingDir must be a string"),
        ];
        for (extra, want) in cases {
            let err = plan("instance", &container(extra))
                .expect_err("refused")
                .to_string();
            assert!(
                err.contains("pipeline \"instance\", container \"render\"") && err.contains(want),
                "{err}"
            );
        }
    }
}
