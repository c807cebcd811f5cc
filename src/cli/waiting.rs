//! The waiting commands besides `apply`: `delete`, `wait` and `reconcile`, with their progress.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use crate::api::{labels, KindInfo, ObjectKey};
use crate::controllers;
use crate::platform::Platform;
use crate::store::{self, ControlPlane};

use super::driver::Driver;
use super::progress::printer::{object_event, Mode, Progress};
use super::{documents, metadata, wait, ProgressArgs, ProgressOutput, WaitArgs};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Platform(#[from] crate::platform::Error),
    #[error(transparent)]
    Documents(#[from] documents::Error),
    #[error(transparent)]
    Wait(#[from] wait::Error),
    #[error(transparent)]
    Metadata(#[from] metadata::Error),
    /// A command's arguments don't fit together.
    #[error("{0}")]
    Usage(String),
    /// The object named on the command line does not exist.
    #[error("{key} not found")]
    NotFound { key: ObjectKey },
    #[error("updating {key}")]
    Store {
        key: ObjectKey,
        #[source]
        source: store::Error,
    },
}

/// The key of the object named `name` of `kind` (namespaced kinds default to `default`).
pub(super) fn key_for(kind: &KindInfo, name: &str, namespace: Option<&str>) -> ObjectKey {
    let ns = kind
        .namespaced
        .then(|| namespace.unwrap_or("default").to_string());
    ObjectKey::new(&kind.group, &kind.kind, ns.as_deref(), name)
}

/// `KIND NAME -n NS` as given on the command line.
type Named<'a> = (&'a str, &'a str, Option<&'a str>);

pub(super) async fn delete(
    platform: &Platform,
    driver: &Driver,
    files: &[PathBuf],
    target: &[String],
    namespace: Option<&str>,
    w: &WaitArgs,
) -> Result<(), Error> {
    let targets = delete_targets(platform, files, target, namespace).await?;
    let cp = platform.control_plane();
    refuse_protected(cp.as_ref(), &targets).await?;
    let progress = progress_for(platform, &w.progress);
    let uids = uids_of(cp.as_ref(), &targets).await?;
    for (kind, key) in &targets {
        match cp.delete(kind, key.namespace.as_deref(), &key.name).await {
            Ok(_) => progress.say(
                &format!("{}/{} deleted", kind.kind.to_ascii_lowercase(), key.name),
                object_event(key, kind, json!({"event": "DeleteRequested"})),
            ),
            Err(store::Error::NotFound { .. }) => return Err(Error::NotFound { key: key.clone() }),
            Err(source) => {
                return Err(Error::Store {
                    key: key.clone(),
                    source,
                })
            }
        }
    }
    if !w.no_wait {
        with_progress(driver, &progress, &targets, || {
            wait_gone(driver, platform, &targets, &uids, w.timeout())
        })
        .await?;
    }
    Ok(())
}

pub(super) async fn wait(
    platform: &Platform,
    driver: &Driver,
    (kind, name, namespace): Named<'_>,
    for_: &str,
    timeout: Duration,
    progress: &ProgressArgs,
) -> Result<(), Error> {
    let kind = platform.resolve_kind(kind).await?;
    let key = key_for(&kind, name, namespace);
    let progress = progress_for(platform, progress);
    let targets = [(kind.clone(), key.clone())];
    if for_ == "delete" {
        let uids = uids_of(platform.control_plane().as_ref(), &targets).await?;
        return with_progress(driver, &progress, &targets, || {
            wait_gone(driver, platform, &targets, &uids, timeout)
        })
        .await;
    }
    let spec = for_.strip_prefix("condition=").ok_or_else(|| {
        Error::Usage(format!(
            "--for {for_:?}: expected condition=TYPE[=STATUS] or delete"
        ))
    })?;
    let (type_, status) = spec
        .split_once('=')
        .unwrap_or((spec, crate::api::ConditionStatus::True.as_str()));
    let cp = platform.control_plane();
    let what = format!("{key} to have condition {type_}={status}");
    with_progress(driver, &progress, &targets, || async {
        wait::drive_until(driver, timeout, &what, || {
            let (cp, kind, key) = (cp.clone(), kind.clone(), key.clone());
            async move {
                let obj = wait::get(cp.as_ref(), &kind, &key).await?;
                Ok(obj
                    .filter(|o| wait::condition_met(o, type_, status))
                    .map(|_| ()))
            }
        })
        .await
        .map_err(Error::from)
    })
    .await?;
    progress.say(
        &format!(
            "{} {} condition met",
            kind.kind.to_ascii_lowercase(),
            key.name
        ),
        object_event(
            &key,
            &kind,
            json!({"event": "ConditionMet", "condition": type_, "status": status}),
        ),
    );
    Ok(())
}

pub(super) async fn reconcile(
    platform: &Platform,
    driver: &Driver,
    (kind, name, namespace): Named<'_>,
    w: &WaitArgs,
) -> Result<(), Error> {
    let kind = platform.resolve_kind(kind).await?;
    let key = key_for(&kind, name, namespace);
    request_manual_reconciliation(platform.control_plane().as_ref(), &kind, &key).await?;
    let progress = progress_for(platform, &w.progress);
    progress.say(
        &format!(
            "{} {} reconciliation requested",
            kind.kind.to_ascii_lowercase(),
            key.name
        ),
        object_event(&key, &kind, json!({"event": "ReconciliationRequested"})),
    );
    if w.no_wait {
        return Ok(());
    }
    // The controller removes the label when it starts the re-run; only then do the
    // conditions describe the re-run rather than the previous one.
    let cp = platform.control_plane();
    wait::drive_until(driver, w.timeout(), "the re-run to start", || {
        let (cp, kind, key) = (cp.clone(), kind.clone(), key.clone());
        async move {
            let obj = wait::get(cp.as_ref(), &kind, &key).await?;
            Ok(match obj {
                None => Some(()),
                Some(o) => crate::api::object::label(&o, labels::MANUAL_RECONCILIATION)
                    .is_none()
                    .then_some(()),
            })
        }
    })
    .await?;
    // Progress from here: before, the conditions describe the previous run.
    let targets = [(kind.clone(), key.clone())];
    with_progress(driver, &progress, &targets, || {
        wait::settle(driver, platform, &targets, w.timeout())
    })
    .await?;
    progress.say(
        "reconciled",
        object_event(&key, &kind, json!({"event": "Reconciled"})),
    );
    Ok(())
}

/// The progress a waiting command shows, as its flags and standard error ask.
pub(super) fn progress_for(platform: &Platform, args: &ProgressArgs) -> Arc<Progress> {
    let mode = Mode::choose(
        args.quiet,
        args.output == Some(ProgressOutput::Json),
        std::io::IsTerminal::is_terminal(&std::io::stderr()),
    );
    Arc::new(Progress::new(platform.control_plane(), mode))
}

/// Runs `wait` with `progress` following `targets`, and shows how they ended, failed or not.
pub(super) async fn with_progress<F, Fut, E>(
    driver: &Driver,
    progress: &Arc<Progress>,
    targets: &[(KindInfo, ObjectKey)],
    wait: F,
) -> Result<(), Error>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Result<(), E>>,
    Error: From<E>,
{
    progress.follow(targets);
    driver.show_progress(progress.clone());
    let result = wait().await;
    progress.finish().await;
    Ok(result?)
}

async fn delete_targets(
    platform: &Platform,
    files: &[std::path::PathBuf],
    target: &[String],
    namespace: Option<&str>,
) -> Result<Vec<(KindInfo, ObjectKey)>, Error> {
    match (files.is_empty(), target) {
        (false, []) => {
            let docs = documents::load(files)?;
            let kinds = platform.kinds().await?;
            let mut out = Vec::new();
            for doc in &docs {
                let kind = kinds
                    .iter()
                    .find(|k| k.kind == doc.kind() && k.api_version() == doc.api_version())
                    .cloned()
                    .ok_or_else(|| {
                        Error::Usage(format!("{doc}: kind {:?} is not known", doc.kind()))
                    })?;
                let ns = doc
                    .value
                    .pointer("/metadata/namespace")
                    .and_then(serde_json::Value::as_str)
                    .or(namespace);
                out.push((kind.clone(), key_for(&kind, doc.name(), ns)));
            }
            // Requests before Promises, so each request's delete workflow runs with its Promise.
            out.reverse();
            Ok(out)
        }
        (true, [kind, name]) => {
            let kind = platform.resolve_kind(kind).await?;
            let key = key_for(&kind, name, namespace);
            Ok(vec![(kind, key)])
        }
        _ => Err(Error::Usage(
            "delete needs either -f PATH or KIND NAME".into(),
        )),
    }
}

/// The uids `targets` have now (`None`: absent). A controller may create a new object of the
/// same name (a PromiseRelease re-installs its Promise), and that one is not what a deletion
/// waits for.
async fn uids_of(
    cp: &dyn ControlPlane,
    targets: &[(KindInfo, ObjectKey)],
) -> Result<Vec<Option<String>>, Error> {
    let mut uids = Vec::with_capacity(targets.len());
    for (kind, key) in targets {
        uids.push(wait::get(cp, kind, key).await?.and_then(|o| o.metadata.uid));
    }
    Ok(uids)
}

/// Waits until each of `targets` is gone: absent, or replaced by a new object of the same name
/// (another uid than the one in `uids` at the same position).
async fn wait_gone(
    driver: &Driver,
    platform: &Platform,
    targets: &[(KindInfo, ObjectKey)],
    uids: &[Option<String>],
    timeout: Duration,
) -> Result<(), Error> {
    let cp = platform.control_plane();
    wait::drive_until(driver, timeout, "deletion", || {
        let cp = cp.clone();
        async move {
            for ((kind, key), uid) in targets.iter().zip(uids) {
                let current = wait::get(cp.as_ref(), kind, key).await?;
                if !is_gone(uid.as_deref(), current.as_ref()) {
                    return Ok(None);
                }
            }
            Ok(Some(()))
        }
    })
    .await?;
    Ok(())
}

/// Is the object that had `uid` (unknown: `None`) gone, given what the store holds now?
fn is_gone(uid: Option<&str>, current: Option<&crate::api::Object>) -> bool {
    match (uid, current) {
        (_, None) => true,
        (Some(uid), Some(now)) => now.metadata.uid.as_deref() != Some(uid),
        (None, Some(_)) => false,
    }
}

async fn request_manual_reconciliation(
    cp: &dyn ControlPlane,
    kind: &KindInfo,
    key: &ObjectKey,
) -> Result<(), Error> {
    metadata::update_with_retries(cp, kind, key, |obj| {
        obj.metadata
            .labels
            .get_or_insert_with(Default::default)
            .insert(labels::MANUAL_RECONCILIATION.into(), "true".into());
        Ok(metadata::Outcome::Changed)
    })
    .await?;
    Ok(())
}

/// Refuses, before anything is deleted, to delete what Kratix's admission refuses: the latest
/// revision of a Promise.
async fn refuse_protected(
    cp: &dyn ControlPlane,
    targets: &[(KindInfo, ObjectKey)],
) -> Result<(), Error> {
    for (kind, key) in targets {
        if (kind.group.as_str(), kind.kind.as_str()) != (crate::api::GROUP, "PromiseRevision") {
            continue;
        }
        let found = cp
            .get(kind, None, &key.name)
            .await
            .map_err(|source| Error::Store {
                key: key.clone(),
                source,
            })?;
        if let Some(reason) = found
            .as_ref()
            .and_then(controllers::promise::revision::deletion_refused)
        {
            return Err(Error::Usage(format!("{key}: {reason}")));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::test_objects::redis;

    #[test]
    fn an_object_is_gone_when_absent_or_replaced_by_another_uid() {
        let with_uid = |uid: Option<&str>| {
            let mut o = redis(1, serde_json::json!({}));
            o.metadata.uid = uid.map(str::to_string);
            o
        };
        let cases = [
            ("absent", Some("a"), None, true),
            ("absent, uid unknown", None, None, true),
            ("still there", Some("a"), Some(with_uid(Some("a"))), false),
            ("re-created", Some("a"), Some(with_uid(Some("b"))), true),
            (
                "uid unknown, present",
                None,
                Some(with_uid(Some("b"))),
                false,
            ),
        ];
        for (name, uid, current, want) in cases {
            assert_eq!(is_gone(uid, current.as_ref()), want, "{name}");
        }
    }
}
