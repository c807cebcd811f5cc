//! Who may read what. A run's rights are the grants Kratix gives its pipeline's service account
//! (the Job executor's own builders in `jobs::rbac`: the request's kind and Works, a Promise's
//! own kind for Promise workflows, plus the Pipeline's `rbac.permissions`, in the run's
//! namespace or in the one each permission names, `*` for every namespace), evaluated as
//! Kubernetes' RBAC evaluates Roles, ClusterRoles and their bindings. The pipeline comes from the
//! Promise version the run uses, so one version's rights never reach another's runs. People
//! with the home's kubeconfig are administrators: they read everything (Secret values
//! redacted).

use k8s_openapi::api::rbac::v1::PolicyRule;

use crate::jobs::identity::Identity;
use crate::jobs::rbac::{self, Grants};
use crate::jobs::spec::Rbac;
use crate::pipeline::RunRequest;

#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    #[error(transparent)]
    Identity(#[from] crate::jobs::identity::Error),
    /// The Pipeline's `spec.rbac` is not Kratix's `rbac`.
    #[error("pipeline {pipeline}: spec.rbac is not valid")]
    Rbac {
        pipeline: String,
        #[source]
        source: serde_json::Error,
    },
}

/// Who a token stands for.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Principal {
    /// The home's kubeconfig.
    Admin,
    Run(RunRights),
}

/// What one run may do, and who it is in messages.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RunRights {
    /// `system:serviceaccount:<namespace>:<service account>`, as Kubernetes names it.
    pub(crate) user: String,
    pub(crate) namespace: String,
    grants: Vec<Grant>,
}

/// One rule and where it holds: one namespace, or every namespace and the cluster scope.
#[derive(Debug, Clone, PartialEq)]
struct Grant {
    namespace: Option<String>,
    rule: PolicyRule,
}

/// One request, as RBAC sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ask<'a> {
    pub(crate) verb: &'a str,
    pub(crate) group: &'a str,
    /// The plural, or `plural/subresource`.
    pub(crate) resource: &'a str,
    /// `None`: cluster-scoped, or every namespace.
    pub(crate) namespace: Option<&'a str>,
    pub(crate) name: Option<&'a str>,
}

impl Principal {
    /// The name Forbidden messages give.
    pub(crate) fn user(&self) -> &str {
        match self {
            Principal::Admin => "kratix-admin",
            Principal::Run(r) => &r.user,
        }
    }

    pub(crate) fn allows(&self, ask: &Ask<'_>) -> bool {
        match self {
            Principal::Admin => true,
            Principal::Run(rights) => rights.grants.iter().any(|g| {
                let in_scope = match (&g.namespace, ask.namespace) {
                    (None, _) => true,
                    (Some(granted), Some(asked)) => granted == asked,
                    (Some(_), None) => false,
                };
                in_scope && rule_allows(&g.rule, ask)
            }),
        }
    }
}

/// The rights of `run`, from the pipeline it runs and its `KRATIX_*` variables.
pub(crate) fn of_run(run: &RunRequest) -> Result<RunRights, Error> {
    let identity = Identity::from_env(&run.run_name, &run.env)?;
    // Only `rbac`: the pipeline's other Kubernetes settings are the Job executor's business.
    let rbac_spec: Rbac = match run.pipeline.spec.extra.get("rbac") {
        None | Some(serde_json::Value::Null) => Rbac::default(),
        Some(value) => serde_json::from_value(value.clone()).map_err(|source| Error::Rbac {
            pipeline: run.pipeline.name().to_string(),
            source,
        })?,
    };
    let namespace = identity.namespace(crate::api::SYSTEM_NAMESPACE);
    let grants = rbac::grants(&identity, &rbac_spec, &namespace);
    Ok(RunRights {
        user: format!(
            "system:serviceaccount:{namespace}:{}",
            rbac::service_account_name(&identity, &rbac_spec)
        ),
        grants: bound(&grants),
        namespace,
    })
}

