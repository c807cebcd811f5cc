//! The `Ready` condition of state stores and Destinations, decided from what was observed.
//! Either kind is looked at again soon while not ready.

use crate::api::destination::StateStoreRef;
use crate::api::words::{reasons, store_status, types};
use crate::api::{Condition, ConditionStatus};

/// What opening and probing a state store showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StoreProbe<'a> {
    /// The backend could not be opened (no Secret, a bad URL…): `reason` says why.
    NotOpened { reason: &'a str, message: &'a str },
    /// Opened, but the write-permission check failed.
    AccessFailed { error: &'a str },
    /// Opened and writable; `unverified` says why the server's certificate was not checked.
    Writable { unverified: Option<&'a str> },
}

/// A state store's `Ready` condition.
pub(crate) fn store_ready(probe: StoreProbe) -> Condition {
    match probe {
        StoreProbe::NotOpened { reason, message } => {
            Condition::new(types::READY, ConditionStatus::False, reason, message)
        }
        StoreProbe::AccessFailed { error } => Condition::new(
            types::READY,
            ConditionStatus::False,
            "ErrorValidatingPermissions",
            &format!("write permission validation failed: {error}"),
        ),
        StoreProbe::Writable { unverified: None } => Condition::new(
            types::READY,
            ConditionStatus::True,
            "StateStoreReady",
            "State store is ready",
        ),
        StoreProbe::Writable {
            unverified: Some(why),
        } => Condition::new(
            types::READY,
            ConditionStatus::True,
            "StateStoreReady",
            &format!("State store is ready; {why}"),
        ),
    }
}

/// The one-word `status.status` a state store shows beside its condition.
pub(crate) fn store_status_word(ready: &Condition) -> &'static str {
    if ready.status == ConditionStatus::True {
        store_status::READY
    } else {
        store_status::NOT_READY
    }
}

/// A Destination is only as ready as its store: a store whose own `Ready` is False makes the
/// Destination not ready, with the store's message. `None` when the store does not say so.
pub(crate) fn mirrored_store_failure(
    store_ref: &StateStoreRef,
    store_ready: Option<&Condition>,
) -> Option<Condition> {
    let store = store_ready.filter(|c| c.status == ConditionStatus::False)?;
    Some(Condition::new(
        types::READY,
        ConditionStatus::False,
        reasons::STATE_STORE_NOT_READY,
        &format!("{} {}: {}", store_ref.kind, store_ref.name, store.message),
    ))
}

/// What the Destination controller sees before writing anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DestinationSeen {
    pub(crate) store_ready: bool,
    pub(crate) destination_ready: bool,
    /// Its status was written for its current generation.
    pub(crate) observed_current: bool,
    pub(crate) has_finalizer: bool,
}

/// Everything is in place: the canary files need not be written again.
pub(crate) fn destination_settled(seen: DestinationSeen) -> bool {
    seen.store_ready && seen.destination_ready && seen.observed_current && seen.has_finalizer
}

/// What writing the Destination's canary files came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CanaryWrite<'a> {
    /// The store could not be opened: `reason` as the store reports it.
    StoreUnavailable {
        reason: &'a str,
        message: &'a str,
    },
    /// Written (`enabled`) or removed (`initWorkloads.enabled: false`).
    Done {
        enabled: bool,
    },
    Failed {
        error: &'a str,
    },
}

