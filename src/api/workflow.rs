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

/// Which object a workflow belongs to (label `kratix.io/workflow-type`). Stored as its label
/// value (a PipelineRun's `spec.workflowType`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum WorkflowType {
    Promise,
    /// The default: most workflows are requests'.
    #[default]
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

/// Which workflow of the object runs (label `kratix.io/workflow-action`). Stored as its label
/// value (a PipelineRun's `spec.workflowAction`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Action {
    /// The default: every object is configured; only some are deleted.
    #[default]
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

/// Serialized as the label value, parsed back from it.
macro_rules! as_label_value {
    ($ty:ty) => {
        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                text.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

as_label_value!(WorkflowType);
as_label_value!(Action);

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn types_and_actions_are_stored_as_their_label_values() {
        for (ty, text) in [
            (WorkflowType::Promise, "promise"),
            (WorkflowType::Resource, "resource"),
        ] {
            assert_eq!(serde_json::to_value(ty).expect("serializes"), json!(text));
            assert_eq!(
                serde_json::from_value::<WorkflowType>(json!(text)).expect("parses"),
                ty
            );
        }
        for (action, text) in [(Action::Configure, "configure"), (Action::Delete, "delete")] {
            assert_eq!(
                serde_json::to_value(action).expect("serializes"),
                json!(text)
            );
            assert_eq!(
                serde_json::from_value::<Action>(json!(text)).expect("parses"),
                action
            );
        }
        let err = serde_json::from_value::<Action>(json!("destroy")).expect_err("unknown");
        assert_eq!(
            err.to_string(),
            "unknown workflow action \"destroy\": expected \"configure\" or \"delete\""
        );
    }
}
