//! What a request's binding decides, with no I/O: the version a binding asks for, and the
//! binding's upgrade status once the workflow for a version stands where it does.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::api::versions::{ResourceBindingStatus, LATEST, UPGRADE_SUCCEEDED};
use crate::api::{condition, labels, Condition, ConditionStatus};
use crate::controllers::workflow::decide::Step;

/// How a new request's binding picks its version (`KRATIX_RESOURCE_BINDING_VERSION`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Strategy {
    /// `spec.version: latest`: the request follows each new latest revision.
    #[default]
    Floating,
    /// `spec.version` is the latest revision's version when the binding is made.
    Pinned,
}

impl Strategy {
    /// The setting's value; anything else is `floating`, as in Kratix.
    pub(crate) fn parse(value: Option<&str>) -> Self {
        match value.map(str::trim) {
            Some("pinned") => Strategy::Pinned,
            _ => Strategy::Floating,
        }
    }
}

/// The version a request's binding asks for: the binding's own; else the one the request last
/// recorded (`status.resourceBindingVersion`, for a binding deleted by hand); else, for a new
/// request, per the strategy. `None` when pinned and no revision is latest yet.
pub(crate) fn desired_version(
    binding: Option<&str>,
    recorded: Option<&str>,
    strategy: Strategy,
    latest: Option<&str>,
) -> Option<String> {
    let given = binding.or(recorded).filter(|v| !v.is_empty());
    match (given, strategy) {
        (Some(v), _) => Some(v.to_string()),
        (None, Strategy::Floating) => Some(LATEST.to_string()),
        (None, Strategy::Pinned) => latest.map(str::to_string),
    }
}

/// The labels a request's binding carries (Kratix's `updateResourceBinding`): the request's
/// own, so that a label added, changed or removed on the request is on the binding the same way;
/// then Kratix's labels that find the binding, which always win. The request's
/// manual-reconciliation label is not copied (the binding's controller would re-run the request
/// each time it saw it), but a binding's own, set to re-run an upgrade, stays until it is done.
pub(crate) fn labels_for(
    request: &BTreeMap<String, String>,
    finding: &[(String, String)],
    binding: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut merged = request.clone();
    merged.remove(labels::MANUAL_RECONCILIATION);
    merged.extend(finding.iter().cloned());
    if binding
        .get(labels::MANUAL_RECONCILIATION)
        .is_some_and(|v| v == "true")
    {
        merged.insert(
            labels::MANUAL_RECONCILIATION.to_string(),
            "true".to_string(),
        );
    }
    merged
}

/// Where the request's configure workflow stands for the version it runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome<'a> {
    InProgress,
    Succeeded,
    Failed(&'a str),
}

impl<'a> Outcome<'a> {
    /// From the workflow's step; `failure` is the failed pipeline's message.
    pub(crate) fn of(step: &Step, failure: &'a str) -> Self {
        match step {
            Step::Completed { .. } | Step::NothingToRun => Outcome::Succeeded,
            Step::Failed { .. } => Outcome::Failed(failure),
            Step::Wait | Step::Start { .. } | Step::Suspended { .. } => Outcome::InProgress,
        }
    }
}

/// The binding's status once the workflow for `attempted` stands at `outcome` (Kratix's
/// `syncResourceBindingUpgradeStatus` and `applyResourceBindingUpgradeStatus`). A first
/// reconcile only records `lastAppliedVersion`; `UpgradeSucceeded` appears once a version
/// changed or failed.
pub(crate) fn next_status(
    current: &ResourceBindingStatus,
    attempted: &str,
    outcome: Outcome<'_>,
    now: &str,
) -> ResourceBindingStatus {
    let mut next = current.clone();
    let existing = condition::find(&current.conditions, UPGRADE_SUCCEEDED);
    let upgrade = |status, reason, message: String| {
        Condition::new(UPGRADE_SUCCEEDED, status, reason, &message)
    };
    let condition = match outcome {
        Outcome::InProgress => {
            let mark = !current.failed_version.is_empty()
                || existing.is_some_and(|c| c.status == ConditionStatus::False)
                || (!current.last_applied_version.is_empty()
                    && current.last_applied_version != attempted);
            if !mark {
                return next;
            }
            next.failed_version.clear();
            Some(upgrade(
                ConditionStatus::Unknown,
                "UpgradeInProgress",
                format!("Upgrade to version {attempted} is in progress"),
            ))
        }
        Outcome::Succeeded => {
            let record = !current.failed_version.is_empty()
                || existing.is_some_and(|c| {
                    c.reason == "UpgradeInProgress" || c.status == ConditionStatus::False
                })
                || (!current.last_applied_version.is_empty()
                    && current.last_applied_version != attempted);
            next.last_applied_version = attempted.to_string();
            next.failed_version.clear();
            record.then(|| {
                upgrade(
                    ConditionStatus::True,
                    "UpgradeComplete",
                    format!("Resource is at version {attempted}"),
                )
            })
        }
        Outcome::Failed(message) => {
            next.failed_version = attempted.to_string();
            Some(upgrade(
                ConditionStatus::False,
                "UpgradeFailed",
                message.to_string(),
            ))
        }
    };
    if let Some(c) = condition {
        condition::set_condition(&mut next.conditions, c, now);
    }
    next
}

