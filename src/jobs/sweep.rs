//! What the Job executor leaves for a Promise or request, found by Kratix's labels: the list of
//! kinds to sweep and the selector (pure, [`plan`]); [`run`] deletes what they find.
//!
//! A Promise's sweep takes everything labelled with its name, in every namespace: the Jobs and
//! hand-back ConfigMaps of its own and its requests' runs, the pipelines' ServiceAccounts, Roles,
//! ClusterRoles and bindings. A request's sweep takes its Jobs and ConfigMaps in the namespace
//! its runs used; the ServiceAccounts and roles are per pipeline, shared by every request of the
//! Promise there, and go with the Promise.

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use kube::api::{ApiResource, DeleteParams, DynamicObject, ListParams};
use kube::{Api, Client};

use super::identity::{PROMISE_NAME_LABEL, RESOURCE_NAME_LABEL};
use super::Error;
use crate::pipeline::Owner;

/// A kind the executor creates objects of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Swept {
    Job,
    ConfigMap,
    ServiceAccount,
    Role,
    RoleBinding,
    ClusterRole,
    ClusterRoleBinding,
}

impl Swept {
    /// Every kind, namespaced first.
    pub(crate) const ALL: [Swept; 7] = [
        Swept::Job,
        Swept::ConfigMap,
        Swept::ServiceAccount,
        Swept::Role,
        Swept::RoleBinding,
        Swept::ClusterRole,
        Swept::ClusterRoleBinding,
    ];

    pub(crate) fn namespaced(self) -> bool {
        !matches!(self, Swept::ClusterRole | Swept::ClusterRoleBinding)
    }

    fn resource(self) -> ApiResource {
        match self {
            Swept::Job => ApiResource::erase::<Job>(&()),
            Swept::ConfigMap => ApiResource::erase::<ConfigMap>(&()),
            Swept::ServiceAccount => ApiResource::erase::<ServiceAccount>(&()),
            Swept::Role => ApiResource::erase::<Role>(&()),
            Swept::RoleBinding => ApiResource::erase::<RoleBinding>(&()),
            Swept::ClusterRole => ApiResource::erase::<ClusterRole>(&()),
            Swept::ClusterRoleBinding => ApiResource::erase::<ClusterRoleBinding>(&()),
        }
    }
}

/// One kind to sweep: where, and the label selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Sweep {
    pub kind: Swept,
    /// `None`: every namespace (or the cluster, for cluster-scoped kinds).
    pub namespace: Option<String>,
    pub selector: String,
}

/// What to sweep for `owner`; a request's runs used its namespace, or `system_namespace` when it
/// is cluster-scoped.
pub(crate) fn plan(owner: &Owner, system_namespace: &str) -> Vec<Sweep> {
    match owner {
        Owner::Promise { name } => Swept::ALL
            .iter()
            .map(|kind| Sweep {
                kind: *kind,
                namespace: None,
                selector: format!("{PROMISE_NAME_LABEL}={name}"),
            })
            .collect(),
        Owner::Request {
            promise,
            namespace,
            name,
        } => {
            let namespace = request_namespace(namespace, system_namespace);
            [Swept::Job, Swept::ConfigMap]
                .iter()
                .map(|kind| Sweep {
                    kind: *kind,
                    namespace: Some(namespace.to_string()),
                    selector: format!(
                        "{PROMISE_NAME_LABEL}={promise},{RESOURCE_NAME_LABEL}={name}"
                    ),
                })
                .collect()
        }
    }
}

/// Where a request's runs run: its namespace, or `system_namespace` when it is cluster-scoped.
pub(crate) fn request_namespace<'a>(namespace: &'a str, system_namespace: &'a str) -> &'a str {
    if namespace.is_empty() {
        system_namespace
    } else {
        namespace
    }
}

/// Deletes what one sweep finds (in the background: a Job's pods follow it); how many.
pub(crate) async fn run(client: &Client, sweep: &Sweep) -> Result<usize, Error> {
    let resource = sweep.kind.resource();
    let listing: Api<DynamicObject> = match &sweep.namespace {
        Some(ns) if sweep.kind.namespaced() => Api::namespaced_with(client.clone(), ns, &resource),
        _ => Api::all_with(client.clone(), &resource),
    };
    let what = || format!("{} labelled {}", resource.kind, sweep.selector);
    let found = listing
        .list_metadata(&ListParams::default().labels(&sweep.selector))
        .await
        .map_err(|source| Error::Api {
            action: "list",
            what: what(),
            source,
        })?;
    for object in &found.items {
        let name = object.metadata.name.clone().unwrap_or_default();
        let api: Api<DynamicObject> = match &object.metadata.namespace {
            Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
            None => Api::all_with(client.clone(), &resource),
        };
        match api.delete(&name, &DeleteParams::background()).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(source) => {
                return Err(Error::Api {
                    action: "delete",
                    what: format!("{} {name}", resource.kind),
                    source,
                })
            }
        }
    }
    Ok(found.items.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn promise(name: &str) -> Owner {
        Owner::Promise { name: name.into() }
    }

    fn request(namespace: &str, name: &str) -> Owner {
        Owner::Request {
            promise: "database".into(),
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    #[test]
    fn a_promise_sweeps_every_kind_everywhere_by_its_name() {
        let got = plan(&promise("database"), "kratix-platform-system");
        assert_eq!(
            got.iter().map(|s| s.kind).collect::<Vec<_>>(),
            Swept::ALL.to_vec()
        );
        for s in &got {
            assert_eq!(s.namespace, None, "{s:?}");
            assert_eq!(s.selector, "kratix.io/promise-name=database", "{s:?}");
        }
    }

    #[test]
    fn a_request_sweeps_its_jobs_and_config_maps_where_its_runs_were() {
        let cases = [
            (request("team-a", "mydb"), "team-a"),
            // Cluster-scoped requests run in the system namespace.
            (request("", "mydb"), "kratix-platform-system"),
        ];
        for (owner, namespace) in cases {
            let got = plan(&owner, "kratix-platform-system");
            let expected: Vec<Sweep> = [Swept::Job, Swept::ConfigMap]
                .iter()
                .map(|kind| Sweep {
                    kind: *kind,
                    namespace: Some(namespace.into()),
                    selector: "kratix.io/promise-name=database,kratix.io/resource-name=mydb".into(),
                })
                .collect();
            assert_eq!(got, expected, "{owner}");
        }
    }

    #[test]
    fn only_cluster_roles_and_their_bindings_are_cluster_scoped() {
        let cluster: Vec<Swept> = Swept::ALL.into_iter().filter(|k| !k.namespaced()).collect();
        assert_eq!(cluster, [Swept::ClusterRole, Swept::ClusterRoleBinding]);
    }
}
