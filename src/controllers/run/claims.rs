//! Who executes a pipeline run. A run is claimed by exactly one executor: the claim, stored in the
//! run's `status.executor` together with `phase: Running`, names the process (by boot, process id
//! and process start time, so a reused process id never passes for the claimant) and the
//! controller instance inside it. A run is interrupted only when its claimant is gone; a run that
//! a live executor is carrying out is never started again.

/// One controller instance in one process, as stored in a run's claim.
pub(crate) use crate::api::RunExecutor as Executor;

/// What a process looks like from outside, for liveness checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProcessSeen {
    pub(crate) boot_id: String,
    /// `None` when no such process exists.
    pub(crate) start_of_pid: Option<u64>,
}

/// Where a run found `Running` stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// This controller instance is carrying it out right now.
    ExecutingHere,
    /// Claimed by another executor that is still alive: leave it alone.
    ClaimedElsewhere,
    /// Its executor is gone (or was this instance, whose task for it has ended): it was
    /// interrupted and may be run again.
    Abandoned,
}

impl Executor {
    /// This process, as a new controller instance.
    pub(crate) fn this_process() -> Executor {
        let pid = std::process::id();
        Executor {
            boot_id: crate::pipeline::groups::boot_id(),
            pid,
            process_start: process_start(pid).unwrap_or(0),
            instance: uuid::Uuid::new_v4().to_string(),
        }
    }

    /// How `other`'s process looks from here.
    pub(crate) fn observe(other: &Executor) -> ProcessSeen {
        ProcessSeen {
            boot_id: crate::pipeline::groups::boot_id(),
            start_of_pid: process_start(other.pid),
        }
    }
}

/// Decides about a `Running` run claimed by `claim` (`None`: stored before claims existed, or
/// written by hand), seen from executor `me`, which is or is not executing it (`executing_here`);
/// `seen` is what the claimant's process looks like now.
pub(crate) fn verdict(
    claim: Option<&Executor>,
    me: &Executor,
    executing_here: bool,
    seen: &ProcessSeen,
) -> Verdict {
    let Some(claim) = claim else {
        return if executing_here {
            Verdict::ExecutingHere
        } else {
            Verdict::Abandoned
        };
    };
    if claim == me {
        return if executing_here {
            Verdict::ExecutingHere
        } else {
            Verdict::Abandoned
        };
    }
    let same_process = claim.boot_id == me.boot_id
        && claim.pid == me.pid
        && claim.process_start == me.process_start;
    if same_process {
        // Another controller instance of this very process: alive as long as we are. One
        // process runs one instance, so this only happens if that rule is broken; refusing to
        // run the run twice is the safe answer.
        return Verdict::ClaimedElsewhere;
    }
    let alive = claim.boot_id == seen.boot_id && seen.start_of_pid == Some(claim.process_start);
    if alive {
        Verdict::ClaimedElsewhere
    } else {
        Verdict::Abandoned
    }
}

/// The start time of process `pid` in clock ticks since boot, `None` if there is no such process.
fn process_start(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    start_from_stat(&stat)
}

/// Field 22 of `/proc/<pid>/stat`. The command name (field 2) is in parentheses and may itself
/// hold spaces and parentheses, so fields are counted from the last `)`.
fn start_from_stat(stat: &str) -> Option<u64> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    // Fields 3 onwards; field 22 is the 20th of those.
    after_name.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exec(boot: &str, pid: u32, start: u64, instance: &str) -> Executor {
        Executor {
            boot_id: boot.into(),
            pid,
            process_start: start,
            instance: instance.into(),
        }
    }

    fn seen(boot: &str, start: Option<u64>) -> ProcessSeen {
        ProcessSeen {
            boot_id: boot.into(),
            start_of_pid: start,
        }
    }

    #[test]
    fn a_run_is_abandoned_only_when_its_executor_is_gone() {
        use Verdict::*;
        let me = exec("b", 10, 500, "i1");
        let other = exec("b", 20, 700, "i2");
        let cases = [
            (
                "no claim, not executing",
                None,
                false,
                seen("b", None),
                Abandoned,
            ),
            (
                "no claim, executing",
                None,
                true,
                seen("b", None),
                ExecutingHere,
            ),
            (
                "mine, executing",
                Some(me.clone()),
                true,
                seen("b", Some(500)),
                ExecutingHere,
            ),
            (
                "mine, task ended",
                Some(me.clone()),
                false,
                seen("b", Some(500)),
                Abandoned,
            ),
            (
                "another instance of this process",
                Some(exec("b", 10, 500, "i0")),
                false,
                seen("b", Some(500)),
                ClaimedElsewhere,
            ),
            (
                "other process alive",
                Some(other.clone()),
                false,
                seen("b", Some(700)),
                ClaimedElsewhere,
            ),
            (
                "other process gone",
                Some(other.clone()),
                false,
                seen("b", None),
                Abandoned,
            ),
            (
                "pid reused by a later process",
                Some(other.clone()),
                false,
                seen("b", Some(900)),
                Abandoned,
            ),
            (
                "claimed in an earlier boot",
                Some(exec("a", 20, 700, "i2")),
                false,
                seen("b", Some(700)),
                Abandoned,
            ),
            (
                "an earlier instance of a process with our pid, before a reboot",
                Some(exec("a", 10, 500, "i0")),
                false,
                seen("b", Some(500)),
                Abandoned,
            ),
        ];
        for (name, claim, executing, seen, want) in cases {
            assert_eq!(
                verdict(claim.as_ref(), &me, executing, &seen),
                want,
                "{name}"
            );
        }
    }

    #[test]
    fn start_time_is_read_past_odd_command_names() {
        let tail = "S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 4242 20 21";
        let cases = [
            (format!("123 (sh) {tail}"), Some(4242)),
            (format!("123 (a (b) c) {tail}"), Some(4242)),
            (format!("123 (x)) {tail}"), Some(4242)),
            ("123 (sh) S 1 2".to_string(), None),
            ("garbage".to_string(), None),
        ];
        for (stat, want) in cases {
            assert_eq!(start_from_stat(&stat), want, "{stat}");
        }
    }

    #[test]
    fn this_process_is_alive_to_itself() {
        let me = Executor::this_process();
        assert!(me.process_start > 0);
        assert_eq!(
            verdict(
                Some(&me),
                &exec("other", 1, 1, "x"),
                false,
                &Executor::observe(&me)
            ),
            Verdict::ClaimedElsewhere
        );
    }
}