/// What a bound request records of its binding in its own status (see
/// `binding::request_versions`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RequestVersions {
    pub(crate) completed: Option<String>,
    pub(crate) binding: String,
}

impl RequestVersions {
    /// Writes them into a request's status.
    pub(crate) fn apply(&self, status: &mut Value) {
        if let Some(version) = &self.completed {
            crate::controllers::status_value::set_field(status, "promiseVersion", json!(version));
        }
        crate::controllers::status_value::set_field(
            status,
            "resourceBindingVersion",
            json!(self.binding),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_bindings_follow_the_strategy_and_existing_ones_keep_their_version() {
        use Strategy::{Floating, Pinned};
        let cases = [
            (
                "new, floating",
                None,
                None,
                Floating,
                Some("v2"),
                Some("latest"),
            ),
            ("new, pinned", None, None, Pinned, Some("v2"), Some("v2")),
            ("new, pinned, no latest yet", None, None, Pinned, None, None),
            (
                "bound to a version",
                Some("v1"),
                None,
                Floating,
                Some("v2"),
                Some("v1"),
            ),
            (
                "bound to latest, pinned",
                Some("latest"),
                None,
                Pinned,
                Some("v2"),
                Some("latest"),
            ),
            (
                "binding deleted: recorded",
                None,
                Some("v1"),
                Floating,
                Some("v2"),
                Some("v1"),
            ),
            (
                "binding wins over recorded",
                Some("v2"),
                Some("v1"),
                Pinned,
                Some("v2"),
                Some("v2"),
            ),
            (
                "an empty binding version",
                Some(""),
                None,
                Floating,
                Some("v2"),
                Some("latest"),
            ),
        ];
        for (name, binding, recorded, strategy, latest, want) in cases {
            let got = desired_version(binding, recorded, strategy, latest);
            assert_eq!(got.as_deref(), want, "{name}");
        }
        let parse = [
            (None, Floating),
            (Some("pinned"), Pinned),
            (Some(" pinned "), Pinned),
            (Some("floating"), Floating),
            (Some("Pinned"), Floating),
        ];
        for (value, want) in parse {
            assert_eq!(Strategy::parse(value), want, "{value:?}");
        }
    }

    #[test]
    fn bindings_carry_their_request_s_labels_and_kratix_s_win() {
        let map = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let finding = [
            (labels::PROMISE_NAME.to_string(), "db".to_string()),
            (labels::RESOURCE_NAME.to_string(), "a".to_string()),
        ];
        let kratix = [(labels::PROMISE_NAME, "db"), (labels::RESOURCE_NAME, "a")];
        let with = |extra: &[(&str, &str)]| {
            let mut all = map(&kratix);
            all.extend(map(extra));
            all
        };
        let manual = labels::MANUAL_RECONCILIATION;
        // (case, request's labels, binding's labels, want)
        let cases = [
            ("no labels of its own", map(&[]), map(&[]), with(&[])),
            (
                "a label is copied",
                map(&[("environment", "staging")]),
                with(&[]),
                with(&[("environment", "staging")]),
            ),
            (
                "a changed label follows",
                map(&[("environment", "production")]),
                with(&[("environment", "staging")]),
                with(&[("environment", "production")]),
            ),
            (
                "a removed label goes",
                map(&[]),
                with(&[("environment", "staging")]),
                with(&[]),
            ),
            (
                "kratix's labels win",
                map(&[
                    (labels::PROMISE_NAME, "other"),
                    (labels::RESOURCE_NAME, "b"),
                ]),
                with(&[]),
                with(&[]),
            ),
            (
                "the request's manual reconciliation is not copied",
                map(&[(manual, "true")]),
                with(&[]),
                with(&[]),
            ),
            (
                "the binding's own manual reconciliation stays",
                map(&[]),
                with(&[(manual, "true")]),
                with(&[(manual, "true")]),
            ),
            (
                "a binding's manual label other than true goes",
                map(&[]),
                with(&[(manual, "false")]),
                with(&[]),
            ),
        ];
        for (name, request, binding, want) in cases {
            assert_eq!(labels_for(&request, &finding, &binding), want, "{name}");
        }
    }

    fn st(
        applied: &str,
        failed: &str,
        cond: Option<(ConditionStatus, &str)>,
    ) -> ResourceBindingStatus {
        ResourceBindingStatus {
            conditions: cond
                .map(|(s, r)| Condition::new(UPGRADE_SUCCEEDED, s, r, "m"))
                .into_iter()
                .collect(),
            last_applied_version: applied.into(),
            failed_version: failed.into(),
            health_status: None,
        }
    }

    #[test]
    fn upgrades_are_reported_as_kratix_reports_them() {
        use ConditionStatus::{False, True, Unknown};
        // (case, current, attempted, outcome, applied, failed, condition)
        type Want<'a> = (
            &'a str,
            &'a str,
            Option<(ConditionStatus, &'a str, &'a str)>,
        );
        let cases: Vec<(&str, ResourceBindingStatus, &str, Outcome, Want)> = vec![
            (
                "first run in progress",
                st("", "", None),
                "v1",
                Outcome::InProgress,
                ("", "", None),
            ),
            (
                "first run done: no condition",
                st("", "", None),
                "v1",
                Outcome::Succeeded,
                ("v1", "", None),
            ),
            (
                "upgrade in progress",
                st("v1", "", None),
                "v2",
                Outcome::InProgress,
                (
                    "v1",
                    "",
                    Some((
                        Unknown,
                        "UpgradeInProgress",
                        "Upgrade to version v2 is in progress",
                    )),
                ),
            ),
            (
                "upgrade done",
                st("v1", "", Some((Unknown, "UpgradeInProgress"))),
                "v2",
                Outcome::Succeeded,
                (
                    "v2",
                    "",
                    Some((True, "UpgradeComplete", "Resource is at version v2")),
                ),
            ),
            (
                "upgrade failed",
                st("v1", "", Some((Unknown, "UpgradeInProgress"))),
                "v2",
                Outcome::Failed("A Configure Pipeline has failed"),
                (
                    "v1",
                    "v2",
                    Some((False, "UpgradeFailed", "A Configure Pipeline has failed")),
                ),
            ),
            (
                "first run failed",
                st("", "", None),
                "v1",
                Outcome::Failed("boom"),
                ("", "v1", Some((False, "UpgradeFailed", "boom"))),
            ),
            (
                "retry after failure is in progress again",
                st("v1", "v2", Some((False, "UpgradeFailed"))),
                "v2",
                Outcome::InProgress,
                (
                    "v1",
                    "",
                    Some((
                        Unknown,
                        "UpgradeInProgress",
                        "Upgrade to version v2 is in progress",
                    )),
                ),
            ),
            (
                "back to the applied version after a failure",
                st("v1", "v2", Some((False, "UpgradeFailed"))),
                "v1",
                Outcome::Succeeded,
                (
                    "v1",
                    "",
                    Some((True, "UpgradeComplete", "Resource is at version v1")),
                ),
            ),
            (
                "steady state stays quiet",
                st("v1", "", None),
                "v1",
                Outcome::Succeeded,
                ("v1", "", None),
            ),
            (
                "steady re-run stays quiet",
                st("v1", "", None),
                "v1",
                Outcome::InProgress,
                ("v1", "", None),
            ),
        ];
        for (name, current, attempted, outcome, (applied, failed, cond)) in cases {
            let got = next_status(&current, attempted, outcome, "2026-01-01T00:00:00Z");
            assert_eq!(got.last_applied_version, applied, "{name}");
            assert_eq!(got.failed_version, failed, "{name}");
            let c = condition::find(&got.conditions, UPGRADE_SUCCEEDED)
                .map(|c| (c.status, c.reason.as_str(), c.message.as_str()));
            match cond {
                Some(want) => assert_eq!(c, Some(want), "{name}"),
                None => assert!(
                    c.is_none() || current.conditions == got.conditions,
                    "{name}: {c:?}"
                ),
            }
        }
    }
}
