//! The object a workflow runs for: a Promise (its promise workflows) or a request (its resource
//! workflows), with the Promise, spec hash and version its runs are made for.

use crate::api::object::label;
use crate::api::WorkflowType;
use crate::api::{labels, KindInfo, Object, ObjectKey, SYSTEM_NAMESPACE};

/// The object a workflow runs for.
#[derive(Debug, Clone)]
pub(crate) struct Subject {
    pub(crate) kind: KindInfo,
    pub(crate) object: Object,
    pub(crate) promise_name: String,
    pub(crate) workflow_type: WorkflowType,
    /// `kratix.io/hash`: md5 of the Promise spec (promise workflows), or of both specs (resources).
    pub(crate) hash: String,
    /// The Promise version its workflows run at (`KRATIX_PROMISE_VERSION`): the Promise's own
    /// for promise workflows, the bound revision's for a request; `not-set` when unversioned.
    pub(crate) promise_version: String,
}

impl Subject {
    pub(crate) fn key(&self) -> ObjectKey {
        ObjectKey::of(&self.object)
    }

    pub(crate) fn name(&self) -> String {
        self.object.metadata.name.clone().unwrap_or_default()
    }

    /// What the executor's leftovers for this object belong to.
    pub(crate) fn owner(&self) -> crate::pipeline::Owner {
        match self.workflow_type {
            WorkflowType::Promise => crate::pipeline::Owner::Promise {
                name: self.promise_name.clone(),
            },
            WorkflowType::Resource => crate::pipeline::Owner::Request {
                promise: self.promise_name.clone(),
                namespace: self.object.metadata.namespace.clone().unwrap_or_default(),
                name: self.name(),
            },
        }
    }

    /// Promise workflows run in the system namespace, resource workflows in the request's.
    pub(crate) fn run_namespace(&self) -> String {
        match self.workflow_type {
            WorkflowType::Promise => SYSTEM_NAMESPACE.to_string(),
            WorkflowType::Resource => self
                .object
                .metadata
                .namespace
                .clone()
                .unwrap_or_else(|| "default".into()),
        }
    }

    /// Labels that find every run (and Work) of this object.
    pub(crate) fn selector_labels(&self) -> Vec<(String, String)> {
        let mut l = vec![
            (labels::PROMISE_NAME.to_string(), self.promise_name.clone()),
            (
                labels::WORKFLOW_TYPE.to_string(),
                self.workflow_type.as_str().to_string(),
            ),
        ];
        if self.workflow_type == WorkflowType::Resource {
            l.push((labels::RESOURCE_NAME.to_string(), self.name()));
        }
        l
    }

    pub(crate) fn manual_reconcile(&self) -> bool {
        label(&self.object, labels::MANUAL_RECONCILIATION) == Some("true")
    }
}
