//! PromiseRevisions: a Promise labelled `kratix.io/promise-version` gets one revision per version,
//! holding its spec at that version; the revision of the current version is the latest. As in
//! Kratix's `handlePromiseVersion` and PromiseRevision controller:
//! <https://github.com/syntasso/kratix/blob/ae170e22e974e45bb7cfda00986057e01b3ccfde/internal/controller/promise_controller.go>.
//!
//! Unlike Kratix, a Promise without the label gets no revision (Kratix makes one for version
//! `not-set`): such Promises and their requests behave exactly as without versions. Deleting a
//! revision never deletes requests ([`deletion`]).

use std::collections::BTreeMap;

use serde_json::json;

use crate::api::object::{label, to_typed};
use crate::api::versions::{PromiseRef, LATEST_REVISION_LABEL};
use crate::api::{finalizers, labels, names, Builtin, Object, ObjectKey, PromiseRevision, GROUP};
use crate::platform::builtin;
use crate::store::Selector;

mod deletion;

use crate::controllers::{status, Error, Next, Runtime};
use crate::events::Reason;

/// A revision as the decisions need it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RevisionInfo {
    pub(crate) name: String,
    pub(crate) version: String,
    pub(crate) latest: bool,
}

/// Why no revision answers a version.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ResolveError {
    #[error(
        "cannot find any PromiseRevision for Promise {promise} with status.latest set to true"
    )]
    NoLatest { promise: String },
    #[error("cannot find a PromiseRevision for Promise {promise} with version {version}")]
    NotFound { promise: String, version: String },
    #[error("multiple PromiseRevisions for Promise {promise} with version {version}")]
    Multiple { promise: String, version: String },
}

/// The revision `desired` names among a Promise's revisions: `latest` is the one marked latest,
/// anything else the one of exactly that version (Kratix's `fetchRevision`).
pub(crate) fn resolve<'a>(
    promise: &str,
    desired: &str,
    revisions: &'a [RevisionInfo],
) -> Result<&'a RevisionInfo, ResolveError> {
    if desired == crate::api::versions::LATEST {
        return revisions
            .iter()
            .find(|r| r.latest)
            .ok_or_else(|| ResolveError::NoLatest {
                promise: promise.into(),
            });
    }
    let mut matching = revisions.iter().filter(|r| r.version == desired);
    match (matching.next(), matching.next()) {
        (Some(one), None) => Ok(one),
        (None, _) => Err(ResolveError::NotFound {
            promise: promise.into(),
            version: desired.into(),
        }),
        (Some(_), Some(_)) => Err(ResolveError::Multiple {
            promise: promise.into(),
            version: desired.into(),
        }),
    }
}

/// Whether the revision is its Promise's latest (its label or its status says so).
fn is_latest(revision: &Object) -> bool {
    label(revision, LATEST_REVISION_LABEL) == Some("true")
        || revision
            .data
            .pointer("/status/latest")
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(false)
}

/// Why deleting a revision is refused, if it is: the latest one may not go (Kratix's admission
/// webhook refuses it); it goes with its Promise.
pub(crate) fn deletion_refused(revision: &Object) -> Option<String> {
    is_latest(revision).then(|| {
        let promise = revision
            .data
            .pointer("/spec/promiseRef/name")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default();
        format!(
            "can not delete the latest PromiseRevision: it is the latest revision of Promise \
             {promise}; apply the Promise at another version first, or delete the Promise"
        )
    })
}

/// Whether creating the revision of `version` makes again one that was deleted: the Promise
/// already recorded that version (`status.version`), so its revision existed before. A new
/// version, or a Promise not reconciled yet, gets its revision for the first time.
pub(crate) fn made_again(recorded_version: Option<&str>, version: &str) -> bool {
    recorded_version == Some(version)
}

/// The name of a Promise's revision of `version`, as Kratix names it.
pub(crate) fn revision_name(promise: &str, version: &str) -> String {
    names::deterministic_name(promise, &[version])
}

/// Every revision of a Promise (stored objects).
pub(crate) async fn revisions_of(rt: &Runtime, promise: &str) -> Result<Vec<Object>, Error> {
    let selector = Selector::from_labels([(labels::PROMISE_NAME, promise)]);
    Ok(rt
        .cp
        .list(&builtin(Builtin::PromiseRevision), None, &selector)
        .await?)
}

