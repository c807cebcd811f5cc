//! Which objects a change concerns: the changed object, those that wait on it (its owners),
//! and for some kinds every object that depends on them.

use crate::api::{labels, ObjectKey, GROUP};
use crate::platform::builtin;
use crate::store::Selector;

use crate::api::promise_release::RELEASE_NAME_LABEL;

use crate::controllers::destination;
use crate::controllers::lookups;
use crate::controllers::placement::conditions::held_by_path_refusal;
use crate::controllers::promise::release;
use crate::controllers::promise::revision;
use crate::controllers::request::binding;
use crate::controllers::runtime::LastSeen;
use crate::controllers::state_store;
use crate::controllers::Error;
use crate::controllers::Runtime;

impl Runtime {
    /// The objects to reconcile when `key` changed (`modified`: it was neither made nor deleted):
    /// itself and those that depend on it. `seen`: the object as its last change left it, when
    /// the change feed said so; otherwise it is read.
    pub(super) async fn affected_by(
        &self,
        key: &ObjectKey,
        modified: bool,
        seen: Option<&LastSeen>,
    ) -> Result<Vec<ObjectKey>, Error> {
        let mut out = vec![key.clone()];
        if modified && owners_fixed_at_creation(key) {
            if let Some(owners) = self.remembered_owners(key) {
                // Its owners come from labels it was made with: no need to read it again.
                out.extend(owners);
                return Ok(out);
            }
        }
        if key.group.is_empty() {
            if key.kind == "Secret" {
                out.extend(state_store::stores_using_secret(self, key).await?);
                out.extend(release::using_secret(self, key).await?);
            }
            out.retain(|k| !k.group.is_empty());
            return Ok(out);
        }
        let Some(kind) = self.kind_of(key).await? else {
            return Ok(out);
        };
        let obj = match seen {
            Some(LastSeen::Gone) => None,
            Some(LastSeen::Now(obj)) => Some(obj.as_ref().clone()),
            None => {
                self.cp
                    .get(&kind, key.namespace.as_deref(), &key.name)
                    .await?
            }
        };
        self.health_records.saw(key, obj.as_ref());
        let owners = match &obj {
            // Those it had before hear of it too: a HealthRecord that names another request
            // leaves the first one's status.
            Some(obj) => {
                let owners = self.owners(obj).await?;
                let before = self.remember_owners(key.clone(), owners.clone());
                owners_then_former(owners, before)
            }
            None => self.forget_owners(key),
        };
        out.extend(owners);
        if key.group != GROUP {
            return Ok(out);
        }
        match key.kind.as_str() {
            "Destination" => {
                for work in self
                    .cp
                    .list(
                        &builtin(crate::api::Builtin::Work),
                        None,
                        &Selector::everything(),
                    )
                    .await?
                {
                    out.push(ObjectKey::of(&work));
                }
                // Its placements held while it was refused a path (none, or another's): they
                // are written once it is admitted, which changes no Work.
                let placements = self
                    .cp
                    .list(
                        &builtin(crate::api::Builtin::WorkPlacement),
                        None,
                        &Selector::from_labels([(labels::TARGET_DESTINATION, key.name.as_str())]),
                    )
                    .await?;
                out.extend(
                    placements
                        .iter()
                        .filter(|wp| held_by_path_refusal(&crate::api::condition::of(wp)))
                        .map(ObjectKey::of),
                );
                // A path it held or gave up may admit or refuse another Destination.
                for dest in self.destinations.all(self).await?.iter() {
                    let other = ObjectKey::of(dest);
                    if &other != key {
                        out.push(other);
                    }
                }
            }
            "GitStateStore" | "BucketStateStore" => {
                out.extend(destination::using_store(self, &key.kind, &key.name).await?);
            }
            "Promise" => {
                out.extend(lookups::request_keys(self, &key.name).await?);
                out.extend(lookups::promises_requiring(self, &key.name).await?);
                out.extend(lookups::promises_required_by(self, &key.name, obj.as_ref()).await?);
            }
            // Requests of a versioned Promise run with its revisions; a deleted revision's
            // Promise is known from its remembered owners.
            "PromiseRevision" => {
                let promise = obj
                    .as_ref()
                    .and_then(revision::promise_key)
                    .or_else(|| out.iter().find(|k| k.kind == "Promise").cloned());
                if let Some(promise) = promise {
                    out.extend(lookups::request_keys(self, &promise.name).await?);
                }
            }
            _ => {}
        }
        Ok(out)
    }