/// The rules each binding gives, scoped as Kubernetes scopes them: a RoleBinding to its
/// namespace (whether it binds a Role or a ClusterRole), a ClusterRoleBinding everywhere. The
/// rule the Job executor's hand-back adapters need is not Kratix's, and is left out.
fn bound(g: &Grants) -> Vec<Grant> {
    let handback = rbac::handback_rule();
    let mut out = Vec::new();
    let mut add = |namespace: Option<String>, rules: Option<&Vec<PolicyRule>>| {
        for rule in rules.into_iter().flatten() {
            if *rule != handback {
                out.push(Grant {
                    namespace: namespace.clone(),
                    rule: rule.clone(),
                });
            }
        }
    };
    for binding in &g.role_bindings {
        let ns = binding.metadata.namespace.clone();
        let name = Some(&binding.role_ref.name);
        let rules = match binding.role_ref.kind.as_str() {
            "Role" => g
                .roles
                .iter()
                .find(|r| r.metadata.name.as_ref() == name && r.metadata.namespace == ns)
                .and_then(|r| r.rules.as_ref()),
            _ => g
                .cluster_roles
                .iter()
                .find(|r| r.metadata.name.as_ref() == name)
                .and_then(|r| r.rules.as_ref()),
        };
        if ns.is_some() {
            add(ns, rules);
        }
    }
    for binding in &g.cluster_role_bindings {
        let name = Some(&binding.role_ref.name);
        let rules = g
            .cluster_roles
            .iter()
            .find(|r| r.metadata.name.as_ref() == name)
            .and_then(|r| r.rules.as_ref());
        add(None, rules);
    }
    out
}

