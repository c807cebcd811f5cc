//! The `kratix.io/workflow-suspended` label, as Kratix's system test expects it
//! (<https://github.com/syntasso/kratix/blob/ae170e22e974e45bb7cfda00986057e01b3ccfde/test/system/workflow_control_test.go>,
//! "pipelines are suspended by the workflow control file"): an object whose workflow a pipeline
//! suspended carries `kratix.io/workflow-suspended: "true"`; a person removing it resumes the
//! workflow from the suspended pipeline; the label goes when the workflow goes on.
//!
//! A label that is absent says nothing by itself: it may not have been set yet, or have been
//! removed. So the label is set together, in one metadata write, with an annotation naming the
//! suspending run it was set for; the label absent while the annotation names the suspending run
//! is a removal, that is a resume.

use crate::controllers::workflow::decide::{RunRecord, Step};

/// The annotation naming (by its sequence) the suspending run the label was set for.
pub(crate) const SUSPENDED_RUN: &str = "kratix-rs.io/workflow-suspended-run";

/// What to do with the label (and its annotation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LabelChange {
    Keep,
    /// Label the object for the suspension by run `run`.
    Set {
        run: i64,
    },
    /// The workflow went on: the label and the annotation go.
    Clear,
}

/// The suspending run a person resumed by removing the label: the annotation's run, when the
/// label is no longer `"true"`.
pub(crate) fn resumed_run(label: Option<&str>, annotation: Option<&str>) -> Option<i64> {
    if label == Some("true") {
        return None;
    }
    annotation?.trim().parse().ok()
}

/// The run that suspended the workflow of `step`: the newest of its action.
pub(crate) fn suspending_run(
    step: &Step,
    records: &[RunRecord],
    action: crate::api::Action,
) -> Option<i64> {
    matches!(step, Step::Suspended { .. }).then_some(())?;
    records
        .iter()
        .filter(|r| r.action == action)
        .map(|r| r.sequence)
        .max()
}

/// What becomes of the label once the step is decided: set for a new suspension, cleared once
/// the workflow is no longer suspended, kept otherwise.
pub(crate) fn change(
    suspending: Option<i64>,
    label: Option<&str>,
    annotation: Option<&str>,
) -> LabelChange {
    let labelled_for = annotation.and_then(|a| a.trim().parse::<i64>().ok());
    match suspending {
        Some(run) if labelled_for == Some(run) => LabelChange::Keep,
        Some(run) => LabelChange::Set { run },
        None if label.is_some() || annotation.is_some() => LabelChange::Clear,
        None => LabelChange::Keep,
    }
}

/// Makes the change on the object's metadata (to be written in one update).
pub(crate) fn apply(change: LabelChange, obj: &mut crate::api::Object) {
    use crate::api::labels::WORKFLOW_SUSPENDED;
    match change {
        LabelChange::Keep => {}
        LabelChange::Set { run } => {
            obj.metadata
                .labels
                .get_or_insert_with(Default::default)
                .insert(WORKFLOW_SUSPENDED.into(), "true".into());
            obj.metadata
                .annotations
                .get_or_insert_with(Default::default)
                .insert(SUSPENDED_RUN.into(), run.to_string());
        }
        LabelChange::Clear => {
            if let Some(labels) = obj.metadata.labels.as_mut() {
                labels.remove(WORKFLOW_SUSPENDED);
            }
            if let Some(annotations) = obj.metadata.annotations.as_mut() {
                annotations.remove(SUSPENDED_RUN);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resume_is_the_label_gone_for_the_run_it_was_set_for() {
        let cases = [
            (Some("true"), Some("7"), None),
            (None, Some("7"), Some(7)),
            (Some("false"), Some("7"), Some(7)),
            (None, None, None),
            (None, Some("not a run"), None),
            (Some("true"), None, None),
        ];
        for (label, annotation, want) in cases {
            assert_eq!(
                resumed_run(label, annotation),
                want,
                "{label:?} {annotation:?}"
            );
        }
    }

    #[test]
    fn the_label_follows_the_suspension() {
        let cases = [
            (
                "a new suspension",
                Some(7),
                None,
                None,
                LabelChange::Set { run: 7 },
            ),
            (
                "labelled for it already",
                Some(7),
                Some("true"),
                Some("7"),
                LabelChange::Keep,
            ),
            (
                "suspended again after a resume",
                Some(9),
                None,
                Some("7"),
                LabelChange::Set { run: 9 },
            ),
            (
                "a label set by hand, without its run",
                Some(7),
                Some("true"),
                None,
                LabelChange::Set { run: 7 },
            ),
            (
                "the workflow went on",
                None,
                Some("true"),
                Some("7"),
                LabelChange::Clear,
            ),
            (
                "resumed: the annotation goes",
                None,
                None,
                Some("7"),
                LabelChange::Clear,
            ),
            ("never suspended", None, None, None, LabelChange::Keep),
        ];
        for (name, suspending, label, annotation, want) in cases {
            assert_eq!(change(suspending, label, annotation), want, "{name}");
        }
    }

    #[test]
    fn the_suspending_run_is_the_newest_of_the_action() {
        use crate::api::Action;
        use crate::controllers::workflow::decide::RunPhase;
        let record = |sequence, action| RunRecord {
            sequence,
            pipeline_name: "p".into(),
            pipeline_index: 0,
            action,
            hash: "h".into(),
            phase: RunPhase::Succeeded,
            completion_time_ms: Some(0),
            suspend: None,
            progress: None,
            attempt: 1,
        };
        let records = [
            record(1, Action::Configure),
            record(3, Action::Configure),
            record(4, Action::Delete),
        ];
        let suspended = Step::Suspended {
            index: 0,
            retry_at_ms: None,
            message: String::new(),
        };
        assert_eq!(
            suspending_run(&suspended, &records, Action::Configure),
            Some(3)
        );
        assert_eq!(
            suspending_run(&suspended, &records, Action::Delete),
            Some(4)
        );
        assert_eq!(
            suspending_run(&Step::Wait, &records, Action::Configure),
            None
        );
    }
}
