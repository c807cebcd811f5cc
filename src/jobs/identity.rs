//! Who a pipeline run works for, read back from its `KRATIX_*` variables: the executor gets the
//! same request as the local one, and everything Kratix puts in names and labels is there.

use std::collections::BTreeMap;

/// Kratix's label keys, under the names the Job's objects use them by.
pub use crate::api::labels::{
    HASH as HASH_LABEL, MANAGED_BY as MANAGED_BY_LABEL, PIPELINE_NAME as PIPELINE_NAME_LABEL,
    PIPELINE_NAMESPACE as PIPELINE_NAMESPACE_LABEL, PROMISE_NAME as PROMISE_NAME_LABEL,
    PROMISE_VERSION as PROMISE_VERSION_LABEL, RESOURCE_NAME as RESOURCE_NAME_LABEL,
    RESOURCE_NAMESPACE as RESOURCE_NAMESPACE_LABEL, WORKFLOW_ACTION as WORKFLOW_ACTION_LABEL,
    WORKFLOW_TYPE as WORKFLOW_TYPE_LABEL,
};
pub(crate) const MANAGED_BY_VALUE: &str = "Kratix";

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Error {
    /// The run's environment lacks a variable every run has.
    #[error("pipeline run {run}: environment variable {var} is missing")]
    MissingVar { run: String, var: &'static str },
    /// `KRATIX_WORKFLOW_ACTION` or `KRATIX_WORKFLOW_TYPE` has a value Kratix does not use.
    #[error("pipeline run {run}: {var}={value:?} is not one of {allowed}")]
    BadValue {
        run: String,
        var: &'static str,
        value: String,
        allowed: &'static str,
    },
}

use crate::api::Action;

/// The request a resource workflow runs for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    pub name: String,
    /// Empty for a cluster-scoped request.
    pub namespace: String,
    pub group: String,
    pub plural: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub action: Action,
    pub promise: String,
    /// `KRATIX_PROMISE_VERSION` of the run (Kratix's `not-set` for an unversioned Promise):
    /// the pipeline's rights are per version.
    pub promise_version: String,
    pub pipeline: String,
    /// `None` for a Promise workflow.
    pub resource: Option<Resource>,
}