/// A Destination's `Ready` condition once its canary files were written (or not).
pub(crate) fn destination_ready(write: CanaryWrite) -> Condition {
    match write {
        CanaryWrite::StoreUnavailable { reason, message } => Condition::new(
            types::READY,
            ConditionStatus::False,
            if reason == reasons::STATE_STORE_NOT_FOUND {
                reasons::STATE_STORE_NOT_FOUND
            } else {
                reasons::STATE_STORE_NOT_READY
            },
            message,
        ),
        CanaryWrite::Done { enabled: true } => Condition::new(
            types::READY,
            ConditionStatus::True,
            "TestDocumentsWritten",
            "Test documents written to State Store",
        ),
        CanaryWrite::Done { enabled: false } => Condition::new(
            types::READY,
            ConditionStatus::True,
            "DestinationReady",
            "Ready",
        ),
        CanaryWrite::Failed { error } => Condition::new(
            types::READY,
            ConditionStatus::False,
            "StateStoreWriteFailed",
            error,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A condition's status, reason and message.
    type Said = (ConditionStatus, String, String);

    fn said(c: &Condition) -> Said {
        (c.status, c.reason.clone(), c.message.clone())
    }

    fn want(status: ConditionStatus, reason: &str, message: &str) -> Said {
        (status, reason.into(), message.into())
    }

    use ConditionStatus::{False, True, Unknown};

    #[test]
    fn store_readiness_follows_the_probe() {
        let cases = [
            (
                StoreProbe::NotOpened {
                    reason: "SecretNotFound",
                    message: "Secret default/s not found",
                },
                want(False, "SecretNotFound", "Secret default/s not found"),
                "NotReady",
            ),
            (
                StoreProbe::AccessFailed {
                    error: "permission denied",
                },
                want(
                    False,
                    "ErrorValidatingPermissions",
                    "write permission validation failed: permission denied",
                ),
                "NotReady",
            ),
            (
                StoreProbe::Writable { unverified: None },
                want(True, "StateStoreReady", "State store is ready"),
                "Ready",
            ),
            (
                StoreProbe::Writable {
                    unverified: Some("the server's TLS certificate is not verified"),
                },
                want(
                    True,
                    "StateStoreReady",
                    "State store is ready; the server's TLS certificate is not verified",
                ),
                "Ready",
            ),
        ];
        for (probe, expected, word) in cases {
            let c = store_ready(probe);
            assert_eq!(c.type_, "Ready", "{probe:?}");
            assert_eq!(said(&c), expected, "{probe:?}");
            assert_eq!(store_status_word(&c), word, "{probe:?}");
        }
    }

    #[test]
    fn a_destination_mirrors_only_a_store_that_says_it_is_not_ready() {
        let store_ref = StateStoreRef {
            kind: "GitStateStore".into(),
            name: "g".into(),
        };
        let cond = |s| Condition::new("Ready", s, "r", "unreachable");
        let cases = [
            ("store says nothing", None, None),
            ("store ready", Some(cond(True)), None),
            ("store unknown", Some(cond(Unknown)), None),
            (
                "store not ready",
                Some(cond(False)),
                Some(want(
                    False,
                    "StateStoreNotReady",
                    "GitStateStore g: unreachable",
                )),
            ),
        ];
        for (name, store, expected) in cases {
            let got = mirrored_store_failure(&store_ref, store.as_ref());
            assert_eq!(got.as_ref().map(said), expected, "{name}");
        }
    }

    #[test]
    fn a_destination_is_settled_only_when_everything_holds() {
        let all = DestinationSeen {
            store_ready: true,
            destination_ready: true,
            observed_current: true,
            has_finalizer: true,
        };
        let cases = [
            ("all in place", all, true),
            (
                "store not ready",
                DestinationSeen {
                    store_ready: false,
                    ..all
                },
                false,
            ),
            (
                "destination not ready",
                DestinationSeen {
                    destination_ready: false,
                    ..all
                },
                false,
            ),
            (
                "new generation",
                DestinationSeen {
                    observed_current: false,
                    ..all
                },
                false,
            ),
            (
                "no finalizer yet",
                DestinationSeen {
                    has_finalizer: false,
                    ..all
                },
                false,
            ),
        ];
        for (name, seen, expected) in cases {
            assert_eq!(destination_settled(seen), expected, "{name}");
        }
    }

    #[test]
    fn destination_readiness_follows_the_canary_write() {
        let cases = [
            (
                CanaryWrite::StoreUnavailable {
                    reason: "StateStoreNotFound",
                    message: "GitStateStore g not found",
                },
                want(False, "StateStoreNotFound", "GitStateStore g not found"),
            ),
            (
                CanaryWrite::StoreUnavailable {
                    reason: "SecretNotFound",
                    message: "no Secret",
                },
                want(False, "StateStoreNotReady", "no Secret"),
            ),
            (
                CanaryWrite::Done { enabled: true },
                want(
                    True,
                    "TestDocumentsWritten",
                    "Test documents written to State Store",
                ),
            ),
            (
                CanaryWrite::Done { enabled: false },
                want(True, "DestinationReady", "Ready"),
            ),
            (
                CanaryWrite::Failed { error: "refused" },
                want(False, "StateStoreWriteFailed", "refused"),
            ),
        ];
        for (write, expected) in cases {
            let c = destination_ready(write);
            assert_eq!(c.type_, "Ready", "{write:?}");
            assert_eq!(said(&c), expected, "{write:?}");
        }
    }
}
