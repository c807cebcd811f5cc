//! The ServiceAccount of a pipeline and what it may do: Kratix's grants
//! (https://github.com/syntasso/kratix/blob/ae170e22/api/v1alpha1/pipeline_factory.go) plus the
//! pipeline's `rbac.permissions`, and the ConfigMaps the adapters hand results back through.
//!
//! Unlike Kratix's, they are per Promise version: named after the pipeline, the namespace its
//! Jobs run in and the version, and labelled so ([`Identity::versioned_rights_labels`]); the
//! account and own Role of an unversioned Promise's pipeline keep Kratix's name
//! ([`rights_name`]). Runs of
//! two versions of one pipeline at once (a request pinned to the old one, another following the
//! new one) each keep exactly their version's rights, and one version's end never takes the
//! rights another is using (the executor deletes a version's rights once no run of it is left).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use md5::{Digest, Md5};

use super::identity::{Identity, RESOURCE_NAMESPACE_LABEL};
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

/// `rbac.serviceAccount` when the pipeline names one, else the pipeline's rights name for the
/// run's version ([`rights_name`]).
pub fn service_account_name(identity: &Identity, rbac: &Rbac) -> String {
    if rbac.service_account.is_empty() {
        rights_name(identity)
    } else {
        rbac.service_account.clone()
    }
}

/// The name of the ServiceAccount and own Role of the pipeline at the run's version. For an
/// unversioned Promise, Kratix's own: the pipeline id, so that roles users bind to Kratix's
/// account keep applying
/// (https://github.com/syntasso/kratix/blob/ae170e22/api/v1alpha1/pipeline_factory.go#L88).
/// With versions, the pipeline id and the version as a [`deterministic_name`] (a version may
/// hold characters a name may not), so that each version has rights of its own.
pub fn rights_name(identity: &Identity) -> String {
    if identity.promise_version == crate::api::versions::UNVERSIONED {
        return identity.pipeline_id();
    }
    deterministic_name(&format!(
        "{}-{}",
        identity.pipeline_id(),
        identity.promise_version
    ))
}

/// Kratix's deterministic names: the name, then five characters of its hash; characters a
/// Kubernetes name may not hold become `-`.
pub(crate) fn deterministic_name(name: &str) -> String {
    let hash = hex::encode(Md5::digest(name.as_bytes()));
    let base: String = name
        .to_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .take(57)
        .collect();
    format!("{}-{}", base.trim_end_matches(['-', '.']), &hash[..5])
}

