//! Required Promises (`spec.requiredPromises`): a Promise is only available once every Promise
//! it requires exists at the required version (its `kratix.io/promise-version` label) and is
//! available itself. The states, reasons and messages are Kratix's:
//! <https://github.com/syntasso/kratix/blob/ae170e22e974e45bb7cfda00986057e01b3ccfde/internal/controller/promise_controller.go>
//! (`generateStatusAndMarkRequirements`, `evaluateRequirement`).

use crate::api::promise::{RequiredPromise, RequiredPromiseStatus};
use crate::api::{Condition, ConditionStatus};

/// The condition type that says whether every required Promise is there.
pub(crate) use crate::api::words::types::REQUIREMENTS_FULFILLED;

/// What is known of a required Promise that exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Installed<'a> {
    /// Its `kratix.io/promise-version` label.
    pub(crate) version: Option<&'a str>,
    /// Whether it says `status.status: Available`.
    pub(crate) available: bool,
}

/// Where one requirement stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    Installed,
    NotInstalled,
    NotInstalledAtSpecifiedVersion,
    NotAvailable,
}

impl State {
    /// Kratix's wording in `status.requiredPromises[].state`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            State::Installed => "Requirement installed",
            State::NotInstalled => "Requirement not installed",
            State::NotInstalledAtSpecifiedVersion => {
                "Requirement not installed at the specified version"
            }
            State::NotAvailable => "Requirement not available",
        }
    }

    /// The `RequirementsFulfilled` reason this state gives when it is not fulfilled.
    fn unfulfilled_reason(self) -> Option<&'static str> {
        match self {
            State::Installed => None,
            State::NotInstalled | State::NotInstalledAtSpecifiedVersion => {
                Some("RequirementsNotInstalled")
            }
            State::NotAvailable => Some("RequirementsNotAvailable"),
        }
    }
}

/// The state of one requirement, given the required Promise if it exists. An empty version
/// accepts any version.
pub(crate) fn state(required: &RequiredPromise, found: Option<Installed<'_>>) -> State {
    match found {
        None => State::NotInstalled,
        Some(p) if !required.version.is_empty() && p.version != Some(&required.version) => {
            State::NotInstalledAtSpecifiedVersion
        }
        Some(p) if !p.available => State::NotAvailable,
        Some(_) => State::Installed,
    }
}

/// Every requirement's status and the `RequirementsFulfilled` condition.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Requirements {
    pub(crate) statuses: Vec<RequiredPromiseStatus>,
    /// `None` for a Promise that requires nothing and never did: Kratix sets no condition then.
    pub(crate) condition: Option<Condition>,
}

impl Requirements {
    pub(crate) fn fulfilled(&self) -> bool {
        self.condition
            .as_ref()
            .is_none_or(|c| c.status == ConditionStatus::True)
    }
}

/// Evaluates every requirement. `found` looks a required Promise up by name; `had_requirements`
/// says whether the status still describes requirements (so removing them all says so).
pub(crate) fn evaluate<'a>(
    required: &[RequiredPromise],
    found: impl Fn(&str) -> Option<Installed<'a>>,
    had_requirements: bool,
) -> Requirements {
    if required.is_empty() && !had_requirements {
        return Requirements {
            statuses: vec![],
            condition: None,
        };
    }
    let mut reason = None;
    let statuses = required
        .iter()
        .map(|r| {
            let state = state(r, found(&r.name));
            // As in Kratix, the last unfulfilled requirement gives the reason.
            reason = state.unfulfilled_reason().or(reason);
            RequiredPromiseStatus {
                name: r.name.clone(),
                version: r.version.clone(),
                state: state.as_str().to_string(),
            }
        })
        .collect();
    let condition = match reason {
        None => Condition::new(
            REQUIREMENTS_FULFILLED,
            ConditionStatus::True,
            "RequirementsInstalled",
            "Requirements fulfilled",
        ),
        Some(reason) => Condition::new(
            REQUIREMENTS_FULFILLED,
            ConditionStatus::False,
            reason,
            "Requirements not fulfilled",
        ),
    };
    Requirements {
        statuses,
        condition: Some(condition),
    }
}

/// What `apply` warns about a Promise whose requirements are not there yet, as Kratix's
/// admission webhook does (`validateRequiredPromisesAreAvailable`). `version_of` gives the
/// `kratix.io/promise-version` label of a Promise that exists (`Some(None)` when unlabelled).
pub(crate) fn apply_warnings<'a>(
    required: &[RequiredPromise],
    version_of: impl Fn(&str) -> Option<Option<&'a str>>,
) -> Vec<String> {
    let mut warnings: Vec<String> = required
        .iter()
        .filter_map(|r| {
            let found = version_of(&r.name).map(|version| Installed {
                version,
                available: true,
            });
            match state(r, found) {
                State::NotInstalled => Some(format!(
                    "Required Promise {:?} at version {:?} not installed",
                    r.name, r.version
                )),
                State::NotInstalledAtSpecifiedVersion => Some(format!(
                    "Required Promise {:?} installed, but not at version {:?}",
                    r.name, r.version
                )),
                State::Installed | State::NotAvailable => None,
            }
        })
        .collect();
    if !warnings.is_empty() {
        warnings.push("Promise will not be available until the above issue(s) is resolved".into());
    }
    warnings
}

