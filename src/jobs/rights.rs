//! When a version's pipeline rights go. Each run applies its version's rights (see
//! [`super::rbac`]); once a run ends, the rights of the pipeline's *other* versions in the same
//! namespace that no run uses any more are deleted: no unfinished Job of that version is left and
//! no run of it is starting in this controller. The version that just ran keeps its rights, as
//! its next run is the likeliest.
//!
//! Pure: which versions to clean ([`stale_versions`]) and what deleting one version's rights
//! means ([`plan`]); [`InFlight`] counts the runs of this controller between applying their
//! rights and their end, which no listing of Jobs can see while the Job is not created yet.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use super::identity::{Identity, PROMISE_VERSION_LABEL};
use super::sweep::{Sweep, Swept};

/// The kinds a pipeline's rights are made of.
const RIGHTS: [Swept; 5] = [
    Swept::ServiceAccount,
    Swept::Role,
    Swept::RoleBinding,
    Swept::ClusterRole,
    Swept::ClusterRoleBinding,
];

/// A label selector of `labels`, in order.
pub(crate) fn selector(labels: &BTreeMap<String, String>) -> String {
    labels
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// The selector of the pipeline's rights in `namespace` of every version but the run's.
pub(crate) fn other_versions_selector(identity: &Identity, namespace: &str) -> String {
    format!(
        "{},{PROMISE_VERSION_LABEL}!={}",
        selector(&identity.rights_labels(namespace)),
        identity.promise_version
    )
}

/// The selector of the pipeline's Jobs in their namespace, of every request and version.
pub(crate) fn jobs_selector(identity: &Identity) -> String {
    selector(&identity.workflow_labels())
}

/// The versions among `present` to clean: every one but `current` that no run uses.
pub(crate) fn stale_versions(
    present: &BTreeSet<String>,
    in_use: &BTreeSet<String>,
    current: &str,
) -> Vec<String> {
    present
        .iter()
        .filter(|v| v.as_str() != current && !in_use.contains(*v))
        .cloned()
        .collect()
}

/// What deleting the pipeline's rights of `version` in `namespace` deletes: every kind, found
/// by the pipeline's labels and the version (bindings and roles may be in other namespaces, for
/// permissions there).
pub(crate) fn plan(identity: &Identity, namespace: &str, version: &str) -> Vec<Sweep> {
    let mut labels = identity.rights_labels(namespace);
    labels.insert(PROMISE_VERSION_LABEL.into(), version.into());
    let selector = selector(&labels);
    RIGHTS
        .iter()
        .map(|kind| Sweep {
            kind: *kind,
            namespace: None,
            selector: selector.clone(),
        })
        .collect()
}

/// The key of one pipeline's rights at one version in one namespace.
fn key(identity: &Identity, namespace: &str) -> (String, String) {
    (
        selector(&identity.rights_labels(namespace)),
        identity.promise_version.clone(),
    )
}

/// The runs of this controller that hold their version's rights, by pipeline and version.
#[derive(Debug, Clone, Default)]
pub(crate) struct InFlight {
    runs: Arc<Mutex<HashMap<(String, String), usize>>>,
}

impl InFlight {
    /// Counts a run from before it applies its rights until the returned guard drops.
    pub(crate) fn enter(&self, identity: &Identity, namespace: &str) -> Guard {
        let key = key(identity, namespace);
        *self.lock().entry(key.clone()).or_default() += 1;
        Guard {
            runs: self.clone(),
            key,
        }
    }

    /// The versions of the pipeline in `namespace` that runs of this controller hold.
    pub(crate) fn versions(&self, identity: &Identity, namespace: &str) -> BTreeSet<String> {
        let pipeline = selector(&identity.rights_labels(namespace));
        self.lock()
            .iter()
            .filter(|((p, _), n)| *p == pipeline && **n > 0)
            .map(|((_, v), _)| v.clone())
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), usize>> {
        // A panic while holding it leaves only counts behind, which stay usable.
        self.runs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// One run counted by [`InFlight::enter`].
#[derive(Debug)]
pub(crate) struct Guard {
    runs: InFlight,
    key: (String, String),
}

impl Drop for Guard {
    fn drop(&mut self) {
        let mut runs = self.runs.lock();
        if let Some(n) = runs.get_mut(&self.key) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                runs.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Action;

    fn identity(version: &str) -> Identity {
        Identity {
            action: Action::Configure,
            promise: "db".into(),
            promise_version: version.into(),
            pipeline: "instance".into(),
            resource: None,
        }
    }

    fn set(items: &[&str]) -> BTreeSet<String> {
        items.iter().map(std::string::ToString::to_string).collect()
    }

    #[test]
    fn only_other_versions_no_run_uses_are_stale() {
        let cases = [
            ("nothing else", set(&["v2"]), set(&[]), "v2", vec![]),
            (
                "an idle old version",
                set(&["v1", "v2"]),
                set(&[]),
                "v2",
                vec!["v1"],
            ),
            (
                "an old version still running",
                set(&["v1", "v2"]),
                set(&["v1"]),
                "v2",
                vec![],
            ),
            (
                "a newer version is not the run's to keep when idle",
                set(&["v1", "v2", "v3"]),
                set(&["v3"]),
                "v1",
                vec!["v2"],
            ),
        ];
        for (case, present, in_use, current, want) in cases {
            assert_eq!(
                stale_versions(&present, &in_use, current),
                want.iter()
                    .map(std::string::ToString::to_string)
                    .collect::<Vec<_>>(),
                "{case}"
            );
        }
    }

    #[test]
    fn a_version_plan_selects_its_rights_of_every_kind() {
        let got = plan(&identity("v2"), "kratix-platform-system", "v1");
        assert_eq!(
            got.iter().map(|s| s.kind).collect::<Vec<_>>(),
            RIGHTS.to_vec()
        );
        for s in &got {
            assert_eq!(s.namespace, None);
            assert_eq!(
                s.selector,
                "kratix.io/pipeline-name=instance,kratix.io/pipeline-namespace=kratix-platform-system,\
                 kratix.io/promise-name=db,kratix.io/promise-version=v1,\
                 kratix.io/workflow-action=configure,kratix.io/workflow-type=promise"
            );
        }
        assert_eq!(
            other_versions_selector(&identity("v2"), "ns"),
            "kratix.io/pipeline-name=instance,kratix.io/pipeline-namespace=ns,\
             kratix.io/promise-name=db,kratix.io/workflow-action=configure,\
             kratix.io/workflow-type=promise,kratix.io/promise-version!=v2"
        );
    }

    #[test]
    fn runs_in_flight_count_until_their_guard_drops() {
        let runs = InFlight::default();
        let a = runs.enter(&identity("v1"), "ns");
        let b = runs.enter(&identity("v1"), "ns");
        let c = runs.enter(&identity("v2"), "ns");
        let _elsewhere = runs.enter(&identity("v3"), "other");
        assert_eq!(runs.versions(&identity("v9"), "ns"), set(&["v1", "v2"]));
        drop(a);
        drop(c);
        assert_eq!(runs.versions(&identity("v9"), "ns"), set(&["v1"]));
        drop(b);
        assert_eq!(runs.versions(&identity("v9"), "ns"), set(&[]));
    }
}
