//! The controller's right to delete the requests of one Promise's kind. Deleting a Promise
//! deletes its requests first (their delete workflows run), but request kinds are only known at
//! run time, and `delete` on every kind of every group would let the controller delete anything
//! in the cluster. So when it installs a Promise's CRD, the controller grants its own
//! ServiceAccount `delete` on that kind alone (a ClusterRole and its binding, named after the
//! CRD), and removes the grant with the CRD. Creating the role needs `escalate` and binding it
//! `bind`, which deploy/rbac.yaml gives for the pipelines' roles already.

use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, RoleRef, Subject};
use kube::api::{Api, DeleteParams, PostParams};
use kube::Client;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::errors::to_store;
use crate::api::{KindInfo, ObjectKey};
use crate::store;

/// The ServiceAccount the controller runs as, when it runs in a pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    pub namespace: String,
    pub name: String,
}

impl std::str::FromStr for Account {
    type Err = String;

    /// `namespace/name`.
    fn from_str(s: &str) -> Result<Self, String> {
        match s.split_once('/') {
            Some((namespace, name))
                if !namespace.is_empty() && !name.is_empty() && !name.contains('/') =>
            {
                Ok(Account {
                    namespace: namespace.to_string(),
                    name: name.to_string(),
                })
            }
            _ => Err(format!("a ServiceAccount is `namespace/name`, not {s:?}")),
        }
    }
}

/// What marks the grants as the controller's own.
const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "kratix-rs");

/// The name of the ClusterRole and ClusterRoleBinding for `kind`'s requests.
pub(crate) fn grant_name(kind: &KindInfo) -> String {
    format!("kratix-rs-requests-{}.{}", kind.plural, kind.group)
}

fn meta(name: &str) -> kube::core::ObjectMeta {
    kube::core::ObjectMeta {
        name: Some(name.to_string()),
        labels: Some([(MANAGED_BY.0.to_string(), MANAGED_BY.1.to_string())].into()),
        ..Default::default()
    }
}

/// The role and binding that let `account` delete `kind`'s requests, and nothing else.
pub(crate) fn grant(kind: &KindInfo, account: &Account) -> (ClusterRole, ClusterRoleBinding) {
    let name = grant_name(kind);
    let role = ClusterRole {
        metadata: meta(&name),
        rules: Some(vec![PolicyRule {
            api_groups: Some(vec![kind.group.clone()]),
            resources: Some(vec![kind.plural.clone()]),
            verbs: vec!["delete".into()],
            ..Default::default()
        }]),
        aggregation_rule: None,
    };
    let binding = ClusterRoleBinding {
        metadata: meta(&name),
        role_ref: RoleRef {
            api_group: Some("rbac.authorization.k8s.io".into()),
            kind: "ClusterRole".into(),
            name: name.clone(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".into(),
            name: account.name.clone(),
            namespace: Some(account.namespace.clone()),
            api_group: None,
        }]),
    };
    (role, binding)
}

/// Creates (or brings back to what it must be) the grant for `kind`'s requests.
pub(super) async fn install(
    client: &Client,
    kind: &KindInfo,
    account: &Account,
) -> store::Result<()> {
    let (role, binding) = grant(kind, account);
    put(Api::all(client.clone()), "ClusterRole", role).await?;
    put(Api::all(client.clone()), "ClusterRoleBinding", binding).await
}

/// Removes the grant for `kind`'s requests (gone already is fine).
pub(super) async fn remove(client: &Client, kind: &KindInfo) -> store::Result<()> {
    let name = grant_name(kind);
    delete::<ClusterRoleBinding>(client, "ClusterRoleBinding", &name).await?;
    delete::<ClusterRole>(client, "ClusterRole", &name).await
}

async fn put<K>(api: Api<K>, kind: &str, wanted: K) -> store::Result<()>
where
    K: kube::Resource + Clone + DeserializeOwned + Serialize + std::fmt::Debug,
{
    let name = wanted.meta().name.clone().unwrap_or_default();
    let key = ObjectKey::new("rbac.authorization.k8s.io", kind, None, &name);
    let pp = PostParams::default();
    match api
        .get_opt(&name)
        .await
        .map_err(|e| to_store(e, &key, None, "get"))?
    {
        None => match api.create(&pp, &wanted).await {
            Ok(_) => Ok(()),
            Err(e) => match to_store(e, &key, None, "create") {
                store::Error::AlreadyExists { .. } => Ok(()),
                other => Err(other),
            },
        },
        Some(current) => {
            let mut update = wanted;
            update.meta_mut().resource_version = current.meta().resource_version.clone();
            api.replace(&name, &pp, &update)
                .await
                .map(|_| ())
                .map_err(|e| to_store(e, &key, None, "update"))
        }
    }
}

async fn delete<K>(client: &Client, kind: &str, name: &str) -> store::Result<()>
where
    K: kube::Resource<DynamicType = (), Scope = k8s_openapi::ClusterResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
{
    let key = ObjectKey::new("rbac.authorization.k8s.io", kind, None, name);
    let api: Api<K> = Api::all(client.clone());
    match api.delete(name, &DeleteParams::background()).await {
        Ok(_) => Ok(()),
        Err(e) => match to_store(e, &key, None, "delete") {
            store::Error::NotFound { .. } => Ok(()),
            other => Err(other),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accounts_are_namespace_slash_name() {
        let cases = [
            ("ops/ctl", Some(("ops", "ctl"))),
            ("ctl", None),
            ("/ctl", None),
            ("ops/", None),
            ("a/b/c", None),
        ];
        for (text, want) in cases {
            let got = text.parse::<Account>().ok();
            let want = want.map(|(namespace, name)| Account {
                namespace: namespace.into(),
                name: name.into(),
            });
            assert_eq!(got, want, "{text}");
        }
    }

    #[test]
    fn the_grant_is_delete_on_the_one_kind_for_the_controllers_account() {
        let kind = KindInfo {
            group: "example.com".into(),
            plural: "databases".into(),
            ..crate::api::Builtin::Work.info()
        };
        let account = Account {
            namespace: "kratix-platform-system".into(),
            name: "kratix-rs-controller".into(),
        };
        let (role, binding) = grant(&kind, &account);
        let name = "kratix-rs-requests-databases.example.com";
        assert_eq!(role.metadata.name.as_deref(), Some(name));
        assert_eq!(
            serde_json::to_value(&role.rules).expect("json"),
            serde_json::json!([{"apiGroups": ["example.com"], "resources": ["databases"], "verbs": ["delete"]}])
        );
        assert_eq!(binding.role_ref.name, name);
        assert_eq!(binding.role_ref.kind, "ClusterRole");
        assert_eq!(
            serde_json::to_value(&binding.subjects).expect("json"),
            serde_json::json!([{"kind": "ServiceAccount", "name": "kratix-rs-controller", "namespace": "kratix-platform-system"}])
        );
    }
}
