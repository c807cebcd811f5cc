//! State-store drift repair: every written placement is written again at an interval, so that
//! its files, changed or deleted by others in the store, are restored. Only the placement's own
//! files are written (others' files are never touched), and a store that holds them unchanged
//! gets no commit. As Kratix's WorkPlacement controller does with its
//! `stateStoreReconciliationInterval` (<https://github.com/syntasso/kratix/blob/ae170e22e974e45bb7cfda00986057e01b3ccfde/internal/controller/workplacement_controller.go>).
//!
//! When each placement was last written or checked is kept in memory: a controller that starts
//! counts from its start, rather than rewriting every placement at once.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use crate::api::ObjectKey;

/// What a written placement needs now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Drift repair is off: nothing until the placement changes.
    Off,
    /// Its interval has passed: write it again.
    Rewrite,
    /// Look again after this long.
    After(Duration),
}

/// When a placement last checked at `last` (milliseconds since the epoch; `None` when never
/// seen) is checked next, with drift repair every `interval` (`None`: off).
pub(crate) fn decide(last: Option<i64>, interval: Option<Duration>, now: i64) -> Decision {
    let Some(interval) = interval else {
        return Decision::Off;
    };
    let Some(last) = last else {
        return Decision::After(interval);
    };
    let every = i64::try_from(interval.as_millis()).unwrap_or(i64::MAX);
    let due = last.saturating_add(every);
    if now >= due {
        Decision::Rewrite
    } else {
        Decision::After(Duration::from_millis(u64::try_from(due - now).unwrap_or(0)))
    }
}

/// When each placement was last written or checked, in this process.
#[derive(Debug, Default)]
pub(crate) struct Clock {
    last: Mutex<HashMap<ObjectKey, i64>>,
}

impl Clock {
    /// What the written placement `key` needs now; a placement seen for the first time counts
    /// as checked now.
    pub(crate) fn decide(&self, key: &ObjectKey, interval: Option<Duration>, now: i64) -> Decision {
        let mut last = self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let decision = decide(last.get(key).copied(), interval, now);
        if interval.is_some() {
            last.entry(key.clone()).or_insert(now);
        }
        decision
    }

    /// Records that the placements were written (or found unchanged) at `now`.
    pub(crate) fn checked<'a>(&self, keys: impl IntoIterator<Item = &'a ObjectKey>, now: i64) {
        let mut last = self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for key in keys {
            last.insert(key.clone(), now);
        }
    }

    /// Forgets a placement that is gone.
    pub(crate) fn forget(&self, key: &ObjectKey) {
        self.last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_placements_are_checked_an_interval_after_the_last_check() {
        let minute = Some(Duration::from_secs(60));
        let ms = Duration::from_millis;
        let cases = [
            // (last, interval, now, want)
            (None, None, 0, Decision::Off),
            (Some(0), None, 1_000_000, Decision::Off),
            (None, minute, 5_000, Decision::After(ms(60_000))),
            (Some(1_000), minute, 1_000, Decision::After(ms(60_000))),
            (Some(1_000), minute, 31_000, Decision::After(ms(30_000))),
            (Some(1_000), minute, 61_000, Decision::Rewrite),
            (Some(1_000), minute, 900_000, Decision::Rewrite),
            (
                Some(i64::MAX - 1),
                minute,
                0,
                Decision::After(ms(i64::MAX as u64)),
            ),
        ];
        for (last, interval, now, want) in cases {
            assert_eq!(
                decide(last, interval, now),
                want,
                "{last:?} {interval:?} {now}"
            );
        }
    }

    #[test]
    fn the_clock_starts_at_first_sight_and_moves_with_checks() {
        let clock = Clock::default();
        let key = ObjectKey::new("platform.kratix.io", "WorkPlacement", Some("default"), "wp");
        let every = Some(Duration::from_secs(10));
        assert_eq!(
            clock.decide(&key, every, 1_000),
            Decision::After(Duration::from_secs(10))
        );
        assert_eq!(clock.decide(&key, every, 11_000), Decision::Rewrite);
        clock.checked([&key], 11_500);
        assert_eq!(
            clock.decide(&key, every, 12_500),
            Decision::After(Duration::from_secs(9))
        );
        clock.forget(&key);
        assert_eq!(
            clock.decide(&key, every, 20_000),
            Decision::After(Duration::from_secs(10))
        );
        assert_eq!(clock.decide(&key, None, 90_000), Decision::Off);
    }
}
