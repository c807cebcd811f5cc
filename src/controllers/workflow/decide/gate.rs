//! What a Promise's or request's reconcile decides before its configure workflow, with no I/O:
//! whether it ends early (a status of the earlier flat layout to migrate, a pause, a pause that
//! ended, a deletion), the status such an early end writes, and the labels a reconcile sets or
//! clears. Every status write of a Promise or request is its own reconcile's, decided here or
//! in its kind's `decide.rs`, and made once per reconcile.

use serde_json::{json, Value};

use crate::api::workflow_status::{WorkflowStatus, FLAT_FIELDS};
use crate::api::{labels, Action, Condition, Object};
use crate::controllers::next::Next;
use crate::controllers::status_value as status;
use crate::controllers::workflow::decide::carry_over::CarryOver;
use crate::controllers::workflow::decide::keyed_status;
use crate::controllers::workflow::decide::pausing::{self, PausedBy};
use crate::controllers::workflow::decide::suspended_label::{self, LabelChange};
use crate::controllers::workflow::decide::KeyedInputs;

/// Where a reconcile goes, from the object (and a request's Promise) as read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gate {
    /// Its status has the earlier flat layout: migrated first; the write wakes it again, and
    /// its workflows go on from the migrated status.
    Migrate,
    /// Paused: the pause is recorded and nothing else done.
    Pause(PausedBy),
    /// The pause ended: the configure workflow runs again from its first pipeline.
    Resume,
    /// Being deleted: one step of its teardown.
    Teardown,
    /// Its configure workflow.
    Configure,
}

/// Decides where the reconcile goes: migration first, then pausing (deletion included, as in
/// Kratix), then deletion.
pub(crate) fn gate(flat: bool, pause: pausing::Decision, deleting: bool) -> Gate {
    if flat {
        return Gate::Migrate;
    }
    match pause {
        pausing::Decision::Pause(by) => Gate::Pause(by),
        pausing::Decision::Resume => Gate::Resume,
        pausing::Decision::Proceed if deleting => Gate::Teardown,
        pausing::Decision::Proceed => Gate::Configure,
    }
}

/// Whether an object's status has the earlier flat layout (see [`Gate::Migrate`]).
pub(crate) fn has_flat_status(obj: &Object) -> bool {
    obj.data
        .pointer("/status/kratix/workflows")
        .is_some_and(crate::controllers::workflow::decide::has_flat_layout)
}

/// The labels a reconcile changes on its object, in one metadata write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Labels {
    /// Set `kratix.io/manual-reconciliation`: the configure workflow runs again from its first
    /// pipeline.
    pub(crate) rerun: bool,
    /// Clear it: the re-run it asked for has started.
    pub(crate) clear_manual: bool,
    /// The `kratix.io/workflow-suspended` label.
    pub(crate) suspended: LabelChange,
    /// Clear a Promise's `kratix.io/reconcile-resources`: its requests were asked.
    pub(crate) clear_reconcile_resources: bool,
}

impl Labels {
    /// No label changes.
    pub(crate) const KEEP: Labels = Labels {
        rerun: false,
        clear_manual: false,
        suspended: LabelChange::Keep,
        clear_reconcile_resources: false,
    };

    /// Whether there is anything to write.
    pub(crate) fn change_anything(&self) -> bool {
        self.rerun
            || self.clear_manual
            || self.suspended != LabelChange::Keep
            || self.clear_reconcile_resources
    }

    /// Makes the changes on the object's metadata.
    pub(crate) fn apply(&self, o: &mut Object) {
        if self.rerun {
            o.metadata
                .labels
                .get_or_insert_with(Default::default)
                .insert(labels::MANUAL_RECONCILIATION.into(), "true".into());
        } else if self.clear_manual {
            if let Some(l) = o.metadata.labels.as_mut() {
                l.remove(labels::MANUAL_RECONCILIATION);
            }
        }
        suspended_label::apply(self.suspended, o);
        if self.clear_reconcile_resources {
            if let Some(l) = o.metadata.labels.as_mut() {
                l.remove(labels::RECONCILE_RESOURCES);
            }
        }
    }
}

/// What a reconcile does about its own object: its status (`S`, applied to the status as
/// stored), its labels, and when to look again. The reconcile writes the status once, then the
/// labels; the labels first when `labels_first` (a pause that ended: should the status write be
/// lost, the next look still sees the paused condition and asks again).
#[derive(Debug)]
pub(crate) struct Decision<S> {
    pub(crate) status: Option<S>,
    pub(crate) labels: Labels,
    pub(crate) labels_first: bool,
    pub(crate) next: Next,
}

