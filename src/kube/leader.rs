//! Leader election, the decisions: who may act, from what the Lease says and when this replica
//! saw it change. Expiry is judged on this replica's own monotonic clock from the moment it last
//! saw the Lease change (as Kubernetes' own clients do), never by comparing clocks of replicas.
//! The Lease's reads and writes are done by the caller.

use std::time::Duration;

/// How long a Lease holds, how soon its holder must renew it, how often replicas look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Timing {
    /// A Lease not renewed for this long may be taken by another replica.
    pub lease_duration: Duration,
    /// The holder stops acting when it could not renew for this long (less than the duration,
    /// so it stops before anyone else may start).
    pub renew_deadline: Duration,
    /// Pause between two looks at the Lease.
    pub retry_period: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Self {
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }
}

impl Timing {
    /// Refuses timings under which two replicas could act at once (a leader renewing no more
    /// often than its Lease lasts) or a leader could not renew in time.
    pub(crate) fn check(&self) -> Result<(), String> {
        if self.renew_deadline >= self.lease_duration {
            return Err(format!(
                "--renew-deadline ({}s) must be shorter than --lease-duration ({}s)",
                self.renew_deadline.as_secs(),
                self.lease_duration.as_secs()
            ));
        }
        if self.retry_period.is_zero() || self.retry_period >= self.renew_deadline {
            return Err(format!(
                "--retry-period ({}s) must be positive and shorter than --renew-deadline ({}s)",
                self.retry_period.as_secs(),
                self.renew_deadline.as_secs()
            ));
        }
        Ok(())
    }
}

/// The parts of a Lease that matter to the election.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Record {
    /// `None` (or empty) when released.
    pub holder: Option<String>,
    /// `renewTime` as written; only compared for change.
    pub renew_time: Option<String>,
    pub lease_duration: Duration,
    pub transitions: i32,
}

/// What to do with the Lease now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Action {
    /// Write the Lease naming this replica, a new term (`transitions` + 1).
    Acquire,
    /// Write a fresh `renewTime` (this replica holds the Lease).
    Renew,
    /// Someone else holds a live Lease: look again later.
    Wait,
}

/// Whether this replica acts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    Standby,
    Leader,
}

/// One replica's view of the election; `now` is time on its monotonic clock.
#[derive(Debug, Clone)]
pub(crate) struct Elector {
    identity: String,
    timing: Timing,
    /// The last record seen and when it was first seen like that.
    observed: Option<(Record, Duration)>,
    /// When this replica last wrote the Lease successfully as its holder.
    renewed_at: Option<Duration>,
}

impl Elector {
    pub(crate) fn new(identity: impl Into<String>, timing: Timing) -> Self {
        Self {
            identity: identity.into(),
            timing,
            observed: None,
            renewed_at: None,
        }
    }

    pub(crate) fn identity(&self) -> &str {
        &self.identity
    }

    pub(crate) fn timing(&self) -> Timing {
        self.timing
    }

    /// Decides from the Lease as just read (`None` when it does not exist).
    pub(crate) fn decide(&mut self, lease: Option<&Record>, now: Duration) -> Action {
        let Some(lease) = lease else {
            return Action::Acquire;
        };
        let changed = self.observed.as_ref().is_none_or(|(seen, _)| seen != lease);
        if changed {
            self.observed = Some((lease.clone(), now));
        }
        match lease.holder.as_deref() {
            Some(holder) if holder == self.identity => Action::Renew,
            None | Some("") => Action::Acquire,
            Some(_) => {
                let since = self.observed.as_ref().map_or(now, |(_, at)| *at);
                // Its holder's own lease duration counts, not ours: replicas may differ.
                if now.saturating_sub(since) >= lease.lease_duration {
                    Action::Acquire
                } else {
                    Action::Wait
                }
            }
        }
    }

    /// Records the outcome of writing the Lease as its holder (`Acquire` or `Renew`).
    pub(crate) fn written(&mut self, ok: bool, now: Duration) {
        if ok {
            self.renewed_at = Some(now);
        }
    }

    /// Records that another replica holds the Lease (a write lost the race, or we wait).
    pub(crate) fn lost_race(&mut self) {
        self.renewed_at = None;
    }