fn rule(groups: &[&str], resources: &[String], verbs: &[&str]) -> PolicyRule {
    PolicyRule {
        api_groups: Some(
            groups
                .iter()
                .map(std::string::ToString::to_string)
                .collect(),
        ),
        resources: Some(resources.to_vec()),
        verbs: verbs.iter().map(std::string::ToString::to_string).collect(),
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
pub(crate) fn handback_rule() -> PolicyRule {
    rule(&[""], &["configmaps".into()], &["get", "create"])
}

/// The grants of one pipeline at the run's version, in the namespace its Job runs in.
pub fn grants(identity: &Identity, rbac: &Rbac, namespace: &str) -> Grants {
    let id = rights_name(identity);
    let sa_name = service_account_name(identity, rbac);
    // Everything is labelled with the version it serves, but an account the pipeline names is
    // shared by every version: it goes with the Promise, never with a version.
    let labels = identity.versioned_rights_labels(namespace);
    let account_labels = if rbac.service_account.is_empty() {
        labels.clone()
    } else {
        identity.rights_labels(namespace)
    };
    let subject = vec![Subject {
        kind: "ServiceAccount".into(),
        name: sa_name.clone(),
        namespace: Some(namespace.into()),
        api_group: None,
    }];
    let mut g = Grants {
        service_account: ServiceAccount {
            metadata: meta(&sa_name, Some(namespace), &account_labels),
            ..ServiceAccount::default()
        },
        ..Grants::default()
    };

    let mut own_rules = vec![handback_rule()];
    match &identity.resource {
        None => g.cluster_roles.push(ClusterRole {
            metadata: meta(&id, None, &labels),
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
                    metadata: meta(&format!("{id}-cluster"), None, &labels),
                    rules: Some(vec![request_rule]),
                    ..ClusterRole::default()
                });
            }
        }
    }
    g.roles.push(Role {
        metadata: meta(&id, Some(namespace), &labels),
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
                metadata: meta(&deterministic_name(&id), Some(namespace), &labels),
                rules: Some(rules),
            });
            continue;
        }
        let (marker, name_part) = match ns {
            "*" => (ALL_NAMESPACES, "kratix-all-namespaces"),
            other => (other, other),
        };
        let mut labels = labels.clone();
        labels.insert(RESOURCE_NAMESPACE_LABEL.into(), marker.into());
        // Cluster-scoped, so named after the Jobs' namespace too: the rights of one namespace's
        // runs never change or go with another's.
        let role_name = deterministic_name(&format!("{id}-{namespace}-{name_part}"));
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
                role.metadata.labels.as_ref().unwrap_or(&labels),
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
            metadata: meta(&name, None, &labels),
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
        let odd = deterministic_name("db-v1_2+Build");
        assert!(odd.starts_with("db-v1-2-build-"), "{odd}");
        assert_ne!(odd, deterministic_name("db-v1-2-build"));
    }

    fn identity(version: &str, namespace: &str) -> Identity {
        Identity {
            action: crate::api::Action::Configure,
            promise: "db".into(),
            promise_version: version.into(),
            pipeline: "instance".into(),
            resource: Some(super::super::identity::Resource {
                name: "mine".into(),
                namespace: namespace.into(),
                group: "example.com".into(),
                plural: "things".into(),
            }),
        }
    }

    /// Kind, namespace and name of every object: what makes one object another.
    fn names(g: &Grants) -> Vec<String> {
        let key = |kind: &str, m: &ObjectMeta| {
            format!(
                "{kind} {}/{}",
                m.namespace.clone().unwrap_or_default(),
                m.name.clone().unwrap_or_default()
            )
        };
        let mut all = vec![key("ServiceAccount", &g.service_account.metadata)];
        all.extend(g.roles.iter().map(|o| key("Role", &o.metadata)));
        all.extend(
            g.role_bindings
                .iter()
                .map(|o| key("RoleBinding", &o.metadata)),
        );
        all.extend(
            g.cluster_roles
                .iter()
                .map(|o| key("ClusterRole", &o.metadata)),
        );
        all.extend(
            g.cluster_role_bindings
                .iter()
                .map(|o| key("ClusterRoleBinding", &o.metadata)),
        );
        all
    }

    fn versions(g: &Grants) -> Vec<Option<String>> {
        let label = |m: &ObjectMeta| {
            m.labels
                .as_ref()
                .and_then(|l| l.get(crate::api::labels::PROMISE_VERSION).cloned())
        };
        let mut all = vec![label(&g.service_account.metadata)];
        all.extend(g.roles.iter().map(|o| label(&o.metadata)));
        all.extend(g.role_bindings.iter().map(|o| label(&o.metadata)));
        all.extend(g.cluster_roles.iter().map(|o| label(&o.metadata)));
        all.extend(g.cluster_role_bindings.iter().map(|o| label(&o.metadata)));
        all
    }

    #[test]
    fn the_account_keeps_kratix_name_unless_the_promise_has_versions() {
        let named: Rbac =
            serde_json::from_value(serde_json::json!({"serviceAccount": "mine"})).expect("rbac");
        let cases = [
            ("not-set", Rbac::default(), "db-resource-configure-instance"),
            (
                "v1",
                Rbac::default(),
                deterministic_name("db-resource-configure-instance-v1").as_str(),
            ),
            ("not-set", named.clone(), "mine"),
            ("v1", named, "mine"),
        ]
        .map(|(version, rbac, want)| (version, rbac, want.to_string()));
        for (version, rbac, want) in cases {
            let id = identity(version, "team-a");
            assert_eq!(service_account_name(&id, &rbac), want, "{version} {rbac:?}");
            let g = grants(&id, &rbac, "team-a");
            assert_eq!(g.service_account.metadata.name, Some(want), "{version}");
        }
        let promise = Identity {
            resource: None,
            ..identity("not-set", "")
        };
        assert_eq!(rights_name(&promise), "db-promise-configure-instance");
        assert_eq!(
            grants(&promise, &Rbac::default(), "kratix-platform-system").cluster_roles[0]
                .metadata
                .name
                .as_deref(),
            Some("db-promise-configure-instance")
        );
    }

    #[test]
    fn each_version_and_namespace_has_rights_of_its_own() {
        let everywhere: Rbac = serde_json::from_value(serde_json::json!({"permissions": [
            {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]},
            {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"], "resourceNamespace": "vault"},
            {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get"], "resourceNamespace": "*"},
        ]}))
        .expect("rbac");
        let v1 = grants(&identity("v1", "team-a"), &everywhere, "team-a");
        let v2 = grants(&identity("v2", "team-a"), &everywhere, "team-a");
        let other_ns = grants(&identity("v1", "team-b"), &everywhere, "team-b");
        for (case, a, b) in [
            ("two versions", &v1, &v2),
            ("two namespaces", &v1, &other_ns),
        ] {
            for name in names(a) {
                assert!(!names(b).contains(&name), "{case}: {name} is shared");
            }
        }
        assert!(versions(&v1).iter().all(|v| v.as_deref() == Some("v1")));
        assert!(versions(&v2).iter().all(|v| v.as_deref() == Some("v2")));
        assert_eq!(
            v1.service_account.metadata.name.as_deref(),
            Some(rights_name(&identity("v1", "team-a")).as_str())
        );
        // Every binding names the version's own account.
        let subjects: Vec<String> = v2
            .role_bindings
            .iter()
            .flat_map(|b| b.subjects.iter().flatten())
            .chain(
                v2.cluster_role_bindings
                    .iter()
                    .flat_map(|b| b.subjects.iter().flatten()),
            )
            .map(|s| s.name.clone())
            .collect();
        assert!(!subjects.is_empty());
        assert!(subjects
            .iter()
            .all(|s| s == &rights_name(&identity("v2", "team-a"))));
    }

    #[test]
    fn an_account_the_pipeline_names_is_shared_by_every_version() {
        let named: Rbac =
            serde_json::from_value(serde_json::json!({"serviceAccount": "mine"})).expect("rbac");
        let v1 = grants(&identity("v1", "team-a"), &named, "team-a");
        let v2 = grants(&identity("v2", "team-a"), &named, "team-a");
        assert_eq!(v1.service_account, v2.service_account);
        assert_eq!(versions(&v1)[0], None, "the account carries no version");
        assert_ne!(v1.roles[0].metadata.name, v2.roles[0].metadata.name);
    }
}
