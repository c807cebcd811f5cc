//! Which runs of a workflow go. As Kratix keeps the newest few Jobs of each pipeline
//! (`numberOfJobsToKeep`), the newest runs of each pipeline stay; what pipelines no longer in
//! the workflow (removed or renamed) left goes altogether. Pruning follows every step that
//! starts or ends a run, so the count holds however the workflow goes (interrupted, suspended,
//! retried), not only when it completes or fails.

use std::collections::BTreeMap;

use crate::api::Action;
use crate::controllers::workflow::decide::model::RunRecord;
use crate::controllers::workflow::decide::model::Step;

/// Whether the workflow's runs are pruned after `step`: not while a run is in progress, when
/// nothing was started or has ended since the last look.
pub(crate) fn prunes_after(step: &Step) -> bool {
    !matches!(step, Step::Wait)
}

/// The sequences of the runs of `action` to delete, oldest first: every finished run of a
/// pipeline no longer in `pipelines` (removed or renamed), and of each current pipeline the
/// finished runs beyond its newest `keep`. A pending or running run is never chosen (it still
/// counts towards `keep`); runs of the other action are left alone.
pub(crate) fn runs_to_prune(
    action: Action,
    pipelines: &[String],
    runs: &[RunRecord],
    keep: usize,
) -> Vec<i64> {
    let mut by_pipeline: BTreeMap<&str, Vec<&RunRecord>> = BTreeMap::new();
    for run in runs.iter().filter(|run| run.action == action) {
        by_pipeline
            .entry(run.pipeline_name.as_str())
            .or_default()
            .push(run);
    }
    let mut doomed: Vec<i64> = by_pipeline
        .into_iter()
        .flat_map(|(name, mut list)| {
            list.sort_by_key(|run| std::cmp::Reverse(run.sequence));
            let kept = if pipelines.iter().any(|p| p == name) {
                keep
            } else {
                0
            };
            list.into_iter()
                .skip(kept)
                .filter(|run| !run.phase.is_active())
                .map(|run| run.sequence)
                .collect::<Vec<_>>()
        })
        .collect();
    doomed.sort_unstable();
    doomed
}