    /// Leader while the last successful write is younger than the renew deadline.
    pub(crate) fn role(&self, now: Duration) -> Role {
        match self.renewed_at {
            Some(at) if now.saturating_sub(at) < self.timing.renew_deadline => Role::Leader,
            _ => Role::Standby,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: fn(u64) -> Duration = Duration::from_secs;

    fn record(holder: Option<&str>, renew: &str) -> Record {
        Record {
            holder: holder.map(str::to_string),
            renew_time: Some(renew.to_string()),
            lease_duration: S(15),
            transitions: 1,
        }
    }

    #[test]
    fn decisions_follow_the_lease_and_the_local_clock() {
        // Each case: a sequence of (lease read, now) → wanted action, on one elector "me".
        let other = |renew: &str| Some(record(Some("other"), renew));
        type Step = (Option<Record>, u64, Action);
        let cases: Vec<(&str, Vec<Step>)> = vec![
            ("no lease: create it", vec![(None, 0, Action::Acquire)]),
            (
                "released lease: take it",
                vec![(Some(record(None, "t0")), 0, Action::Acquire)],
            ),
            (
                "empty holder: take it",
                vec![(Some(record(Some(""), "t0")), 0, Action::Acquire)],
            ),
            (
                "held by me: renew",
                vec![(Some(record(Some("me"), "t0")), 0, Action::Renew)],
            ),
            (
                "held by another, renewed: wait",
                vec![
                    (other("t0"), 0, Action::Wait),
                    (other("t1"), 10, Action::Wait),
                    (other("t2"), 20, Action::Wait),
                    (other("t3"), 34, Action::Wait),
                ],
            ),
            (
                "held by another that stopped renewing: take over after the lease duration",
                vec![
                    (other("t0"), 0, Action::Wait),
                    (other("t0"), 14, Action::Wait),
                    (other("t0"), 15, Action::Acquire),
                ],
            ),
            (
                "a renewal restarts the count",
                vec![
                    (other("t0"), 0, Action::Wait),
                    (other("t1"), 14, Action::Wait),
                    (other("t1"), 28, Action::Wait),
                    (other("t1"), 29, Action::Acquire),
                ],
            ),
            (
                "a replica starting late counts from its first look",
                vec![
                    (other("t0"), 100, Action::Wait),
                    (other("t0"), 114, Action::Wait),
                ],
            ),
        ];
        for (name, steps) in cases {
            let mut elector = Elector::new("me", Timing::default());
            for (i, (lease, now, want)) in steps.into_iter().enumerate() {
                assert_eq!(
                    elector.decide(lease.as_ref(), S(now)),
                    want,
                    "{name}, step {i}"
                );
            }
        }
    }

    #[test]
    fn timings_that_could_let_two_replicas_act_are_refused() {
        let t = |lease, renew, retry| Timing {
            lease_duration: S(lease),
            renew_deadline: S(renew),
            retry_period: S(retry),
        };
        let cases = [
            (t(15, 10, 2), true),
            (t(6, 4, 1), true),
            (t(10, 10, 2), false),
            (t(10, 12, 2), false),
            (t(15, 10, 10), false),
            (t(15, 10, 0), false),
        ];
        for (timing, ok) in cases {
            assert_eq!(timing.check().is_ok(), ok, "{timing:?}");
        }
    }

    #[test]
    fn leader_only_while_renewals_succeed_within_the_deadline() {
        // (written ok at, now) → role
        let cases = [
            (None, 0, Role::Standby),
            (Some(0), 0, Role::Leader),
            (Some(0), 9, Role::Leader),
            (Some(0), 10, Role::Standby),
            (Some(5), 14, Role::Leader),
        ];
        for (written, now, want) in cases {
            let mut elector = Elector::new("me", Timing::default());
            if let Some(at) = written {
                elector.written(true, S(at));
            }
            elector.written(false, S(now));
            assert_eq!(elector.role(S(now)), want, "{written:?} {now}");
        }
        let mut elector = Elector::new("me", Timing::default());
        elector.written(true, S(0));
        elector.lost_race();
        assert_eq!(elector.role(S(1)), Role::Standby);
    }
}
