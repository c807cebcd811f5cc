//! How soon a WorkPlacement whose write failed is tried again.
//!
//! Contention (somebody else kept moving the branch while the backend re-applied our changes)
//! is retried soon: the store works, and the backend already backed off between its own
//! attempts. Any other failure (an unreachable store, refused credentials) backs off with how
//! long the placement has been failing, so that a long outage is not hammered every few
//! seconds by every placement, while a short one is over quickly.

use std::time::Duration;

use crate::api::words::types;
use crate::api::{condition, ConditionStatus, Object, WorkPlacementStatus};

use crate::controllers::kube_time::parse_ms;

/// The first retry of a failure other than contention, and the shortest.
pub(crate) const FIRST_RETRY: Duration = Duration::from_secs(5);
/// The retry after contention.
pub(crate) const CONTENDED_RETRY: Duration = Duration::from_secs(1);
/// The longest wait between retries unless `KRATIX_WRITE_RETRY_MAX` says otherwise.
pub(crate) const DEFAULT_MAX_RETRY: Duration = Duration::from_secs(60);

/// The wait before the next attempt: contention [`CONTENDED_RETRY`]; otherwise half of how long
/// the placement has been failing, at least [`FIRST_RETRY`] and at most `max`.
pub(crate) fn retry_after(
    error: &statestores::Error,
    failing_for: Duration,
    max: Duration,
) -> Duration {
    if matches!(error, statestores::Error::Contended { .. }) {
        return CONTENDED_RETRY;
    }
    (failing_for / 2).clamp(FIRST_RETRY, max.max(FIRST_RETRY))
}

/// How long the placement's writes have been failing at `now_ms`: since its `WriteSucceeded`
/// condition turned False; zero when it is not False (or its time cannot be read).
pub(crate) fn failing_for(wp: &Object, now_ms: i64) -> Duration {
    let status: WorkPlacementStatus = crate::controllers::status::status_or_default(wp);
    let since = condition::find(&status.conditions, types::WRITE_SUCCEEDED)
        .filter(|c| c.status == ConditionStatus::False)
        .and_then(|c| c.last_transition_time.as_deref())
        .and_then(parse_ms);
    match since {
        Some(since) if now_ms > since => {
            Duration::from_millis(u64::try_from(now_ms - since).unwrap_or(0))
        }
        _ => Duration::ZERO,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn unreachable() -> statestores::Error {
        statestores::Error::Unreachable {
            store: "git://127.0.0.1:1/x#main".into(),
            source: "connection refused".into(),
        }
    }

    fn contended() -> statestores::Error {
        statestores::Error::Contended {
            store: "git://127.0.0.1:1/x#main".into(),
            attempts: 6,
        }
    }

    #[test]
    fn retries_back_off_with_the_length_of_the_failure_except_contention() {
        let s = Duration::from_secs;
        let cases = [
            (unreachable(), s(0), s(60), s(5)),
            (unreachable(), s(8), s(60), s(5)),
            (unreachable(), s(30), s(60), s(15)),
            (unreachable(), s(100), s(60), s(50)),
            (unreachable(), s(3600), s(60), s(60)),
            (unreachable(), s(3600), s(600), s(600)),
            // A maximum below the first retry does not make retries faster than it.
            (unreachable(), s(3600), s(1), s(5)),
            (contended(), s(0), s(60), s(1)),
            (contended(), s(3600), s(60), s(1)),
        ];
        for (error, failing, max, want) in cases {
            assert_eq!(
                retry_after(&error, failing, max),
                want,
                "{error} failing for {failing:?}, max {max:?}"
            );
        }
    }

    fn placement(conditions: Value) -> Object {
        serde_json::from_value(json!({
            "apiVersion": "platform.kratix.io/v1alpha1",
            "kind": "WorkPlacement",
            "metadata": {"name": "wp", "namespace": "default"},
            "status": {"conditions": conditions},
        }))
        .expect("a WorkPlacement")
    }

    #[test]
    fn failing_for_counts_from_when_write_succeeded_turned_false() {
        let t0 = parse_ms("2026-01-01T00:00:00Z").expect("a time");
        let cases = [
            (
                json!([{"type": "WriteSucceeded", "status": "False", "reason": "WorkloadsFailedWrite",
                        "message": "m", "lastTransitionTime": "2026-01-01T00:00:00Z"}]),
                t0 + 42_000,
                Duration::from_secs(42),
            ),
            (
                json!([{"type": "WriteSucceeded", "status": "True", "reason": "WorkloadsWrittenToStateStore",
                        "message": "m", "lastTransitionTime": "2026-01-01T00:00:00Z"}]),
                t0 + 42_000,
                Duration::ZERO,
            ),
            (
                json!([{"type": "Ready", "status": "False", "reason": "r", "message": "m",
                        "lastTransitionTime": "2026-01-01T00:00:00Z"}]),
                t0 + 42_000,
                Duration::ZERO,
            ),
            (
                json!([{"type": "WriteSucceeded", "status": "False", "reason": "r", "message": "m",
                        "lastTransitionTime": "not a time"}]),
                t0,
                Duration::ZERO,
            ),
            // A clock that went backwards.
            (
                json!([{"type": "WriteSucceeded", "status": "False", "reason": "r", "message": "m",
                        "lastTransitionTime": "2026-01-01T00:00:00Z"}]),
                t0 - 1_000,
                Duration::ZERO,
            ),
            (json!([]), t0, Duration::ZERO),
        ];
        for (conditions, now, want) in cases {
            assert_eq!(
                failing_for(&placement(conditions.clone()), now),
                want,
                "{conditions}"
            );
        }
    }
}