    /// The objects that wait on `obj`: the Promise or request of a PipelineRun or Work; the
    /// Work and Destination of a WorkPlacement; the request of a HealthRecord; the Promise of a
    /// request being deleted.
    pub(super) async fn owners(&self, obj: &crate::api::Object) -> Result<Vec<ObjectKey>, Error> {
        let key = ObjectKey::of(obj);
        let label = |k| crate::api::object::label(obj, k);
        if key.group == GROUP {
            return match key.kind.as_str() {
                "PipelineRun" | "Work" => self.owner_of_workflow_object(obj).await,
                "HealthRecord" => crate::controllers::request::health::owners(self, obj).await,
                // A binding's request runs with the version it names.
                "ResourceBinding" => {
                    let kind = match label(labels::PROMISE_NAME) {
                        Some(promise) => self.request_kind_of(promise).await?,
                        None => None,
                    };
                    Ok(binding::request_of(kind.as_ref(), obj)
                        .into_iter()
                        .collect())
                }
                // A Promise keeps the revision of its current version: one deleted where
                // nothing refuses it (Kubernetes has no admission for it here) comes back.
                "PromiseRevision" => Ok(revision::promise_key(obj).into_iter().collect()),
                // A release keeps the Promise it installed.
                "Promise" => Ok(label(RELEASE_NAME_LABEL)
                    .map(|r| ObjectKey::new(GROUP, "PromiseRelease", None, r))
                    .into_iter()
                    .collect()),
                "WorkPlacement" => {
                    let mut out = Vec::new();
                    if let Some(work) = label(labels::WORK) {
                        out.push(ObjectKey::new(
                            GROUP,
                            "Work",
                            key.namespace.as_deref(),
                            work,
                        ));
                    }
                    if let Some(dest) = label(labels::TARGET_DESTINATION) {
                        out.push(ObjectKey::new(GROUP, "Destination", None, dest));
                    }
                    Ok(out)
                }
                _ => Ok(vec![]),
            };
        }
        // A Promise being deleted waits for its requests to go.
        match label(labels::PROMISE_NAME) {
            Some(promise) if obj.metadata.deletion_timestamp.is_some() && !key.group.is_empty() => {
                Ok(vec![ObjectKey::new(GROUP, "Promise", None, promise)])
            }
            _ => Ok(vec![]),
        }
    }

    /// Remembers the owners `key` has now; returns those it had before.
    pub(super) fn remember_owners(&self, key: ObjectKey, owners: Vec<ObjectKey>) -> Vec<ObjectKey> {
        let Ok(mut seen) = self.owners_seen.lock() else {
            return vec![];
        };
        let before = if owners.is_empty() {
            seen.remove(&key)
        } else {
            seen.insert(key, owners)
        };
        before.unwrap_or_default()
    }

    fn remembered_owners(&self, key: &ObjectKey) -> Option<Vec<ObjectKey>> {
        self.owners_seen.lock().ok()?.get(key).cloned()
    }

    fn forget_owners(&self, key: &ObjectKey) -> Vec<ObjectKey> {
        self.owners_seen
            .lock()
            .ok()
            .and_then(|mut seen| seen.remove(key))
            .unwrap_or_default()
    }

    /// The Promise or request that a PipelineRun or Work belongs to.
    async fn owner_of_workflow_object(
        &self,
        obj: &crate::api::Object,
    ) -> Result<Vec<ObjectKey>, Error> {
        let label = |k| crate::api::object::label(obj, k).map(str::to_string);
        let Some(promise) = label(labels::PROMISE_NAME) else {
            return Ok(vec![]);
        };
        match label(labels::RESOURCE_NAME) {
            Some(resource) => {
                let Some(kind) = self.request_kind_of(&promise).await? else {
                    return Ok(vec![]);
                };
                let ns =
                    label(labels::RESOURCE_NAMESPACE).or_else(|| obj.metadata.namespace.clone());
                Ok(vec![ObjectKey::new(
                    &kind.group,
                    &kind.kind,
                    ns.as_deref(),
                    &resource,
                )])
            }
            None => Ok(vec![ObjectKey::new(GROUP, "Promise", None, &promise)]),
        }
    }
}

/// Whether the owners of objects of `key`'s kind come from labels they are made with and keep:
/// a pipeline run's and a Work's object, a placement's Work and Destination.
fn owners_fixed_at_creation(key: &ObjectKey) -> bool {
    key.group == GROUP && matches!(key.kind.as_str(), "PipelineRun" | "Work" | "WorkPlacement")
}

/// The owners an object has now, then those it had before and has no more.
fn owners_then_former(now: Vec<ObjectKey>, before: Vec<ObjectKey>) -> Vec<ObjectKey> {
    let mut out = now;
    for key in before {
        if !out.contains(&key) {
            out.push(key);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn former_owners_follow_the_current_ones_once() {
        let k = |name: &str| ObjectKey::new("example.com", "Redis", Some("default"), name);
        let cases = [
            (vec![k("a")], vec![k("a")], vec![k("a")]),
            (vec![k("b")], vec![k("a")], vec![k("b"), k("a")]),
            (vec![], vec![k("a")], vec![k("a")]),
            (
                vec![k("a"), k("b")],
                vec![k("b"), k("c")],
                vec![k("a"), k("b"), k("c")],
            ),
            (vec![], vec![], vec![]),
        ];
        for (now, before, want) in cases {
            assert_eq!(
                owners_then_former(now.clone(), before.clone()),
                want,
                "{now:?} {before:?}"
            );
        }
    }

    #[test]
    fn owners_are_read_again_unless_made_with_their_object() {
        let cases = [
            (GROUP, "PipelineRun", true),
            (GROUP, "Work", true),
            (GROUP, "WorkPlacement", true),
            (GROUP, "HealthRecord", false),
            (GROUP, "ResourceBinding", false),
            (GROUP, "Promise", false),
            ("example.com", "Work", false),
        ];
        for (group, kind, want) in cases {
            let key = ObjectKey::new(group, kind, Some("default"), "x");
            assert_eq!(owners_fixed_at_creation(&key), want, "{group} {kind}");
        }
    }
}
