//! Runs one container in the engine: image pulled as its policy says, created with the run's
//! folders, variables, security settings and labels, waited for until its exit or the run's
//! deadline, its logs kept, and removed whatever happens.

use std::collections::HashMap;
use std::path::Path;

use bollard::models::{ContainerCreateBody, HostConfig, Mount, MountType};
use bollard::query_parameters::{CreateImageOptions, LogsOptions, WaitContainerOptions};
use bollard::Docker;
use futures::StreamExt;
use tokio::time::Instant;

use super::auth::{self, Credentials};
use super::pull::{self, PullDecision};
use super::removal::remove;
use super::security::{self, EngineSecurity};
use super::{command, labels, reference, Planned};

/// Most of a container's output kept in the logs, as for host containers.
const LOG_LIMIT: usize = 4 * 1024 * 1024;

/// How one container ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ended {
    Code(i64),
    TimedOut,
    /// It could not run: image missing or not pullable, engine refused it. The reason names the
    /// container and image.
    Refused(String),
}

/// Where the run's folders are on the host.
pub(crate) struct Folders<'a> {
    pub work_dir: &'a Path,
    pub input: &'a Path,
    pub output: &'a Path,
    pub metadata: &'a Path,
}

/// Everything one engine container needs besides its plan.
pub(crate) struct Context<'a> {
    pub docker: &'a Docker,
    pub run_name: &'a str,
    pub folders: Folders<'a>,
    pub kratix_env: &'a [(String, String)],
    /// The run's folder of platform API credentials, mounted read-only where a pod finds its
    /// service account's files, when its containers reach the API.
    pub api: Option<&'a Path>,
    pub registries: &'a [auth::DockerConfig],
    pub deadline: Instant,
    pub progress: &'a crate::pipeline::Progress,
}

pub(crate) async fn run(ctx: &Context<'_>, planned: &Planned, log: &mut Vec<u8>) -> Ended {
    let name = &planned.container.name;
    let image = &planned.container.image;
    let credentials = auth::credentials_for(reference::registry_host(image), ctx.registries);
    let refused = |what: String| Ended::Refused(format!("container {name:?}: {what}"));
    let present = ctx.docker.inspect_image(image).await.ok();
    match pull::decide(planned.pull_policy, present.is_some()) {
        PullDecision::Missing => {
            return refused(format!(
                "image {image:?} is not in the container engine and imagePullPolicy is Never"
            ))
        }
        PullDecision::UseLocal => {}
        PullDecision::Pull => {
            ctx.progress.say(format!("pulling image {image}"));
            let pulled = pull_image(ctx.docker, image, credentials.clone(), log).await;
            ctx.progress.done();
            if let Err(why) = pulled {
                let why = auth::scrub(&why, credentials.as_ref());
                return refused(format!("cannot pull image {image:?}: {why}"));
            }
        }
    }
    let image_user = match ctx.docker.inspect_image(image).await {
        Ok(inspect) => inspect.config.and_then(|c| c.user).unwrap_or_default(),
        Err(e) => return refused(format!("cannot inspect image {image:?}: {e}")),
    };
    if let Some(why) = security::non_root_violation(&planned.security, &image_user) {
        return refused(format!("securityContext: {why}"));
    }
    let body = create_body(ctx, planned, &image_user);
    let id = match ctx.docker.create_container(None, body).await {
        Ok(created) => created.id,
        Err(e) => return refused(format!("cannot create a container of image {image:?}: {e}")),
    };
    let mut guard = Remover::new(ctx.docker, &id);
    if let Err(e) = ctx.docker.start_container(&id, None).await {
        guard.remove().await;
        return refused(format!("cannot start image {image:?}: {e}"));
    }
    let ended = wait(ctx.docker, &id, ctx.deadline).await;
    if ended == Ended::TimedOut {
        // Killed before its logs are read, so that nothing more is written past the deadline.
        let _ = ctx
            .docker
            .kill_container(&id, None::<bollard::query_parameters::KillContainerOptions>)
            .await;
    }
    collect_logs(ctx.docker, &id, log).await;
    guard.remove().await;
    ended
}

async fn pull_image(
    docker: &Docker,
    image: &str,
    credentials: Option<Credentials>,
    log: &mut Vec<u8>,
) -> Result<(), String> {
    tracing::info!(image, "pulling image");
    log.extend_from_slice(format!("pulling image {image}\n").as_bytes());
    let options = CreateImageOptions {
        from_image: Some(image.to_string()),
        // NB: without a tag the engine would pull every tag of the repository.
        tag: reference::tag(image)
            .is_none()
            .then(|| "latest".to_string()),
        ..CreateImageOptions::default()
    };
    let credentials = credentials.map(|c| bollard::auth::DockerCredentials {
        username: c.username,
        password: c.password,
        auth: c.auth,
        identitytoken: c.identity_token,
        serveraddress: Some(c.server),
        ..bollard::auth::DockerCredentials::default()
    });
    let mut stream = docker.create_image(Some(options), None, credentials);
    while let Some(item) = stream.next().await {
        item.map_err(|e| e.to_string())?;
    }
    log.extend_from_slice(format!("pulled image {image}\n").as_bytes());
    Ok(())
}

