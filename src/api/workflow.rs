//! Which workflow of which object: the type (`promise` or `resource`, label
//! `kratix.io/workflow-type`) and the action (`configure` or `delete`, label
//! `kratix.io/workflow-action`), as Kratix names them on its Jobs and in `KRATIX_WORKFLOW_*`.

use std::fmt;
use std::str::FromStr;

/// A label value that names no workflow type or action.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("unknown workflow type {value:?}: expected \"promise\" or \"resource\"")]
    UnknownWorkflowType { value: String },
    #[error("unknown workflow action {value:?}: expected \"configure\" or \"delete\"")]
    UnknownAction { value: String },
}

/// Which object a workflow belongs to (label `kratix.io/workflow-type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WorkflowType {
    Promise,
    Resource,
}

impl WorkflowType {
    /// The value of the `kratix.io/workflow-type` label.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Promise => "promise",
            Self::Resource => "resource",
        }
    }

    /// The `source` Kratix gives to destination selectors a pipeline of this type writes:
    /// `promise-workflow` or `resource-workflow`.
    pub fn selector_source(self) -> String {
        format!("{}-workflow", self.as_str())
    }
}

impl fmt::Display for WorkflowType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for WorkflowType {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "promise" => Ok(Self::Promise),
            "resource" => Ok(Self::Resource),
            other => Err(Error::UnknownWorkflowType {
                value: other.to_string(),
            }),
        }
    }
}

/// Which workflow of the object runs (label `kratix.io/workflow-action`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    Configure,
    Delete,
}

impl Action {
    /// The value of the `kratix.io/workflow-action` label.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Configure => "configure",
            Self::Delete => "delete",
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Action {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "configure" => Ok(Self::Configure),
            "delete" => Ok(Self::Delete),
            other => Err(Error::UnknownAction {
                value: other.to_string(),
            }),
        }
    }
}
