//! Tables of cases for the workflow decisions, and step-by-step simulations of whole workflows.

use crate::api::condition::ConditionStatus;
use crate::api::workflow::Error;
use crate::api::{Action, WorkflowType};
use crate::controllers::work::state::WorksState;
use crate::controllers::workflow::decide::*;

const T: i64 = 1_000_000;

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(std::string::ToString::to_string).collect()
}

/// A finished or active configure run; builder methods adjust it.
fn run(seq: i64, name: &str, index: usize, hash: &str, phase: RunPhase) -> RunRecord {
    RunRecord {
        sequence: seq,
        pipeline_name: name.to_string(),
        pipeline_index: index,
        action: Action::Configure,
        hash: hash.to_string(),
        phase,
        completion_time_ms: (!phase.is_active()).then_some(T + seq * 1_000),
        suspend: None,
        progress: None,
        attempt: 0,
    }
}

fn ok(seq: i64, name: &str, index: usize, hash: &str) -> RunRecord {
    run(seq, name, index, hash, RunPhase::Succeeded)
}

fn failed(seq: i64, name: &str, index: usize, hash: &str) -> RunRecord {
    run(seq, name, index, hash, RunPhase::Failed)
}

fn running(seq: i64, name: &str, index: usize, hash: &str) -> RunRecord {
    run(seq, name, index, hash, RunPhase::Running)
}

fn pending(seq: i64, name: &str, index: usize, hash: &str) -> RunRecord {
    run(seq, name, index, hash, RunPhase::Pending)
}

/// A succeeded run whose workflow-control.yaml suspended the workflow.
fn suspended(
    seq: i64,
    name: &str,
    index: usize,
    hash: &str,
    retry_after_ms: Option<i64>,
) -> RunRecord {
    RunRecord {
        suspend: Some(Suspension {
            retry_after_ms,
            message: format!("waiting for {name}"),
        }),
        ..ok(seq, name, index, hash)
    }
}

fn completed_at(seq: i64) -> i64 {
    T + seq * 1_000
}

trait RunExt {
    fn delete(self) -> Self;
    fn no_completion_time(self) -> Self;
}

impl RunExt for RunRecord {
    fn delete(self) -> Self {
        RunRecord {
            action: Action::Delete,
            ..self
        }
    }
    fn no_completion_time(self) -> Self {
        RunRecord {
            completion_time_ms: None,
            ..self
        }
    }
}

fn start(index: usize, reason: StartReason) -> Step {
    Step::Start { index, reason }
}

struct Case {
    name: &'static str,
    action: Action,
    pipelines: &'static [&'static str],
    hash: &'static str,
    runs: Vec<RunRecord>,
    manual: bool,
    /// The suspending run whose `kratix.io/workflow-suspended` label was removed.
    resumed: Option<i64>,
    retry: bool,
    now: i64,
    expected: Step,
}

/// A configure case with no manual reconciliation, observed long after every run finished
/// unless `now` says otherwise.
fn case(
    name: &'static str,
    pipelines: &'static [&'static str],
    hash: &'static str,
    runs: Vec<RunRecord>,
    expected: Step,
) -> Case {
    Case {
        name,
        action: Action::Configure,
        pipelines,
        hash,
        runs,
        manual: false,
        resumed: None,
        retry: true,
        now: i64::MAX / 2,
        expected,
    }
}

impl Case {
    fn manual(self) -> Self {
        Case {
            manual: true,
            ..self
        }
    }
    fn at(self, now: i64) -> Self {
        Case { now, ..self }
    }
    /// The `kratix.io/workflow-suspended` label set for run `run` was removed.
    fn resumed(self, run: i64) -> Self {
        Case {
            resumed: Some(run),
            ..self
        }
    }
    /// `reconcileAfterFailure: false`: failed pipelines are not retried.
    fn no_retry(self) -> Self {
        Case {
            retry: false,
            ..self
        }
    }
    fn delete(self) -> Self {
        Case {
            action: Action::Delete,
            ..self
        }
    }
}

const ABC: &[&str] = &["a", "b", "c"];
const DELETE: &[&str] = &["d1", "d2"];

/// Plays the controller and the pipeline runtime: runs appended as the engine asks for them.
struct World {
    action: Action,
    pipelines: Vec<String>,
    hash: String,
    runs: Vec<RunRecord>,
    manual: bool,
    now: i64,
    next_sequence: i64,
}

impl World {
    fn new(pipelines: &[&str], hash: &str) -> Self {
        World {
            action: Action::Configure,
            pipelines: names(pipelines),
            hash: hash.to_string(),
            runs: Vec::new(),
            manual: false,
            now: T,
            next_sequence: 1,
        }
    }

    fn observed(&self) -> Observed<'_> {
        Observed {
            action: self.action,
            pipelines: &self.pipelines,
            hash: &self.hash,
            runs: &self.runs,
            manual_reconcile: self.manual,
            resumed_run: None,
            retry_failures: true,
            now_ms: self.now,
        }
    }

    fn step(&self) -> Step {
        next_step(&self.observed())
    }

    /// Acts on a `Start` the way the controller does: create the run, clear the manual label.
    fn start(&mut self, expected_index: usize, expected_reason: StartReason) {
        let step = self.step();
        assert_eq!(
            step,
            start(expected_index, expected_reason),
            "runs so far: {:?}",
            self.started()
        );
        let record = RunRecord {
            sequence: self.next_sequence,
            pipeline_name: self.pipelines[expected_index].clone(),
            pipeline_index: expected_index,
            action: self.action,
            hash: self.hash.clone(),
            phase: RunPhase::Running,
            completion_time_ms: None,
            suspend: None,
            progress: None,
            attempt: run_attempt(&self.observed(), &step),
        };
        self.next_sequence += 1;
        self.runs.push(record);
        self.manual = false;
        assert_eq!(
            self.step(),
            Step::Wait,
            "a started run must block everything"
        );
    }

    fn finish(&mut self, phase: RunPhase, suspend: Option<Suspension>) {
        self.now += 1_000;
        let now = self.now;
        let active = self
            .runs
            .iter_mut()
            .find(|run| run.phase.is_active())
            .expect("finish is only called while a run is active");
        active.phase = phase;
        active.completion_time_ms = Some(now);
        active.suspend = suspend;
    }

    fn succeed(&mut self) {
        self.finish(RunPhase::Succeeded, None);
    }

    fn started(&self) -> Vec<String> {
        self.runs
            .iter()
            .map(|run| format!("{}@{}:{}", run.pipeline_name, run.hash, run.action))
            .collect()
    }
}

mod attempts;
mod conditions;
mod keyed;
mod next_step;
mod next_step_order;
mod next_step_retries;
mod prune;
mod scenarios;
