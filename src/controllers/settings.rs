//! The controllers' tunables, read from the environment.

use std::time::Duration;

use crate::controllers::placement::retry;
use crate::controllers::workflow::intervals;

/// Tunables, from the environment.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Longest a pipeline run may take (`KRATIX_PIPELINE_TIMEOUT` seconds, default 600).
    pub(crate) pipeline_timeout: Duration,
    /// How often everything is looked at again even without changes (`KRATIX_RESYNC` seconds).
    pub(crate) resync: Duration,
    /// How often a ready state store's access is checked again, so that an outage shows on the
    /// store and its Destinations (`KRATIX_STORE_RECHECK` seconds, default 60).
    pub(crate) store_recheck: Duration,
    /// How long stopping controllers let the pipeline runs they carry out finish before killing
    /// them and giving their claims back (`KRATIX_SHUTDOWN_GRACE` seconds, default 10).
    pub(crate) shutdown_grace: Duration,
    /// The longest wait between retries of a write that keeps failing; they start at 5 s and
    /// grow with the failure (`KRATIX_WRITE_RETRY_MAX` seconds, default 60).
    pub(crate) write_retry_max: Duration,
    /// How long one Git operation (fetch, push and their re-applies) may take before it fails
    /// as unreachable (`KRATIX_GIT_TIMEOUT` seconds, default 60).
    pub(crate) git_timeout: Duration,
    /// How many pipeline runs (of different objects) may run at once (`KRATIX_MAX_PARALLEL`,
    /// default the number of cores; [`NO_PIPELINE_CAP`] when the runs are Jobs on a cluster and
    /// the setting is unset, see [`pipeline_slots`]). One object's pipelines run one after
    /// another whatever this is: a workflow creates its next run only once the previous one
    /// finished.
    pub(crate) max_parallel: usize,
    /// How a new request of a versioned Promise is bound to a version
    /// (`KRATIX_RESOURCE_BINDING_VERSION`: `floating`, the default, or `pinned`).
    pub(crate) binding_strategy: crate::controllers::request::binding::Strategy,
    /// Reconciliation intervals: `KRATIX_RECONCILIATION_INTERVAL` (a Go duration or seconds,
    /// default Kratix's `10h`), `KRATIX_MIN_RECONCILIATION_INTERVAL` (default `1m`, Kratix's
    /// floor) and `KRATIX_RECONCILE_AFTER_FAILURE` (default `true`).
    pub(crate) intervals: intervals::Policy,
    /// How often every written placement is written again, restoring its files where others
    /// changed or deleted them in the store (`KRATIX_STATE_STORE_RECONCILIATION_INTERVAL`, a Go
    /// duration or seconds, default Kratix's `10h`; `0` turns it off).
    pub(crate) drift_interval: Option<Duration>,
    /// How many objects are reconciled at once (`KRATIX_WORKERS`; by default twice
    /// `max_parallel`, or [`UNCAPPED_WORKERS`] without a cap, see [`Settings::workers`]).
    /// Never two for one object.
    pub(crate) workers: Option<usize>,
    /// How often a platform Destination is applied again even when nothing was written for it,
    /// repairing drift (`KRATIX_PLATFORM_SYNC_INTERVAL`, seconds or a Go duration, default 30).
    pub(crate) platform_sync_interval: Duration,
    /// At most this many objects are applied for one platform Destination
    /// (`KRATIX_PLATFORM_SYNC_MAX_OBJECTS`, default 10000).
    pub(crate) platform_sync_max_objects: usize,
    /// How often the platform sync may change one object within a window
    /// (`KRATIX_PLATFORM_SYNC_MAX_CHANGES`, default 20, within
    /// `KRATIX_PLATFORM_SYNC_CHANGE_WINDOW`, seconds or a Go duration, default 5m): a loop
    /// between Promises is held there instead of spinning for ever.
    pub(crate) platform_sync_budget: crate::controllers::platform_sync::budget::Budget,
}