/// Whether `rule` covers `ask`, as Kubernetes' RBAC matches a PolicyRule.
fn rule_allows(rule: &PolicyRule, ask: &Ask<'_>) -> bool {
    let has = |list: Option<&Vec<String>>, want: &str| {
        list.is_some_and(|l| l.iter().any(|v| v == "*" || v == want))
    };
    let verb = rule.verbs.iter().any(|v| v == "*" || v == ask.verb);
    let group = has(rule.api_groups.as_ref(), ask.group);
    let resource = rule.resources.as_ref().is_some_and(|l| {
        l.iter().any(|r| {
            r == "*"
                || r == ask.resource
                || ask
                    .resource
                    .split_once('/')
                    .is_some_and(|(_, sub)| r.strip_prefix("*/") == Some(sub))
        })
    });
    let names = match rule.resource_names.as_ref().filter(|n| !n.is_empty()) {
        None => true,
        Some(names) => ask.name.is_some_and(|n| names.iter().any(|v| v == n)),
    };
    verb && group && resource && names
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::pipeline::Pipeline;
    use crate::api::Action;
    use crate::pipeline::contract::{kratix_env, ResourceObject, Subject, WorkflowEnv};

    fn run(subject: Subject, rbac: serde_json::Value) -> RunRequest {
        let pipeline: Pipeline = serde_json::from_value(serde_json::json!({
            "apiVersion": "platform.kratix.io/v1alpha1",
            "kind": "Pipeline",
            "metadata": {"name": "wait"},
            "spec": {"containers": [], "rbac": rbac},
        }))
        .expect("pipeline");
        RunRequest {
            run_name: "r".into(),
            pipeline,
            env: kratix_env(&WorkflowEnv {
                action: Action::Configure,
                promise_name: "app".into(),
                promise_version: "v1".into(),
                pipeline_name: "wait".into(),
                subject,
                dry_run: false,
            }),
            ..RunRequest::default()
        }
    }

    fn request(namespace: &str) -> Subject {
        Subject::Resource(ResourceObject {
            kind: "App".into(),
            group: "example.com".into(),
            version: "v1".into(),
            plural: "apps".into(),
            name: "a1".into(),
            namespace: namespace.into(),
            cluster_scoped: false,
        })
    }

    fn ask<'a>(verb: &'a str, group: &'a str, resource: &'a str, ns: Option<&'a str>) -> Ask<'a> {
        Ask {
            verb,
            group,
            resource,
            namespace: ns,
            name: Some("x"),
        }
    }

    #[test]
    fn runs_get_kratix_defaults_and_their_permissions_and_nothing_else() {
        let permissions = serde_json::json!({"permissions": [
            {"apiGroups": ["marketplace.kratix.io"], "resources": ["postgresqls"], "verbs": ["get", "list"]},
            {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"], "resourceNamespace": "*"},
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"], "resourceNamespace": "vault"},
            {"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"], "resourceNames": ["only"]},
        ]});
        let resource =
            Principal::Run(of_run(&run(request("team-a"), permissions)).expect("rights"));
        let promise =
            Principal::Run(of_run(&run(Subject::Promise, serde_json::json!({}))).expect("rights"));
        let g = crate::api::GROUP;
        let cases = [
            (
                "own kind in its namespace",
                &resource,
                ask("get", "example.com", "apps", Some("team-a")),
                true,
            ),
            (
                "own kind's status",
                &resource,
                ask("get", "example.com", "apps/status", Some("team-a")),
                true,
            ),
            (
                "own kind elsewhere",
                &resource,
                ask("get", "example.com", "apps", Some("team-b")),
                false,
            ),
            (
                "own kind, every namespace",
                &resource,
                ask("list", "example.com", "apps", None),
                false,
            ),
            (
                "own kind, watch is not granted",
                &resource,
                ask("watch", "example.com", "apps", Some("team-a")),
                false,
            ),
            (
                "works in its namespace",
                &resource,
                ask("watch", g, "works", Some("team-a")),
                true,
            ),
            (
                "granted kind, own namespace",
                &resource,
                ask(
                    "list",
                    "marketplace.kratix.io",
                    "postgresqls",
                    Some("team-a"),
                ),
                true,
            ),
            (
                "granted kind, other namespace",
                &resource,
                ask(
                    "get",
                    "marketplace.kratix.io",
                    "postgresqls",
                    Some("team-b"),
                ),
                false,
            ),
            (
                "secrets anywhere",
                &resource,
                ask("get", "", "secrets", Some("team-z")),
                true,
            ),
            (
                "secrets listed nowhere",
                &resource,
                ask("list", "", "secrets", Some("team-z")),
                false,
            ),
            (
                "configmaps in the namespace named",
                &resource,
                ask("get", "", "configmaps", Some("vault")),
                true,
            ),
            (
                "configmaps elsewhere",
                &resource,
                ask("get", "", "configmaps", Some("team-a")),
                false,
            ),
            (
                "a named secret only",
                &resource,
                Ask {
                    name: Some("only"),
                    ..ask("list", "", "secrets", Some("team-a"))
                },
                true,
            ),
            (
                "another named secret",
                &resource,
                Ask {
                    name: None,
                    ..ask("list", "", "secrets", Some("team-a"))
                },
                false,
            ),
            (
                "promises",
                &resource,
                ask("get", g, "promises", None),
                false,
            ),
            (
                "promise workflow: promises",
                &promise,
                ask("get", g, "promises", None),
                true,
            ),
            (
                "promise workflow: works anywhere",
                &promise,
                ask("list", g, "works", None),
                true,
            ),
            (
                "promise workflow: secrets",
                &promise,
                ask("get", "", "secrets", Some("kratix-platform-system")),
                false,
            ),
            (
                "no hand-back configmaps",
                &promise,
                ask("get", "", "configmaps", Some("kratix-platform-system")),
                false,
            ),
            (
                "admin",
                &Principal::Admin,
                ask("list", "", "secrets", None),
                true,
            ),
        ];
        for (what, who, ask, want) in cases {
            assert_eq!(who.allows(&ask), want, "{what}: {ask:?}");
        }
        assert_eq!(
            resource.user(),
            // The pipeline's account of the run's Promise version, as the Job executor names it.
            "system:serviceaccount:team-a:app-resource-configure-wait-v1-df79a"
        );
        let bad = of_run(&run(
            request("a"),
            serde_json::json!({"permissions": "all"}),
        ))
        .expect_err("refused");
        assert_eq!(bad.to_string(), "pipeline wait: spec.rbac is not valid");
        assert_eq!(
            promise.user(),
            "system:serviceaccount:kratix-platform-system:app-promise-configure-wait-v1-d840a"
        );
    }
}
