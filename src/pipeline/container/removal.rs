//! Removing an engine container, running or not, with its anonymous volumes.

use bollard::query_parameters::RemoveContainerOptions;
use bollard::Docker;

pub(super) async fn remove(docker: &Docker, id: &str) {
    let options = RemoveContainerOptions {
        force: true,
        v: true,
        ..RemoveContainerOptions::default()
    };
    if let Err(e) = docker.remove_container(id, Some(options)).await {
        tracing::warn!(container = id, error = %e, "cannot remove a pipeline container");
    }
}