/// A stored revision as the decisions need it.
pub(crate) fn info(obj: &Object) -> Result<RevisionInfo, Error> {
    let typed: PromiseRevision =
        to_typed(obj).map_err(|source| Error::malformed(obj, "PromiseRevision", source))?;
    Ok(RevisionInfo {
        name: obj.metadata.name.clone().unwrap_or_default(),
        version: typed.spec.version,
        latest: typed.status.is_some_and(|s| s.latest),
    })
}

/// Makes the revision of the Promise's current version hold its spec and be the only latest
/// one. Does nothing for a Promise without a version label.
pub(crate) async fn sync(rt: &Runtime, promise: &Object) -> Result<(), Error> {
    let Some(version) = label(promise, labels::PROMISE_VERSION) else {
        return Ok(());
    };
    let promise_name = promise.metadata.name.clone().unwrap_or_default();
    let kind = builtin(Builtin::PromiseRevision);
    let name = revision_name(&promise_name, version);
    let spec = json!({
        "promiseRef": PromiseRef { name: promise_name.clone() },
        "promiseSpec": promise.data.get("spec").cloned().unwrap_or_else(|| json!({})),
        "version": version,
    });
    let wanted_labels = BTreeMap::from([
        (labels::PROMISE_NAME.to_string(), promise_name.clone()),
        (LATEST_REVISION_LABEL.to_string(), "true".to_string()),
    ]);
    match rt.cp.get(&kind, None, &name).await? {
        None => {
            let mut obj: Object = serde_json::from_value(json!({
                "apiVersion": crate::api::API_VERSION,
                "kind": "PromiseRevision",
                "metadata": {
                    "name": name,
                    "labels": wanted_labels,
                    "finalizers": [finalizers::PROMISE_REVISION],
                },
                "spec": spec,
            }))
            .map_err(|source| Error::malformed(promise, "Promise", source))?;
            // The Promise owns its revisions: on Kubernetes they go with it.
            obj.metadata.owner_references = Some(vec![crate::api::object::controller_reference(
                promise, "Promise", None,
            )]);
            rt.cp.create(&kind, &obj).await?;
            let recorded = promise
                .data
                .pointer("/status/version")
                .and_then(serde_json::Value::as_str);
            if made_again(recorded, version) {
                let message = format!(
                    "PromiseRevision {name} was deleted, but it is the latest revision of this \
                     Promise (Kratix refuses deleting it); it was made again"
                );
                tracing::warn!(promise = %promise_name, revision = %name, "{message}");
                crate::events::record(&rt.cp, promise, Reason::LatestRevisionRecreated, &message)
                    .await;
            }
        }
        Some(current) => {
            let key = ObjectKey::of(&current);
            status::update_object(rt.cp.as_ref(), &kind, &key, |o| {
                if let Some(map) = o.data.as_object_mut() {
                    map.insert("spec".into(), spec.clone());
                }
                let l = o.metadata.labels.get_or_insert_with(Default::default);
                l.extend(wanted_labels.clone());
            })
            .await?;
        }
    }
    mark_latest(rt, &promise_name, &name).await
}

/// `name` is the Promise's only latest revision: the label and `status.latest` say so.
async fn mark_latest(rt: &Runtime, promise: &str, name: &str) -> Result<(), Error> {
    let kind = builtin(Builtin::PromiseRevision);
    for obj in revisions_of(rt, promise).await? {
        let key = ObjectKey::of(&obj);
        let latest = key.name == name;
        if !latest && label(&obj, LATEST_REVISION_LABEL).is_some() {
            status::update_object(rt.cp.as_ref(), &kind, &key, |o| {
                if let Some(l) = o.metadata.labels.as_mut() {
                    l.remove(LATEST_REVISION_LABEL);
                }
            })
            .await?;
        }
        set_latest_status(rt, &key, latest).await?;
    }
    Ok(())
}

async fn set_latest_status(rt: &Runtime, key: &ObjectKey, latest: bool) -> Result<(), Error> {
    let kind = builtin(Builtin::PromiseRevision);
    status::update_status(rt.cp.as_ref(), &kind, key, |_, s| {
        if latest {
            status::set_field(s, "latest", json!(true));
        } else if let Some(map) = s.as_object_mut() {
            map.remove("latest");
        }
    })
    .await?;
    Ok(())
}

/// The PromiseRevision controller: `status.latest` follows the latest-revision label; a
/// revision carries the finalizer that lets its deletion be reported ([`deletion`]).
pub(crate) async fn reconcile(rt: &Runtime, obj: Object) -> Result<Next, Error> {
    if obj.metadata.deletion_timestamp.is_some() {
        return deletion::finish(rt, &obj).await;
    }
    let kind = builtin(Builtin::PromiseRevision);
    let Some(obj) =
        status::add_finalizer(rt.cp.as_ref(), &kind, &obj, finalizers::PROMISE_REVISION).await?
    else {
        return Ok(Next::Done);
    };
    let latest = label(&obj, LATEST_REVISION_LABEL) == Some("true");
    set_latest_status(rt, &ObjectKey::of(&obj), latest).await?;
    Ok(Next::Done)
}

