//! The ServiceAccount of a pipeline and what it may do: Kratix's grants
//! (https://github.com/syntasso/kratix/blob/ae170e22/api/v1alpha1/pipeline_factory.go) plus the
//! pipeline's `rbac.permissions`, and the ConfigMaps the adapters hand results back through.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use md5::{Digest, Md5};

use super::identity::{Identity, PIPELINE_NAMESPACE_LABEL, RESOURCE_NAMESPACE_LABEL};
use super::spec::Rbac;

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";
/// `*` is not a valid label value; Kratix marks "every namespace" with this instead.
const ALL_NAMESPACES: &str = "kratix_all_namespaces";
const WRITE_VERBS: [&str; 5] = ["get", "list", "update", "create", "patch"];

/// Everything a pipeline's pod runs as.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Grants {
    pub service_account: ServiceAccount,
    pub roles: Vec<Role>,
    pub role_bindings: Vec<RoleBinding>,
    pub cluster_roles: Vec<ClusterRole>,
    pub cluster_role_bindings: Vec<ClusterRoleBinding>,
}

/// `rbac.serviceAccount` when the pipeline names one, else the pipeline id.
pub fn service_account_name(identity: &Identity, rbac: &Rbac) -> String {
    if rbac.service_account.is_empty() {
        identity.pipeline_id()
    } else {
        rbac.service_account.clone()
    }
}

/// Kratix's deterministic names: the name, then five characters of its hash.
pub fn deterministic_name(name: &str) -> String {
    let hash = hex::encode(Md5::digest(name.as_bytes()));
    let base: String = name.to_lowercase().chars().take(57).collect();
    format!("{}-{}", base.trim_end_matches(['-', '.']), &hash[..5])
}

fn rule(groups: &[&str], resources: &[String], verbs: &[&str]) -> PolicyRule {
    PolicyRule {
        api_groups: Some(groups.iter().map(|s| s.to_string()).collect()),
        resources: Some(resources.to_vec()),
        verbs: verbs.iter().map(|s| s.to_string()).collect(),
        ..PolicyRule::default()
    }
}

fn meta(name: &str, namespace: Option<&str>, labels: &BTreeMap<String, String>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: namespace.map(str::to_string),
        labels: Some(labels.clone()),
        ..ObjectMeta::default()
    }
}

fn role_ref(kind: &str, name: &str) -> RoleRef {
    RoleRef {
        api_group: Some(RBAC_GROUP.into()),
        kind: kind.into(),
        name: name.into(),
    }
}

/// The adapters hand results back through ConfigMaps named after the Job: Kratix's
/// work-writer writes Works instead. Only `create` and `get`: nothing can replace a result
/// once written. Kratix's pipelines do not have it; the embedded API leaves it out.
pub fn handback_rule() -> PolicyRule {
    rule(&[""], &["configmaps".into()], &["get", "create"])
}