/// The conditions of a Promise that waits for its requirements, as Kratix sets them.
pub(crate) fn waiting_conditions() -> [Condition; 2] {
    [
        Condition::new(
            crate::api::words::types::AVAILABLE,
            ConditionStatus::False,
            "PromiseUnavailable",
            "Cannot fulfil resource requests",
        ),
        Condition::new(
            crate::controllers::workflow::decide::RECONCILED,
            ConditionStatus::Unknown,
            "RequirementsNotFulfilled",
            "Pending",
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(name: &str, version: &str) -> RequiredPromise {
        RequiredPromise {
            name: name.into(),
            version: version.into(),
        }
    }

    #[test]
    fn one_requirement() {
        let at = |version, available| {
            Some(Installed {
                version: Some(version),
                available,
            })
        };
        let unlabelled = Some(Installed {
            version: None,
            available: true,
        });
        let cases = [
            ("missing", req("db", "v1"), None, State::NotInstalled),
            (
                "at the version",
                req("db", "v1"),
                at("v1", true),
                State::Installed,
            ),
            (
                "at another version",
                req("db", "v1"),
                at("v2", true),
                State::NotInstalledAtSpecifiedVersion,
            ),
            (
                "without a version label",
                req("db", "v1"),
                unlabelled,
                State::NotInstalledAtSpecifiedVersion,
            ),
            (
                "any version",
                req("db", ""),
                at("v9", true),
                State::Installed,
            ),
            (
                "any version, unlabelled",
                req("db", ""),
                unlabelled,
                State::Installed,
            ),
            (
                "at the version, not available",
                req("db", "v1"),
                at("v1", false),
                State::NotAvailable,
            ),
            (
                "version checked before availability",
                req("db", "v1"),
                at("v2", false),
                State::NotInstalledAtSpecifiedVersion,
            ),
        ];
        for (name, required, found, want) in cases {
            assert_eq!(state(&required, found), want, "{name}");
        }
    }

    #[test]
    fn apply_warns_like_kratixs_webhook() {
        let version_of = |name: &str| match name {
            "postgresql" => Some(Some("v1")),
            "unlabelled" => Some(None),
            _ => None,
        };
        let tail = "Promise will not be available until the above issue(s) is resolved";
        let cases: Vec<(&str, Vec<RequiredPromise>, Vec<&str>)> = vec![
            ("nothing required", vec![], vec![]),
            (
                "all there",
                vec![req("postgresql", "v1"), req("unlabelled", "")],
                vec![],
            ),
            (
                "missing",
                vec![req("redis", "v2")],
                vec![
                    "Required Promise \"redis\" at version \"v2\" not installed",
                    tail,
                ],
            ),
            (
                "another version",
                vec![req("postgresql", "v2"), req("unlabelled", "v1")],
                vec![
                    "Required Promise \"postgresql\" installed, but not at version \"v2\"",
                    "Required Promise \"unlabelled\" installed, but not at version \"v1\"",
                    tail,
                ],
            ),
        ];
        for (name, required, want) in cases {
            assert_eq!(apply_warnings(&required, version_of), want, "{name}");
        }
    }

    #[test]
    fn the_condition_sums_the_requirements() {
        let installed = |name: &str| match name {
            "postgresql" => Some(Installed {
                version: Some("v1"),
                available: true,
            }),
            "nginx" => Some(Installed {
                version: Some("v2"),
                available: false,
            }),
            _ => None,
        };
        type Want = Option<(ConditionStatus, &'static str)>;
        type Case = (
            &'static str,
            Vec<RequiredPromise>,
            bool,
            Want,
            Vec<&'static str>,
        );
        let cases: Vec<Case> = vec![
            ("requires nothing", vec![], false, None, vec![]),
            (
                "requires nothing any more",
                vec![],
                true,
                Some((ConditionStatus::True, "RequirementsInstalled")),
                vec![],
            ),
            (
                "all there",
                vec![req("postgresql", "v1")],
                false,
                Some((ConditionStatus::True, "RequirementsInstalled")),
                vec!["Requirement installed"],
            ),
            (
                "one missing",
                vec![req("postgresql", "v1"), req("redis", "v1")],
                false,
                Some((ConditionStatus::False, "RequirementsNotInstalled")),
                vec!["Requirement installed", "Requirement not installed"],
            ),
            (
                "the last unfulfilled gives the reason",
                vec![req("redis", "v1"), req("nginx", "v2")],
                false,
                Some((ConditionStatus::False, "RequirementsNotAvailable")),
                vec!["Requirement not installed", "Requirement not available"],
            ),
            (
                "wrong version",
                vec![req("postgresql", "v0")],
                false,
                Some((ConditionStatus::False, "RequirementsNotInstalled")),
                vec!["Requirement not installed at the specified version"],
            ),
        ];
        for (name, required, had, want, states) in cases {
            let got = evaluate(&required, installed, had);
            let cond = got
                .condition
                .as_ref()
                .map(|c| (c.status, c.reason.as_str()));
            assert_eq!(cond, want, "{name}");
            assert_eq!(
                got.fulfilled(),
                want.is_none_or(|(s, _)| s == ConditionStatus::True),
                "{name}"
            );
            let got_states: Vec<&str> = got.statuses.iter().map(|s| s.state.as_str()).collect();
            assert_eq!(got_states, states, "{name}");
            for (s, r) in got.statuses.iter().zip(&required) {
                assert_eq!((&s.name, &s.version), (&r.name, &r.version), "{name}");
            }
        }
    }
}