fn create_body(ctx: &Context<'_>, planned: &Planned, image_user: &str) -> ContainerCreateBody {
    let c = &planned.container;
    let command = command::engine_command(c);
    let bind = |source: &Path, target: &str| Mount {
        source: Some(source.display().to_string()),
        target: Some(target.to_string()),
        typ: Some(MountType::BIND),
        read_only: Some(false),
        ..Mount::default()
    };
    let folders = &ctx.folders;
    let mut mounts = vec![
        bind(folders.input, crate::pipeline::isolation::SANDBOX_INPUT),
        bind(folders.output, crate::pipeline::isolation::SANDBOX_OUTPUT),
        bind(
            folders.metadata,
            crate::pipeline::isolation::SANDBOX_METADATA,
        ),
    ];
    if let Some(api) = ctx.api {
        mounts.push(Mount {
            read_only: Some(true),
            ..bind(api, crate::pipeline::platform_api::SERVICE_ACCOUNT_DIR)
        });
    }
    let EngineSecurity {
        read_only_root,
        cap_add,
        cap_drop,
        privileged,
        security_opt,
        ..
    } = planned.security.clone();
    let some = |v: Vec<String>| (!v.is_empty()).then_some(v);
    ContainerCreateBody {
        image: Some(c.image.clone()),
        entrypoint: command.entrypoint,
        cmd: command.cmd,
        env: Some(environment(ctx.kratix_env, &planned.env)),
        user: planned.security.user(image_user),
        working_dir: planned.working_dir.clone(),
        labels: Some(labels::of_run(folders.work_dir, ctx.run_name, &c.name)),
        host_config: Some(HostConfig {
            mounts: Some(mounts),
            readonly_rootfs: Some(read_only_root),
            cap_add: some(cap_add),
            cap_drop: some(cap_drop),
            privileged: Some(privileged),
            security_opt: some(security_opt),
            ..HostConfig::default()
        }),
        ..ContainerCreateBody::default()
    }
}

/// Folder locations, `KRATIX_*`, then the container's own `env`, which wins on a clash as in
/// Kubernetes. The image's own variables stay unless overridden.
pub(crate) fn environment(kratix: &[(String, String)], own: &[(String, String)]) -> Vec<String> {
    use crate::pipeline::isolation::{SANDBOX_INPUT, SANDBOX_METADATA, SANDBOX_OUTPUT};
    let folders = [
        ("KRATIX_INPUT_DIR", SANDBOX_INPUT),
        ("KRATIX_OUTPUT_DIR", SANDBOX_OUTPUT),
        ("KRATIX_METADATA_DIR", SANDBOX_METADATA),
    ]
    .map(|(k, v)| (k.to_string(), v.to_string()));
    let mut order: Vec<String> = Vec::new();
    let mut values: HashMap<String, String> = HashMap::new();
    for (k, v) in folders.iter().chain(kratix).chain(own) {
        if values.insert(k.clone(), v.clone()).is_none() {
            order.push(k.clone());
        }
    }
    order
        .into_iter()
        .map(|k| {
            let v = values.get(&k).cloned().unwrap_or_default();
            format!("{k}={v}")
        })
        .collect()
}

async fn wait(docker: &Docker, id: &str, deadline: Instant) -> Ended {
    let mut stream = docker.wait_container(id, None::<WaitContainerOptions>);
    match tokio::time::timeout_at(deadline, stream.next()).await {
        Err(_elapsed) => Ended::TimedOut,
        Ok(Some(Ok(response))) => Ended::Code(response.status_code),
        Ok(Some(Err(bollard::errors::Error::DockerContainerWaitError { code, .. }))) => {
            Ended::Code(code)
        }
        Ok(Some(Err(e))) => Ended::Refused(format!("lost the container while waiting for it: {e}")),
        Ok(None) => Ended::Refused("the engine stopped answering while the container ran".into()),
    }
}

async fn collect_logs(docker: &Docker, id: &str, log: &mut Vec<u8>) {
    let options = LogsOptions {
        stdout: true,
        stderr: true,
        ..LogsOptions::default()
    };
    let mut stream = docker.logs(id, Some(options));
    let start = log.len();
    while let Some(Ok(chunk)) = stream.next().await {
        let bytes = chunk.into_bytes();
        let room = LOG_LIMIT.saturating_sub(log.len() - start);
        log.extend_from_slice(&bytes[..bytes.len().min(room)]);
        if bytes.len() > room {
            log.extend_from_slice(b"\n[output truncated]\n");
            break;
        }
    }
}

/// Removes the container once: when asked, or in the background when the run is dropped half-way
/// (a cancelled reconcile must not leave a container running).
struct Remover {
    docker: Docker,
    id: Option<String>,
}

impl Remover {
    fn new(docker: &Docker, id: &str) -> Self {
        Self {
            docker: docker.clone(),
            id: Some(id.to_string()),
        }
    }

    async fn remove(&mut self) {
        if let Some(id) = self.id.take() {
            remove(&self.docker, &id).await;
        }
    }
}

impl Drop for Remover {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            let docker = self.docker.clone();
            if let Ok(handle) = tokio::runtime::Handle::try_current() {
                handle.spawn(async move { remove(&docker, &id).await });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_env_wins_and_order_is_kept() {
        let kratix = vec![("KRATIX_PROMISE_NAME".to_string(), "redis".to_string())];
        let own = vec![
            ("A".to_string(), "1".to_string()),
            ("KRATIX_OUTPUT_DIR".to_string(), "/elsewhere".to_string()),
        ];
        assert_eq!(
            environment(&kratix, &own),
            vec![
                "KRATIX_INPUT_DIR=/kratix/input",
                "KRATIX_OUTPUT_DIR=/elsewhere",
                "KRATIX_METADATA_DIR=/kratix/metadata",
                "KRATIX_PROMISE_NAME=redis",
                "A=1",
            ]
        );
    }
}