impl<S> Decision<S> {
    /// The same decision with its status as another type.
    pub(crate) fn map<T>(self, f: impl FnOnce(S) -> T) -> Decision<T> {
        Decision {
            status: self.status.map(f),
            labels: self.labels,
            labels_first: self.labels_first,
            next: self.next,
        }
    }

    /// The same decision, looking again as `next` says.
    pub(crate) fn then(self, next: Next) -> Self {
        Decision { next, ..self }
    }

    /// Its status write alone, for a reconcile that does something between its status and
    /// its labels.
    pub(crate) fn status_only(&self) -> Decision<&S> {
        Decision {
            status: self.status.as_ref(),
            labels: Labels::KEEP,
            labels_first: false,
            next: self.next,
        }
    }

    /// Its labels alone (see [`Decision::status_only`]).
    pub(crate) fn labels_only(&self) -> Decision<()> {
        Decision {
            status: None,
            labels: self.labels,
            labels_first: false,
            next: self.next,
        }
    }
}

/// An early end: its status, and for a pause that ended the manual-reconciliation label (set
/// first); nothing more until something changes.
pub(crate) fn exit(status: ExitStatus<'_>) -> Decision<ExitStatus<'_>> {
    let resume = matches!(status, ExitStatus::Unpaused);
    Decision {
        status: Some(status),
        labels: Labels {
            rerun: resume,
            ..Labels::KEEP
        },
        labels_first: resume,
        next: Next::Done,
    }
}

/// The status an early end of a reconcile writes, applied to the status as stored.
#[derive(Debug)]
pub(crate) enum ExitStatus<'a> {
    /// `status.message` alone: a request whose binding names no revision (yet), a Promise
    /// going away while its requests or Works go.
    Message(String),
    /// The flat layout's fields dropped and `action`'s workflow rebuilt from its runs.
    Migrated {
        action: Action,
        workflow: WorkflowStatus,
    },
    /// The pause's conditions (and, for a Promise, `Unavailable`). `observedGeneration` stays
    /// as it was: the paused object has not acted on a spec changed meanwhile, and whoever
    /// waits for its current generation keeps waiting until it has (Kratix returns before
    /// `updateObservedGeneration` too).
    Paused {
        is_promise: bool,
        carried: CarryOver<'a>,
    },
    /// The pause ended: `Reconciled` is pending until the workflow runs again.
    Unpaused,
    /// One step of the delete workflow: its condition and keyed status.
    Deleting {
        condition: Condition,
        keyed: KeyedInputs<'a>,
        carried: CarryOver<'a>,
    },
}