/// The pipeline slots when nothing caps them: the most permits a semaphore holds.
pub(crate) const NO_PIPELINE_CAP: usize = tokio::sync::Semaphore::MAX_PERMITS;

/// Reconcile workers when pipeline runs are not capped: what twice the former cap of eight
/// gave on Kubernetes, where a reconcile mostly waits on the API server.
pub(crate) const UNCAPPED_WORKERS: usize = 16;

/// The environment variable of [`Settings::max_parallel`].
pub(crate) const MAX_PARALLEL_ENV: &str = "KRATIX_MAX_PARALLEL";

/// The environment variable of [`Settings::binding_strategy`].
pub(crate) const BINDING_VERSION_ENV: &str = "KRATIX_RESOURCE_BINDING_VERSION";

impl Settings {
    pub(crate) fn from_env() -> Self {
        let secs = |name: &str, default: u64| {
            std::env::var(name)
                .ok()
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(default)
        };
        Self {
            pipeline_timeout: Duration::from_secs(secs("KRATIX_PIPELINE_TIMEOUT", 600)),
            resync: Duration::from_secs(secs("KRATIX_RESYNC", 300)),
            store_recheck: Duration::from_secs(secs("KRATIX_STORE_RECHECK", 60)),
            shutdown_grace: Duration::from_secs(secs("KRATIX_SHUTDOWN_GRACE", 10)),
            write_retry_max: Duration::from_secs(secs(
                "KRATIX_WRITE_RETRY_MAX",
                retry::DEFAULT_MAX_RETRY.as_secs(),
            )),
            git_timeout: Duration::from_secs(secs("KRATIX_GIT_TIMEOUT", 60).max(1)),
            max_parallel: max_parallel(std::env::var(MAX_PARALLEL_ENV).ok().as_deref()),
            binding_strategy: crate::controllers::request::binding::Strategy::parse(
                std::env::var(BINDING_VERSION_ENV).ok().as_deref(),
            ),
            intervals: intervals::Policy {
                default: duration_from_env(
                    "KRATIX_RECONCILIATION_INTERVAL",
                    intervals::DEFAULT_INTERVAL,
                ),
                minimum: duration_from_env(
                    "KRATIX_MIN_RECONCILIATION_INTERVAL",
                    intervals::MIN_INTERVAL,
                ),
                after_failure: std::env::var("KRATIX_RECONCILE_AFTER_FAILURE")
                    .map_or(true, |v| v.trim() != "false"),
            },
            drift_interval: Some(duration_from_env(
                "KRATIX_STATE_STORE_RECONCILIATION_INTERVAL",
                intervals::DEFAULT_INTERVAL,
            ))
            .filter(|d| !d.is_zero()),
            workers: positive(std::env::var("KRATIX_WORKERS").ok().as_deref()),
            platform_sync_interval: duration_from_env(
                "KRATIX_PLATFORM_SYNC_INTERVAL",
                Duration::from_secs(30),
            )
            .max(Duration::from_millis(100)),
            platform_sync_max_objects: positive(
                std::env::var("KRATIX_PLATFORM_SYNC_MAX_OBJECTS")
                    .ok()
                    .as_deref(),
            )
            .unwrap_or(10_000),
            platform_sync_budget: crate::controllers::platform_sync::budget::Budget {
                changes: positive(
                    std::env::var("KRATIX_PLATFORM_SYNC_MAX_CHANGES")
                        .ok()
                        .as_deref(),
                )
                .map_or(20, |n| u32::try_from(n).unwrap_or(u32::MAX)),
                window_ms: i64::try_from(
                    duration_from_env(
                        "KRATIX_PLATFORM_SYNC_CHANGE_WINDOW",
                        Duration::from_secs(300),
                    )
                    .as_millis(),
                )
                .unwrap_or(i64::MAX),
            },
        }
    }