impl Identity {
    /// From the `KRATIX_*` variables of a run (`contract::kratix_env`).
    pub fn from_env(run: &str, env: &[(String, String)]) -> Result<Self, Error> {
        let get = |var: &'static str| {
            env.iter()
                .rev()
                .find(|(k, _)| k == var)
                .map(|(_, v)| v.clone())
                .ok_or_else(|| Error::MissingVar {
                    run: run.to_string(),
                    var,
                })
        };
        let bad = |var: &'static str, value: String, allowed: &'static str| Error::BadValue {
            run: run.to_string(),
            var,
            value,
            allowed,
        };
        let action = match get("KRATIX_WORKFLOW_ACTION")?.as_str() {
            "configure" => Action::Configure,
            "delete" => Action::Delete,
            other => {
                return Err(bad(
                    "KRATIX_WORKFLOW_ACTION",
                    other.into(),
                    "configure, delete",
                ))
            }
        };
        let resource = match get("KRATIX_WORKFLOW_TYPE")?.as_str() {
            "promise" => None,
            "resource" => Some(Resource {
                name: get("KRATIX_OBJECT_NAME")?,
                namespace: get("KRATIX_OBJECT_NAMESPACE")?,
                group: get("KRATIX_OBJECT_GROUP")?,
                plural: get("KRATIX_CRD_PLURAL")?,
            }),
            other => {
                return Err(bad(
                    "KRATIX_WORKFLOW_TYPE",
                    other.into(),
                    "promise, resource",
                ))
            }
        };
        Ok(Identity {
            action,
            promise: get("KRATIX_PROMISE_NAME")?,
            promise_version: crate::api::versions::run_version(
                get("KRATIX_PROMISE_VERSION").ok().as_deref(),
            )
            .to_string(),
            pipeline: get("KRATIX_PIPELINE_NAME")?,
            resource,
        })
    }

    pub fn workflow_type(&self) -> &'static str {
        match self.resource {
            None => "promise",
            Some(_) => "resource",
        }
    }

    /// Kratix's pipeline id, `<promise>-<promise|resource>-<action>-<pipeline>`: the name of the
    /// ServiceAccount and of the roles it gets.
    pub(crate) fn pipeline_id(&self) -> String {
        format!(
            "{}-{}-{}-{}",
            self.promise,
            self.workflow_type(),
            self.action.as_str(),
            self.pipeline
        )
    }

    /// Where the Job runs: a namespaced request's own namespace, else the system namespace.
    pub fn namespace(&self, system_namespace: &str) -> String {
        match &self.resource {
            Some(r) if !r.namespace.is_empty() => r.namespace.clone(),
            _ => system_namespace.to_string(),
        }
    }

    /// `kratix.io/promise-name` alone: what Kratix puts on the ServiceAccount and roles.
    pub(crate) fn promise_labels(&self) -> BTreeMap<String, String> {
        BTreeMap::from([(PROMISE_NAME_LABEL.to_string(), self.promise.clone())])
    }

    /// The promise, workflow and pipeline labels.
    pub(crate) fn workflow_labels(&self) -> BTreeMap<String, String> {
        let mut labels = self.promise_labels();
        labels.insert(WORKFLOW_TYPE_LABEL.into(), self.workflow_type().to_string());
        labels.insert(WORKFLOW_ACTION_LABEL.into(), self.action.as_str().into());
        labels.insert(PIPELINE_NAME_LABEL.into(), self.pipeline.clone());
        labels
    }

    /// The labels of everything one run makes (the hand-back ConfigMaps): the workflow labels,
    /// the request's name and who manages it, so that a request's deletion finds them.
    pub(crate) fn run_labels(&self) -> BTreeMap<String, String> {
        let mut labels = self.workflow_labels();
        labels.insert(MANAGED_BY_LABEL.into(), MANAGED_BY_VALUE.into());
        if let Some(r) = &self.resource {
            labels.insert(RESOURCE_NAME_LABEL.into(), r.name.clone());
        }
        labels
    }

    /// The labels of the Job and its pod; `hash` identifies the object's content, the version
    /// tells whose rights the Job uses.
    pub(crate) fn job_labels(&self, hash: &str) -> BTreeMap<String, String> {
        let mut labels = self.run_labels();
        labels.insert(HASH_LABEL.into(), hash.to_string());
        labels.insert(PROMISE_VERSION_LABEL.into(), self.promise_version.clone());
        labels
    }

    /// The labels of the pipeline's rights in `namespace` (where its Jobs run), whatever the
    /// version: the workflow labels and the namespace.
    pub(crate) fn rights_labels(&self, namespace: &str) -> BTreeMap<String, String> {
        let mut labels = self.workflow_labels();
        labels.insert(PIPELINE_NAMESPACE_LABEL.into(), namespace.into());
        labels
    }

    /// [`Identity::rights_labels`] and the run's version: the labels of the rights it runs with.
    pub(crate) fn versioned_rights_labels(&self, namespace: &str) -> BTreeMap<String, String> {
        let mut labels = self.rights_labels(namespace);
        labels.insert(PROMISE_VERSION_LABEL.into(), self.promise_version.clone());
        labels
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    const RESOURCE: &[(&str, &str)] = &[
        ("KRATIX_WORKFLOW_ACTION", "configure"),
        ("KRATIX_WORKFLOW_TYPE", "resource"),
        ("KRATIX_PROMISE_NAME", "database"),
        ("KRATIX_PIPELINE_NAME", "instance"),
        ("KRATIX_OBJECT_NAME", "mydb"),
        ("KRATIX_OBJECT_NAMESPACE", "team-a"),
        ("KRATIX_OBJECT_GROUP", "example.com"),
        ("KRATIX_CRD_PLURAL", "databases"),
    ];

    #[test]
    fn identity_is_read_from_the_kratix_variables() {
        type Want = Result<(String, &'static str), Error>;
        type Case = (&'static str, Vec<(String, String)>, Want);
        let cases: Vec<Case> = vec![
            (
                "resource in a namespace",
                env(RESOURCE),
                Ok(("database-resource-configure-instance".into(), "team-a")),
            ),
            (
                "promise workflow runs in the system namespace",
                env(&[
                    ("KRATIX_WORKFLOW_ACTION", "delete"),
                    ("KRATIX_WORKFLOW_TYPE", "promise"),
                    ("KRATIX_PROMISE_NAME", "database"),
                    ("KRATIX_PIPELINE_NAME", "cleanup"),
                ]),
                Ok(("database-promise-delete-cleanup".into(), "kratix-system")),
            ),
            (
                "cluster-scoped resource runs in the system namespace",
                env(&[
                    ("KRATIX_WORKFLOW_ACTION", "configure"),
                    ("KRATIX_WORKFLOW_TYPE", "resource"),
                    ("KRATIX_PROMISE_NAME", "database"),
                    ("KRATIX_PIPELINE_NAME", "instance"),
                    ("KRATIX_OBJECT_NAME", "mydb"),
                    ("KRATIX_OBJECT_NAMESPACE", ""),
                    ("KRATIX_OBJECT_GROUP", "example.com"),
                    ("KRATIX_CRD_PLURAL", "databases"),
                ]),
                Ok((
                    "database-resource-configure-instance".into(),
                    "kratix-system",
                )),
            ),
            (
                "unknown action",
                env(&[("KRATIX_WORKFLOW_ACTION", "build")]),
                Err(Error::BadValue {
                    run: "r".into(),
                    var: "KRATIX_WORKFLOW_ACTION",
                    value: "build".into(),
                    allowed: "configure, delete",
                }),
            ),
            (
                "missing pipeline name",
                env(&RESOURCE[..3]),
                Err(Error::MissingVar {
                    run: "r".into(),
                    var: "KRATIX_OBJECT_NAME",
                }),
            ),
        ];
        for (case, env, want) in cases {
            let got = Identity::from_env("r", &env)
                .map(|id| (id.pipeline_id(), id.namespace("kratix-system")));
            let want = want.map(|(id, ns)| (id, ns.to_string()));
            assert_eq!(got, want, "{case}");
        }
    }

    #[test]
    fn job_labels_are_kratix_labels() {
        let id = Identity::from_env("r", &env(RESOURCE)).expect("valid env");
        let got = id.job_labels("abc");
        let want = BTreeMap::from(
            [
                ("kratix.io/promise-name", "database"),
                ("kratix.io/resource-name", "mydb"),
                ("kratix.io/pipeline-name", "instance"),
                ("kratix.io/workflow-type", "resource"),
                ("kratix.io/workflow-action", "configure"),
                ("kratix.io/hash", "abc"),
                ("kratix.io/promise-version", "not-set"),
                ("app.kubernetes.io/managed-by", "Kratix"),
            ]
            .map(|(k, v)| (k.to_string(), v.to_string())),
        );
        assert_eq!(got, want);
    }
}
