//! Reads the run records of one workflow action back into "how far the current attempt got".
//!
//! An attempt is what one start from pipeline 0 produced. Read oldest first, pipeline `j` of an
//! attempt has zero or more runs that made it run again (failed, or succeeded but suspended),
//! then one clean success, after which pipeline `j + 1` starts; the newest pipeline of the attempt
//! may end in any state. The attempt is recognised from the newest run backwards, so an older
//! attempt (or one for another hash) never lends its successes to the current one.

use crate::api::Action;
use crate::controllers::workflow::decide::model::RunPhase;
use crate::controllers::workflow::decide::model::RunRecord;

/// Why the newest run does not continue an attempt for the current hash and pipelines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Staleness {
    SpecChanged,
    PipelinesChanged,
    HistoryMissing,
}

/// The runs of the current attempt, grouped by pipeline: `stages[j]` holds pipeline `j`'s runs,
/// oldest first; the last stage is the pipeline the attempt has reached.
#[derive(Debug)]
pub(crate) struct Attempt<'r> {
    stages: Vec<Vec<&'r RunRecord>>,
}

impl<'r> Attempt<'r> {
    /// Index of the pipeline the attempt has reached.
    pub(crate) fn index(&self) -> usize {
        self.stages.len() - 1
    }

    /// The newest run of the attempt.
    pub(crate) fn latest(&self) -> &'r RunRecord {
        self.stages
            .last()
            .and_then(|stage| stage.last())
            .expect("an attempt is only built around its newest run")
    }

    /// Runs of pipeline `index` in this attempt, oldest first (empty past the reached pipeline).
    pub(crate) fn runs_of(&self, index: usize) -> &[&'r RunRecord] {
        self.stages
            .get(index)
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// Consecutive failed runs of the reached pipeline, counted from the newest (see
    /// [`tail_failures`]).
    pub(crate) fn tail_failures(&self) -> u32 {
        tail_failures(self.runs_of(self.index()))
    }
}

/// How many runs a pipeline's stage of an attempt has had (`runs` oldest first): the newest
/// run's number, or, for runs that carry none, how many are left. Pruning keeps only the newest
/// runs of a pipeline; their numbers still count the ones that went.
pub(crate) fn runs_so_far(runs: &[&RunRecord]) -> u32 {
    let left = u32::try_from(runs.len()).unwrap_or(u32::MAX);
    runs.last().map_or(0, |newest| newest.attempt.max(left))
}

/// Failed runs at the end of a pipeline's stage (`runs` oldest first). When every run left
/// failed and the oldest is numbered past 1, the pruned runs before it are counted as failures
/// too: they were runs that made the pipeline run again, and a retried pipeline's backoff
/// should keep growing however few runs stay.
pub(crate) fn tail_failures(runs: &[&RunRecord]) -> u32 {
    let failures = consecutive_failures(runs);
    match runs.first() {
        Some(oldest) if usize::try_from(failures).ok() == Some(runs.len()) => {
            failures.saturating_add(oldest.attempt.saturating_sub(1))
        }
        _ => failures,
    }
}

/// Failed runs at the end of `runs` (oldest first).
fn consecutive_failures(runs: &[&RunRecord]) -> u32 {
    let failures = runs
        .iter()
        .rev()
        .take_while(|run| run.phase == RunPhase::Failed)
        .count();
    u32::try_from(failures).unwrap_or(u32::MAX)
}

/// What the run records of one workflow action say about the current hash and pipelines.
#[derive(Debug)]
pub(crate) enum History<'r> {
    /// No run of this action exists.
    Empty,
    /// The newest run does not belong to an attempt for the current hash and pipelines.
    Stale(Staleness),
    Current(Attempt<'r>),
}

/// Reconstructs the current attempt of `action` from `runs` (any order, any action).
pub(crate) fn read_history<'r>(
    action: Action,
    pipelines: &[String],
    hash: &str,
    runs: &'r [RunRecord],
) -> History<'r> {
    let mut newest_first: Vec<&RunRecord> = runs.iter().filter(|r| r.action == action).collect();
    newest_first.sort_by_key(|run| std::cmp::Reverse(run.sequence));
    let mut rest = newest_first.into_iter().peekable();

    let Some(latest) = rest.next() else {
        return History::Empty;
    };
    if !latest.is_for(pipelines, hash) {
        return History::Stale(staleness_of(latest, pipelines, hash));
    }

    let reached = latest.pipeline_index;
    let mut stages_newest_first: Vec<Vec<&RunRecord>> = Vec::with_capacity(reached + 1);
    let mut stage = vec![latest];
    let mut index = reached;
    loop {
        // Earlier runs of the same pipeline in this attempt: the failures and suspensions
        // that made it run again.
        while let Some(run) = rest.next_if(|r| {
            r.pipeline_index == index && r.is_for(pipelines, hash) && r.is_rerun_cause()
        }) {
            stage.push(run);
        }
        stage.reverse();
        stages_newest_first.push(stage);
        if index == 0 {
            break;
        }
        index -= 1;
        // Pipeline `index + 1` only ever starts right after pipeline `index` succeeded.
        match rest.next() {
            Some(run) if run.pipeline_index == index && run.is_for(pipelines, hash) => {
                if !run.is_clean_success() {
                    return History::Stale(Staleness::HistoryMissing);
                }
                stage = vec![run];
            }
            Some(run) => return History::Stale(staleness_of(run, pipelines, hash)),
            None => return History::Stale(Staleness::HistoryMissing),
        }
    }
    stages_newest_first.reverse();
    History::Current(Attempt {
        stages: stages_newest_first,
    })
}

/// Why `run`, expected to be part of the current attempt, is not.
fn staleness_of(run: &RunRecord, pipelines: &[String], hash: &str) -> Staleness {
    if run.hash != hash {
        Staleness::SpecChanged
    } else if !run.is_for(pipelines, hash) {
        Staleness::PipelinesChanged
    } else {
        // Right hash and pipeline, wrong place in the sequence: the runs in between are gone.
        Staleness::HistoryMissing
    }
}
