//! Status conditions in the shape Kratix (cluster-api style) writes them, and the one reader of
//! an object's conditions: every controller and command reads them through [`of`], [`get`] and
//! [`find`] (the words they compare are in [`crate::api::words`]).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::api::Object;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub enum ConditionStatus {
    True,
    False,
    Unknown,
}

impl ConditionStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::True => "True",
            Self::False => "False",
            Self::Unknown => "Unknown",
        }
    }
}

/// One entry of `status.conditions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: ConditionStatus,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// RFC 3339 time of the last change of `status`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

impl Condition {
    pub fn new(type_: &str, status: ConditionStatus, reason: &str, message: &str) -> Self {
        Self {
            type_: type_.to_string(),
            status,
            reason: reason.to_string(),
            message: message.to_string(),
            last_transition_time: None,
            observed_generation: None,
        }
    }

    pub fn is_true(&self) -> bool {
        self.status == ConditionStatus::True
    }
}

/// Sets `cond` in `conditions`, keeping `lastTransitionTime` when the status did not change.
/// Returns true when anything changed.
pub fn set_condition(conditions: &mut Vec<Condition>, mut cond: Condition, now: &str) -> bool {
    if let Some(existing) = conditions.iter_mut().find(|c| c.type_ == cond.type_) {
        cond.last_transition_time = if existing.status == cond.status {
            existing.last_transition_time.clone()
        } else {
            Some(now.to_string())
        };
        if *existing == cond {
            return false;
        }
        *existing = cond;
        true
    } else {
        cond.last_transition_time = Some(now.to_string());
        conditions.push(cond);
        true
    }
}

/// Finds a condition by type.
pub fn find<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// Whether the condition of `type_` is there and `True`.
pub fn is_true(conditions: &[Condition], type_: &str) -> bool {
    find(conditions, type_).is_some_and(Condition::is_true)
}

/// The conditions in a status value, in their stored order. An entry that is not a condition
/// (no `type`, no `status` or one other than True, False or Unknown) is left out: whoever wrote it, it
/// says nothing we can read.
pub fn in_status(status: &Value) -> Vec<Condition> {
    status
        .get("conditions")
        .and_then(Value::as_array)
        .map(|all| {
            all.iter()
                .filter_map(|c| Condition::deserialize(c).ok())
                .collect()
        })
        .unwrap_or_default()
}

/// The conditions of an object's status.
pub fn of(obj: &Object) -> Vec<Condition> {
    obj.data.get("status").map(in_status).unwrap_or_default()
}

/// The condition of `type_` of an object's status, when there is one that reads as a condition.
pub fn get(obj: &Object, type_: &str) -> Option<Condition> {
    obj.data
        .get("status")?
        .get("conditions")?
        .as_array()?
        .iter()
        .filter(|c| c.get("type").and_then(Value::as_str) == Some(type_))
        .find_map(|c| Condition::deserialize(c).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_objects_conditions_are_read_entry_by_entry() {
        let obj = |status: Value| -> Object {
            serde_json::from_value(serde_json::json!({
                "apiVersion": "v1", "kind": "Thing", "metadata": {"name": "a"}, "status": status,
            }))
            .expect("an object")
        };
        let types = |conditions: Vec<Condition>| -> Vec<String> {
            conditions.into_iter().map(|c| c.type_).collect()
        };
        let cases = [
            ("no status", Value::Null, vec![]),
            ("no conditions", serde_json::json!({}), vec![]),
            (
                "not a list",
                serde_json::json!({"conditions": "all good"}),
                vec![],
            ),
            (
                "a misfit is left out, the others read",
                serde_json::json!({"conditions": [
                    {"type": "Ready", "status": "True"},
                    {"type": "Odd", "status": "Maybe"},
                    {"status": "True"},
                    {"type": "Reconciled", "status": "False", "reason": "r"},
                ]}),
                vec!["Ready", "Reconciled"],
            ),
            (
                "no status",
                serde_json::json!({"conditions": [{"type": "Ready"}]}),
                vec![],
            ),
        ];
        for (name, status, want) in cases {
            let o = obj(status);
            assert_eq!(types(of(&o)), want, "{name}");
            for t in &want {
                assert_eq!(get(&o, t).map(|c| c.type_), Some(t.to_string()), "{name}");
            }
            assert_eq!(get(&o, "Odd"), None, "{name}");
        }
        let ready = obj(serde_json::json!({"conditions": [
            {"type": "Ready", "status": "True"}, {"type": "Reconciled", "status": "False"}]}));
        assert!(is_true(&of(&ready), "Ready"));
        assert!(!is_true(&of(&ready), "Reconciled"));
        assert!(!is_true(&of(&ready), "Installed"));
    }

    #[test]
    fn set_condition_keeps_transition_time_when_status_is_unchanged() {
        let mut conds = vec![];
        assert!(set_condition(
            &mut conds,
            Condition::new("Ready", ConditionStatus::False, "A", "a"),
            "t1"
        ));
        assert!(set_condition(
            &mut conds,
            Condition::new("Ready", ConditionStatus::False, "B", "b"),
            "t2"
        ));
        assert_eq!(conds[0].last_transition_time.as_deref(), Some("t1"));
        assert!(set_condition(
            &mut conds,
            Condition::new("Ready", ConditionStatus::True, "B", "b"),
            "t3"
        ));
        assert_eq!(conds[0].last_transition_time.as_deref(), Some("t3"));
        assert!(!set_condition(
            &mut conds,
            Condition::new("Ready", ConditionStatus::True, "B", "b"),
            "t4"
        ));
    }
}