/// The grants of one pipeline, in the namespace its Job runs in.
pub fn grants(identity: &Identity, rbac: &Rbac, namespace: &str) -> Grants {
    let id = identity.pipeline_id();
    let sa_name = service_account_name(identity, rbac);
    let promise_labels = identity.promise_labels();
    let mut user_labels = identity.workflow_labels();
    user_labels.insert(PIPELINE_NAMESPACE_LABEL.into(), namespace.into());
    let subject = vec![Subject {
        kind: "ServiceAccount".into(),
        name: sa_name.clone(),
        namespace: Some(namespace.into()),
        api_group: None,
    }];
    let mut g = Grants {
        service_account: ServiceAccount {
            metadata: meta(&sa_name, Some(namespace), &promise_labels),
            ..ServiceAccount::default()
        },
        ..Grants::default()
    };

    let mut own_rules = vec![handback_rule()];
    match &identity.resource {
        None => g.cluster_roles.push(ClusterRole {
            metadata: meta(&id, None, &promise_labels),
            rules: Some(vec![rule(
                &[crate::api::GROUP],
                &["promises".into(), "promises/status".into(), "works".into()],
                &WRITE_VERBS,
            )]),
            ..ClusterRole::default()
        }),
        Some(r) => {
            let request_rule = rule(
                &[r.group.as_str()],
                &[r.plural.clone(), format!("{}/status", r.plural)],
                &WRITE_VERBS,
            );
            own_rules.push(request_rule.clone());
            own_rules.push(rule(&[crate::api::GROUP], &["works".into()], &["*"]));
            if r.namespace != namespace {
                // A cluster-scoped request: its API is not in the Job's namespace.
                g.cluster_roles.push(ClusterRole {
                    metadata: meta(&format!("{id}-cluster"), None, &promise_labels),
                    rules: Some(vec![request_rule]),
                    ..ClusterRole::default()
                });
            }
        }
    }
    g.roles.push(Role {
        metadata: meta(&id, Some(namespace), &promise_labels),
        rules: Some(own_rules),
    });

    let mut by_namespace: BTreeMap<&str, Vec<PolicyRule>> = BTreeMap::new();
    for p in &rbac.permissions {
        by_namespace
            .entry(p.resource_namespace.as_str())
            .or_default()
            .push(p.rule.clone());
    }
    for (ns, rules) in by_namespace {
        if ns.is_empty() {
            g.roles.push(Role {
                metadata: meta(&deterministic_name(&id), Some(namespace), &user_labels),
                rules: Some(rules),
            });
            continue;
        }
        let (marker, name_part) = match ns {
            "*" => (ALL_NAMESPACES, "kratix-all-namespaces"),
            other => (other, other),
        };
        let mut labels = user_labels.clone();
        labels.insert(RESOURCE_NAMESPACE_LABEL.into(), marker.into());
        let role_name = deterministic_name(&format!("{id}-{name_part}"));
        let binding_name = deterministic_name(&format!("{id}-{namespace}"));
        g.cluster_roles.push(ClusterRole {
            metadata: meta(&role_name, None, &labels),
            rules: Some(rules),
            ..ClusterRole::default()
        });
        if ns == "*" {
            g.cluster_role_bindings.push(ClusterRoleBinding {
                metadata: meta(&binding_name, None, &labels),
                role_ref: role_ref("ClusterRole", &role_name),
                subjects: Some(subject.clone()),
            });
        } else {
            g.role_bindings.push(RoleBinding {
                metadata: meta(&binding_name, Some(ns), &labels),
                role_ref: role_ref("ClusterRole", &role_name),
                subjects: Some(subject.clone()),
            });
        }
    }

    for role in &g.roles {
        let name = role.metadata.name.clone().unwrap_or_default();
        g.role_bindings.push(RoleBinding {
            metadata: meta(
                &name,
                Some(namespace),
                role.metadata.labels.as_ref().unwrap_or(&promise_labels),
            ),
            role_ref: role_ref("Role", &name),
            subjects: Some(subject.clone()),
        });
    }
    for cr in &g.cluster_roles {
        let labels = cr.metadata.labels.clone().unwrap_or_default();
        if labels.contains_key(RESOURCE_NAMESPACE_LABEL) {
            continue;
        }
        let name = cr.metadata.name.clone().unwrap_or_default();
        g.cluster_role_bindings.push(ClusterRoleBinding {
            metadata: meta(&name, None, &promise_labels),
            role_ref: role_ref("ClusterRole", &name),
            subjects: Some(subject.clone()),
        });
    }
    g
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_names_are_stable_and_short() {
        let a = deterministic_name("db-resource-configure-instance");
        assert_eq!(a, deterministic_name("db-resource-configure-instance"));
        assert!(a.starts_with("db-resource-configure-instance-"), "{a}");
        assert_eq!(a.len(), "db-resource-configure-instance".len() + 6);
        assert!(deterministic_name(&"y".repeat(100)).len() <= 63);
    }
}