/// Deletes every revision of a Promise that is going away (each goes once the revision
/// controller has seen it go).
pub(crate) async fn delete_all(rt: &Runtime, promise: &str) -> Result<(), Error> {
    let kind = builtin(Builtin::PromiseRevision);
    for obj in revisions_of(rt, promise).await? {
        status::delete_if_present(rt.cp.as_ref(), &kind, &obj).await?;
    }
    Ok(())
}

/// The Promise of a revision, to wake when the revision changes.
pub(crate) fn promise_key(obj: &Object) -> Option<ObjectKey> {
    label(obj, labels::PROMISE_NAME).map(|p| ObjectKey::new(GROUP, "Promise", None, p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_revision_is_made_again_when_its_version_was_recorded() {
        let cases = [
            (None, "v1", false),
            (Some("v1"), "v2", false),
            (Some("v2"), "v2", true),
            (Some("not-set"), "v1", false),
        ];
        for (recorded, version, want) in cases {
            assert_eq!(
                made_again(recorded, version),
                want,
                "{recorded:?} {version}"
            );
        }
    }

    fn rev(version: &str, latest: bool) -> RevisionInfo {
        RevisionInfo {
            name: format!("db-{version}"),
            version: version.into(),
            latest,
        }
    }

    #[test]
    fn versions_resolve_as_kratix_resolves_them() {
        let two = [rev("v1", false), rev("v2", true)];
        let dup = [rev("v1", false), rev("v1", true)];
        let no_latest = [rev("v1", false)];
        type Case<'a> = (
            &'a str,
            &'a str,
            &'a [RevisionInfo],
            Result<&'a str, ResolveError>,
        );
        let cases: Vec<Case> = vec![
            ("latest follows the marked one", "latest", &two, Ok("db-v2")),
            ("an exact older version", "v1", &two, Ok("db-v1")),
            ("an exact latest version", "v2", &two, Ok("db-v2")),
            (
                "a version without a revision",
                "v3",
                &two,
                Err(ResolveError::NotFound {
                    promise: "db".into(),
                    version: "v3".into(),
                }),
            ),
            (
                "no revision is marked latest yet",
                "latest",
                &no_latest,
                Err(ResolveError::NoLatest {
                    promise: "db".into(),
                }),
            ),
            (
                "no revisions at all",
                "latest",
                &[],
                Err(ResolveError::NoLatest {
                    promise: "db".into(),
                }),
            ),
            (
                "two revisions of one version",
                "v1",
                &dup,
                Err(ResolveError::Multiple {
                    promise: "db".into(),
                    version: "v1".into(),
                }),
            ),
            (
                "version names are exact",
                "V2",
                &two,
                Err(ResolveError::NotFound {
                    promise: "db".into(),
                    version: "V2".into(),
                }),
            ),
        ];
        for (name, desired, revisions, want) in cases {
            let got = resolve("db", desired, revisions).map(|r| r.name.as_str());
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn only_the_latest_revision_is_refused_deletion() {
        let object =
            |v: serde_json::Value| -> Object { serde_json::from_value(v).expect("object") };
        let cases = [
            (
                json!({"metadata": {"name": "a"}, "spec": {"promiseRef": {"name": "db"}},
                "status": {"latest": true}}),
                true,
            ),
            (
                json!({"metadata": {"name": "a", "labels": {LATEST_REVISION_LABEL: "true"}},
                "spec": {"promiseRef": {"name": "db"}}}),
                true,
            ),
            (
                json!({"metadata": {"name": "a"}, "spec": {"promiseRef": {"name": "db"}},
                "status": {}}),
                false,
            ),
            (json!({"metadata": {"name": "a"}}), false),
        ];
        for (value, refused) in cases {
            let got = deletion_refused(&object(value.clone()));
            assert_eq!(got.is_some(), refused, "{value}");
            if let Some(message) = got {
                assert!(message.contains("Promise db"), "{message}");
            }
        }
    }

    #[test]
    fn revisions_are_named_after_promise_and_version() {
        assert_eq!(revision_name("db", "v1"), "db-6654c");
        assert_ne!(revision_name("db", "v2"), revision_name("db", "v1"));
    }
}
