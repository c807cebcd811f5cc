//! What each container of a run is before any runs: a host command line or an engine plan, as
//! [`placement`](super::container::setting::placement) decides. A pipeline that cannot start has
//! no side effects.

use bollard::Docker;

use super::container::{self, setting::Placement};
use super::invocation::{prepare, Prepared};
use super::{program_path, RunRequest, SANDBOX_PATH};

pub(super) enum Step {
    Host(Prepared),
    Engine(Box<container::Planned>),
}

impl Step {
    pub(super) fn name(&self) -> &str {
        match self {
            Step::Host(p) => &p.name,
            Step::Engine(p) => &p.container.name,
        }
    }
}

/// Whether the host can start the container's `command` (its program exists and is executable).
fn host_runs_command(command: Option<&Vec<String>>) -> bool {
    let Some(program) = command.and_then(|c| c.first()) else {
        return false;
    };
    if program.contains('/') {
        return program_path::executable_file(std::path::Path::new(program));
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| SANDBOX_PATH.into());
    program_path::resolve(program.as_ref(), Some(&path), program_path::executable_file).is_some()
}

/// The steps of the run, and the engine when any step needs one; `Err` is the container that
/// cannot run and why.
pub(super) async fn steps(
    req: &RunRequest,
) -> Result<(Vec<Step>, Option<Docker>), (String, String)> {
    let containers = &req.pipeline.spec.containers;
    let placements: Vec<Placement> = containers
        .iter()
        .map(|c| {
            let mapped = !c.image.is_empty() && req.images.get(&c.image).is_some();
            container::setting::placement(
                req.executor,
                c,
                mapped,
                host_runs_command(c.command.as_ref()),
            )
        })
        .collect();
    let engine = if placements.iter().any(|p| *p != Placement::Host) {
        match container::engine::connect().await {
            Ok((docker, address)) => {
                tracing::debug!(%address, "container engine");
                Ok(docker)
            }
            Err(e) => Err(statestores::error_chain::ErrorChain(&e).to_string()),
        }
    } else {
        Err(String::new())
    };
    let pipeline = req.pipeline.name();
    let mut steps = Vec::with_capacity(containers.len());
    for (c, placement) in containers.iter().zip(placements) {
        let step = match (placement, &engine) {
            (Placement::Engine | Placement::EngineElseHost, Ok(_)) => {
                let planned =
                    container::plan(pipeline, c).map_err(|r| (c.name.clone(), r.to_string()))?;
                Step::Engine(Box::new(planned))
            }
            (Placement::Engine, Err(detail)) => {
                let refusal = container::Refusal::NoEngine {
                    container: c.name.clone(),
                    image: c.image.clone(),
                    detail: detail.clone(),
                };
                return Err((c.name.clone(), refusal.to_string()));
            }
            (Placement::Host | Placement::EngineElseHost, _) => {
                let mut prepared = prepare(std::slice::from_ref(c), &req.images)
                    .map_err(|(name, refusal)| (name, refusal.to_string()))?;
                match prepared.pop() {
                    Some(p) => Step::Host(p),
                    None => continue,
                }
            }
        };
        steps.push(step);
    }
    let needed = steps.iter().any(|s| matches!(s, Step::Engine(_)));
    Ok((steps, engine.ok().filter(|_| needed)))
}
