//! Status conditions in the shape Kratix (cluster-api style) writes them.

use serde::{Deserialize, Serialize};

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
}

/// Sets `cond` in `conditions`, keeping `lastTransitionTime` when the status did not change.
/// Returns true when anything changed.
pub fn set_condition(conditions: &mut Vec<Condition>, mut cond: Condition, now: &str) -> bool {
    match conditions.iter_mut().find(|c| c.type_ == cond.type_) {
        Some(existing) => {
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
        }
        None => {
            cond.last_transition_time = Some(now.to_string());
            conditions.push(cond);
            true
        }
    }
}

/// Finds a condition by type.
pub fn find<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

#[cfg(test)]
mod tests {
    use super::*;

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