impl ExitStatus<'_> {
    pub(crate) fn apply(&self, s: &mut Value) {
        match self {
            ExitStatus::Message(message) => status::set_field(s, "message", json!(message)),
            ExitStatus::Migrated { action, workflow } => {
                if let Some(workflows) = s
                    .pointer_mut("/kratix/workflows")
                    .and_then(Value::as_object_mut)
                {
                    for field in FLAT_FIELDS {
                        workflows.remove(field);
                    }
                }
                keyed_status::set_workflow(s, *action, workflow.clone());
            }
            ExitStatus::Paused {
                is_promise,
                carried,
            } => {
                carried.apply(s);
                status::set_conditions(s, pausing::paused_conditions(*is_promise));
                if *is_promise {
                    status::set_field(
                        s,
                        "status",
                        json!(crate::api::words::promise_status::UNAVAILABLE),
                    );
                }
            }
            ExitStatus::Unpaused => status::set_conditions(s, [pausing::unpaused_condition()]),
            ExitStatus::Deleting {
                condition,
                keyed,
                carried,
            } => {
                carried.apply(s);
                status::set_conditions(s, [condition.clone()]);
                keyed_status::update(s, keyed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controllers::workflow::decide::pausing::Decision;

    #[test]
    fn migration_then_pausing_then_deletion() {
        let cases = [
            (
                "flat, paused, deleting",
                true,
                Decision::Pause(PausedBy::Itself),
                true,
                Gate::Migrate,
            ),
            (
                "paused",
                false,
                Decision::Pause(PausedBy::ItsPromise),
                false,
                Gate::Pause(PausedBy::ItsPromise),
            ),
            (
                "paused while deleting",
                false,
                Decision::Pause(PausedBy::Itself),
                true,
                Gate::Pause(PausedBy::Itself),
            ),
            (
                "resumed while deleting",
                false,
                Decision::Resume,
                true,
                Gate::Resume,
            ),
            ("deleting", false, Decision::Proceed, true, Gate::Teardown),
            (
                "configure",
                false,
                Decision::Proceed,
                false,
                Gate::Configure,
            ),
        ];
        for (name, flat, pause, deleting, want) in cases {
            assert_eq!(gate(flat, pause, deleting), want, "{name}");
        }
    }

    #[test]
    fn labels_set_or_clear_the_rerun_and_the_suspension() {
        let obj = |labels: Value| -> Object {
            serde_json::from_value(json!({"apiVersion": "v1", "kind": "X",
                "metadata": {"name": "x", "labels": labels}}))
            .expect("an object")
        };
        let manual = json!({"kratix.io/manual-reconciliation": "true", "a": "b"});
        let cases = [
            ("keep", Labels::KEEP, json!({"a": "b"}), json!({"a": "b"})),
            (
                "rerun",
                Labels {
                    rerun: true,
                    ..Labels::KEEP
                },
                json!({"a": "b"}),
                manual.clone(),
            ),
            (
                "clear",
                Labels {
                    clear_manual: true,
                    ..Labels::KEEP
                },
                manual.clone(),
                json!({"a": "b"}),
            ),
            (
                "a rerun wins over clearing",
                Labels {
                    rerun: true,
                    clear_manual: true,
                    ..Labels::KEEP
                },
                manual.clone(),
                manual.clone(),
            ),
            (
                "asked",
                Labels {
                    clear_reconcile_resources: true,
                    ..Labels::KEEP
                },
                json!({"a": "b", "kratix.io/reconcile-resources": "true"}),
                json!({"a": "b"}),
            ),
            (
                "suspended",
                Labels {
                    suspended: LabelChange::Set { run: 4 },
                    ..Labels::KEEP
                },
                json!({"a": "b"}),
                json!({"a": "b", "kratix.io/workflow-suspended": "true"}),
            ),
        ];
        for (name, labels, before, want) in cases {
            let mut o = obj(before);
            labels.apply(&mut o);
            assert_eq!(json!(o.metadata.labels), want, "{name}");
            assert_eq!(labels.change_anything(), name != "keep", "{name}");
        }
    }

    #[test]
    fn only_a_pause_that_ended_sets_the_rerun_label_first() {
        let cases = [
            (ExitStatus::Unpaused, true),
            (ExitStatus::Message("m".into()), false),
            (
                ExitStatus::Paused {
                    is_promise: false,
                    carried: CarryOver::default(),
                },
                false,
            ),
        ];
        for (status, want) in cases {
            let name = format!("{status:?}");
            let d = exit(status);
            assert_eq!((d.labels.rerun, d.labels_first), (want, want), "{name}");
            assert_eq!(d.next, Next::Done, "{name}");
        }
    }

    #[test]
    fn each_early_end_writes_its_own_status() {
        let paused = |is_promise| ExitStatus::Paused {
            is_promise,
            carried: CarryOver::default(),
        };
        let conditions = |s: &Value| -> Vec<(String, String, String)> {
            crate::api::condition::in_status(s)
                .into_iter()
                .map(|c| (c.type_, c.status.as_str().to_string(), c.reason))
                .collect()
        };
        let c = |t: &str, s: &str, r: &str| (t.to_string(), s.to_string(), r.to_string());
        let before = json!({"message": "m", "observedGeneration": 1});
        let cases = [
            (
                "message",
                ExitStatus::Message("deleting 2 requests".into()),
                json!({"message": "deleting 2 requests", "observedGeneration": 1}),
                vec![],
            ),
            (
                "paused request",
                paused(false),
                before.clone(),
                vec![c("Reconciled", "Unknown", "PausedReconciliation")],
            ),
            (
                "paused Promise",
                paused(true),
                json!({"message": "m", "observedGeneration": 1, "status": "Unavailable"}),
                vec![
                    c("Reconciled", "Unknown", "PausedReconciliation"),
                    c("Available", "False", "PausedReconciliation"),
                ],
            ),
            (
                "unpaused",
                ExitStatus::Unpaused,
                before.clone(),
                vec![c("Reconciled", "Unknown", "Unpaused")],
            ),
            (
                "migrated",
                ExitStatus::Migrated {
                    action: Action::Configure,
                    workflow: WorkflowStatus::default(),
                },
                before.clone(),
                vec![],
            ),
        ];
        for (name, exit, want, want_conditions) in cases {
            let mut s = before.clone();
            exit.apply(&mut s);
            assert_eq!(conditions(&s), want_conditions, "{name}");
            if let Some(map) = s.as_object_mut() {
                map.remove("conditions");
            }
            assert_eq!(s, want, "{name}");
        }
        let mut flat =
            json!({"kratix": {"workflows": {"pipelines": [], "suspendedGeneration": 2}}});
        ExitStatus::Migrated {
            action: Action::Configure,
            workflow: WorkflowStatus::default(),
        }
        .apply(&mut flat);
        assert_eq!(flat, json!({}), "the flat fields go");
    }
}
