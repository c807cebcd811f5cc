//! A pipeline's rights on the API server: applied before each run ([`grant`]), and those of
//! versions no run uses any more deleted after one ([`clean`], as [`super::rights`] decides).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use kube::api::{ListParams, Patch, PatchParams};
use kube::{Api, Client};
use serde::Serialize;
use tokio::sync::RwLock;

use super::granted::Granted;
use super::identity::{self, Identity};
use super::{api_error, rbac, rights, status, sweep, Error, FIELD_MANAGER};

async fn apply<K>(api: Api<K>, object: &K) -> Result<(), Error>
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + Serialize
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let name = object.meta().name.clone().unwrap_or_default();
    api.patch(
        &name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(object),
    )
    .await
    .map_err(api_error("apply", format!("{} {name}", K::kind(&()))))?;
    Ok(())
}

/// Creates or updates the ServiceAccount and roles of the pipeline.
pub(super) async fn grant(c: &Client, grants: &rbac::Grants, namespace: &str) -> Result<(), Error> {
    apply(
        Api::<ServiceAccount>::namespaced(c.clone(), namespace),
        &grants.service_account,
    )
    .await?;
    for r in &grants.cluster_roles {
        apply(Api::<ClusterRole>::all(c.clone()), r).await?;
    }
    for b in &grants.cluster_role_bindings {
        apply(Api::<ClusterRoleBinding>::all(c.clone()), b).await?;
    }
    for r in &grants.roles {
        let ns = r.metadata.namespace.as_deref().unwrap_or(namespace);
        apply(Api::<Role>::namespaced(c.clone(), ns), r).await?;
    }
    for b in &grants.role_bindings {
        let ns = b.metadata.namespace.as_deref().unwrap_or(namespace);
        apply(Api::<RoleBinding>::namespaced(c.clone(), ns), b).await?;
    }
    Ok(())
}

/// Lists the Roles of the pipeline's other versions in `namespace` (every version has one);
/// when there are any, takes `lock` exclusively, gathers the versions in use (runs of this
/// controller, unfinished Jobs) and deletes the rights of the others, which `granted` then
/// forgets (still under the lock, so that no run skips applying what was just deleted).
pub(super) async fn clean(
    client: &Client,
    in_flight: &rights::InFlight,
    lock: &RwLock<()>,
    granted: &Granted,
    identity: &Identity,
    namespace: &str,
) -> Result<(), Error> {
    let version_of = |labels: &Option<BTreeMap<String, String>>| {
        labels
            .as_ref()
            .and_then(|l| l.get(identity::PROMISE_VERSION_LABEL).cloned())
    };
    // Every version has its own Role in the namespace: a cheap look first, without the lock.
    let roles: Api<Role> = Api::namespaced(client.clone(), namespace);
    let selector = rights::other_versions_selector(identity, namespace);
    let present: BTreeSet<String> = roles
        .list_metadata(&ListParams::default().labels(&selector))
        .await
        .map_err(api_error("list", format!("Roles labelled {selector}")))?
        .items
        .iter()
        .filter_map(|r| version_of(&r.metadata.labels))
        .collect();
    if present.is_empty() {
        return Ok(());
    }
    let _cleaning = lock.write().await;
    let mut in_use = in_flight.versions(identity, namespace);
    let jobs: Api<Job> = Api::namespaced(client.clone(), namespace);
    let selector = rights::jobs_selector(identity);
    let listed = jobs
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(api_error("list", format!("Jobs labelled {selector}")))?;
    in_use.extend(
        listed
            .items
            .iter()
            .filter(|j| status::finished(j).is_none())
            .filter_map(|j| version_of(&j.metadata.labels)),
    );
    for version in rights::stale_versions(&present, &in_use, &identity.promise_version) {
        for step in rights::plan(identity, namespace, &version) {
            sweep::run(client, &step).await?;
        }
        granted.forget_all();
        tracing::info!(pipeline = %identity.pipeline_id(), %namespace, %version, "deleted the rights of a version no run uses any more");
    }
    Ok(())
}