    /// How many objects are reconciled at once: the setting, else twice the pipeline runs at
    /// once — a reconcile mostly waits on the control plane or a state store, so a core has
    /// room for more than one — and [`UNCAPPED_WORKERS`] when nothing caps the runs.
    pub(crate) fn workers(&self) -> usize {
        let default = if self.max_parallel == NO_PIPELINE_CAP {
            UNCAPPED_WORKERS
        } else {
            self.max_parallel.saturating_mul(2)
        };
        self.workers.unwrap_or(default).max(1)
    }
}

/// The given number when it is positive.
fn positive(given: Option<&str>) -> Option<usize> {
    given
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|n| *n > 0)
}

fn duration_from_env(name: &str, default: Duration) -> Duration {
    std::env::var(name)
        .ok()
        .and_then(|v| parse_duration_setting(&v))
        .unwrap_or(default)
}

/// A Go duration (`10h`, `90s`) or a whole number of seconds.
pub(crate) fn parse_duration_setting(text: &str) -> Option<Duration> {
    let text = text.trim();
    text.parse::<u64>()
        .ok()
        .map(Duration::from_secs)
        .or_else(|| crate::pipeline::metadata::parse_duration(text))
}

/// The number of pipeline runs at once: the given positive number, else the number of cores.
fn max_parallel(given: Option<&str>) -> usize {
    pipeline_slots(given, false)
}

/// The pipeline slots of a controller: `given` (`KRATIX_MAX_PARALLEL`) when it is a positive
/// number; else, when the runs are carried out elsewhere (Jobs on a cluster, whose scheduler
/// and quotas bound them), no cap; else the number of cores.
pub(crate) fn pipeline_slots(given: Option<&str>, runs_elsewhere: bool) -> usize {
    match positive(given) {
        Some(n) => n,
        None if runs_elsewhere => NO_PIPELINE_CAP,
        None => default_max_parallel(),
    }
}

/// The number of cores this process may use (1 when unknown).
pub(crate) fn default_max_parallel() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_go_durations_or_seconds() {
        let cases = [
            ("", None),
            ("10h", Some(Duration::from_secs(36_000))),
            (" 90 ", Some(Duration::from_secs(90))),
            ("1m30s", Some(Duration::from_secs(90))),
            ("0", Some(Duration::ZERO)),
            ("soon", None),
            ("-5s", None),
        ];
        for (given, want) in cases {
            assert_eq!(parse_duration_setting(given), want, "{given:?}");
        }
    }

    #[test]
    fn max_parallel_takes_a_positive_number_or_the_cores() {
        let cores = default_max_parallel();
        let cases = [
            (None, cores),
            (Some("4"), 4),
            (Some(" 16 "), 16),
            (Some("0"), cores),
            (Some("-2"), cores),
            (Some("many"), cores),
        ];
        for (given, want) in cases {
            assert_eq!(max_parallel(given), want, "{given:?}");
        }
    }

    #[test]
    fn pipeline_slots_are_uncapped_for_runs_elsewhere_unless_set() {
        let cores = default_max_parallel();
        let cases = [
            (None, false, cores),
            (None, true, NO_PIPELINE_CAP),
            (Some(""), true, NO_PIPELINE_CAP),
            (Some("0"), true, NO_PIPELINE_CAP),
            (Some("8"), true, 8),
            (Some("8"), false, 8),
            (Some("many"), false, cores),
        ];
        for (given, elsewhere, want) in cases {
            assert_eq!(
                pipeline_slots(given, elsewhere),
                want,
                "{given:?} {elsewhere}"
            );
        }
    }

    #[test]
    fn workers_are_the_setting_else_twice_the_parallel_runs() {
        let cases = [
            (None, 2, 4),
            (None, 1, 2),
            (Some(3), 2, 3),
            (Some(1), 8, 1),
            (None, NO_PIPELINE_CAP, UNCAPPED_WORKERS),
            (Some(40), NO_PIPELINE_CAP, 40),
        ];
        for (workers, max_parallel, want) in cases {
            let settings = Settings {
                max_parallel,
                workers,
                ..Settings::from_env()
            };
            assert_eq!(settings.workers(), want, "{workers:?} {max_parallel}");
        }
    }
}
