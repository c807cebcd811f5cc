//! The `KRATIX_*` environment every pipeline container gets, named and valued as in Kratix.

use crate::api::Action;
use crate::api::WorkflowType;

/// The request a resource workflow runs for, as its Promise's CRD describes it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourceObject {
    pub kind: String,
    pub group: String,
    pub version: String,
    /// Plural of the request kind's CRD (`KRATIX_CRD_PLURAL`).
    pub plural: String,
    pub name: String,
    pub namespace: String,
    pub cluster_scoped: bool,
}

/// What the workflow runs for: the Promise itself, or one request of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subject {
    Promise,
    Resource(ResourceObject),
}

/// Everything [`kratix_env`] needs to describe one pipeline run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkflowEnv {
    pub action: Action,
    pub promise_name: String,
    /// The version of the Promise (or of the PromiseRevision a request is bound to) the run
    /// uses; Kratix's `not-set` for an unversioned Promise.
    pub promise_version: String,
    pub pipeline_name: String,
    pub subject: Subject,
    pub dry_run: bool,
}

impl WorkflowEnv {
    pub fn workflow_type(&self) -> WorkflowType {
        match self.subject {
            Subject::Promise => WorkflowType::Promise,
            Subject::Resource(_) => WorkflowType::Resource,
        }
    }
}

/// The `KRATIX_*` variables of one pipeline run, in Kratix's order (pipeline_factory.go), with
/// `KRATIX_PROMISE_VERSION` beside the Promise's name. Promise workflows describe the Promise
/// object: kind `Promise`, plural `promises`, no namespace, cluster-scoped. `KRATIX_DRY_RUN`
/// is only present for dry runs.
pub fn kratix_env(w: &WorkflowEnv) -> Vec<(String, String)> {
    let (kind, group, version, name, namespace, plural, cluster_scoped) = match &w.subject {
        Subject::Promise => (
            "Promise",
            crate::api::GROUP,
            crate::api::VERSION,
            w.promise_name.as_str(),
            "",
            "promises",
            true,
        ),
        Subject::Resource(r) => (
            r.kind.as_str(),
            r.group.as_str(),
            r.version.as_str(),
            r.name.as_str(),
            r.namespace.as_str(),
            r.plural.as_str(),
            r.cluster_scoped,
        ),
    };
    let mut env: Vec<(String, String)> = [
        ("KRATIX_WORKFLOW_ACTION", w.action.as_str()),
        ("KRATIX_WORKFLOW_TYPE", w.workflow_type().as_str()),
        ("KRATIX_PROMISE_NAME", w.promise_name.as_str()),
        ("KRATIX_PROMISE_VERSION", w.promise_version.as_str()),
        ("KRATIX_PIPELINE_NAME", w.pipeline_name.as_str()),
        ("KRATIX_OBJECT_KIND", kind),
        ("KRATIX_OBJECT_GROUP", group),
        ("KRATIX_OBJECT_VERSION", version),
        ("KRATIX_OBJECT_NAME", name),
        ("KRATIX_OBJECT_NAMESPACE", namespace),
        ("KRATIX_CRD_PLURAL", plural),
        (
            "KRATIX_CLUSTER_SCOPED",
            if cluster_scoped { "true" } else { "false" },
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    if w.dry_run {
        env.push(("KRATIX_DRY_RUN".into(), "true".into()));
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resource(namespace: &str, cluster_scoped: bool) -> Subject {
        Subject::Resource(ResourceObject {
            kind: "Database".into(),
            group: "example.com".into(),
            version: "v1".into(),
            plural: "databases".into(),
            name: "mydb".into(),
            namespace: namespace.into(),
            cluster_scoped,
        })
    }

    #[test]
    fn env_matches_kratix_for_each_workflow() {
        let cases = [
            (
                "promise configure",
                Action::Configure,
                Subject::Promise,
                false,
                vec![
                    ("KRATIX_WORKFLOW_ACTION", "configure"),
                    ("KRATIX_WORKFLOW_TYPE", "promise"),
                    ("KRATIX_PROMISE_NAME", "database"),
                    ("KRATIX_PROMISE_VERSION", "v1.2.0"),
                    ("KRATIX_PIPELINE_NAME", "instance"),
                    ("KRATIX_OBJECT_KIND", "Promise"),
                    ("KRATIX_OBJECT_GROUP", "platform.kratix.io"),
                    ("KRATIX_OBJECT_VERSION", "v1alpha1"),
                    ("KRATIX_OBJECT_NAME", "database"),
                    ("KRATIX_OBJECT_NAMESPACE", ""),
                    ("KRATIX_CRD_PLURAL", "promises"),
                    ("KRATIX_CLUSTER_SCOPED", "true"),
                ],
            ),
            (
                "resource delete",
                Action::Delete,
                resource("team-a", false),
                false,
                vec![
                    ("KRATIX_WORKFLOW_ACTION", "delete"),
                    ("KRATIX_WORKFLOW_TYPE", "resource"),
                    ("KRATIX_PROMISE_NAME", "database"),
                    ("KRATIX_PROMISE_VERSION", "v1.2.0"),
                    ("KRATIX_PIPELINE_NAME", "instance"),
                    ("KRATIX_OBJECT_KIND", "Database"),
                    ("KRATIX_OBJECT_GROUP", "example.com"),
                    ("KRATIX_OBJECT_VERSION", "v1"),
                    ("KRATIX_OBJECT_NAME", "mydb"),
                    ("KRATIX_OBJECT_NAMESPACE", "team-a"),
                    ("KRATIX_CRD_PLURAL", "databases"),
                    ("KRATIX_CLUSTER_SCOPED", "false"),
                ],
            ),
            (
                "cluster-scoped resource, dry run",
                Action::Configure,
                resource("", true),
                true,
                vec![
                    ("KRATIX_WORKFLOW_ACTION", "configure"),
                    ("KRATIX_WORKFLOW_TYPE", "resource"),
                    ("KRATIX_PROMISE_NAME", "database"),
                    ("KRATIX_PROMISE_VERSION", "v1.2.0"),
                    ("KRATIX_PIPELINE_NAME", "instance"),
                    ("KRATIX_OBJECT_KIND", "Database"),
                    ("KRATIX_OBJECT_GROUP", "example.com"),
                    ("KRATIX_OBJECT_VERSION", "v1"),
                    ("KRATIX_OBJECT_NAME", "mydb"),
                    ("KRATIX_OBJECT_NAMESPACE", ""),
                    ("KRATIX_CRD_PLURAL", "databases"),
                    ("KRATIX_CLUSTER_SCOPED", "true"),
                    ("KRATIX_DRY_RUN", "true"),
                ],
            ),
        ];
        for (case, action, subject, dry_run, want) in cases {
            let got = kratix_env(&WorkflowEnv {
                action,
                promise_name: "database".into(),
                promise_version: "v1.2.0".into(),
                pipeline_name: "instance".into(),
                subject,
                dry_run,
            });
            let want: Vec<(String, String)> = want
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            assert_eq!(got, want, "{case}");
        }
    }

    #[test]
    fn selector_source_names_the_workflow_type() {
        assert_eq!(WorkflowType::Promise.selector_source(), "promise-workflow");
        assert_eq!(
            WorkflowType::Resource.selector_source(),
            "resource-workflow"
        );
    }
}
