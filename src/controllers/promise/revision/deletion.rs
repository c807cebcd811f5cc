//! Deleting a PromiseRevision. Kratix deletes every request bound to the version of a deleted
//! revision (its PromiseRevision controller's cleanup finalizer:
//! <https://github.com/syntasso/kratix/blob/ae170e22e974e45bb7cfda00986057e01b3ccfde/internal/controller/promiserevision_controller.go>).
//! Here a deletion never deletes requests: the requests and their ResourceBindings stay (they
//! report the missing revision until their binding names another version), and the deletion
//! of a revision whose version bindings still name leaves a Warning event, on the Promise and
//! on the revision, listing those requests. The revisions carry a finalizer so that the
//! deletion is seen, with the revision's version, however it was asked for (`kratix-rs delete`
//! or `kubectl delete`), and whether or not a controller was running at the time.

use crate::api::object::{label, to_typed};
use crate::api::{finalizers, labels, Builtin, Object, ResourceBinding};
use crate::events::Reason;
use crate::platform::builtin;
use crate::store::Selector;

use crate::controllers::promise::revision::is_latest;
use crate::controllers::{lookups, status, Error, Next, Runtime};

/// At most this many requests are named in the event; the others are counted.
pub(crate) const LISTED: usize = 10;

/// What to say when a revision of `version` goes while the bindings of `requests`
/// (`namespace/name`, sorted) name that version; `None` when none does.
pub(crate) fn in_use_message(revision: &str, version: &str, requests: &[String]) -> Option<String> {
    if requests.is_empty() {
        return None;
    }
    let mut named = requests
        .iter()
        .take(LISTED)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if requests.len() > LISTED {
        named.push_str(&format!(" and {} more", requests.len() - LISTED));
    }
    let (count, verb) = match requests.len() {
        1 => ("1 request".to_string(), "names"),
        n => (format!("{n} requests"), "name"),
    };
    Some(format!(
        "PromiseRevision {revision} (version {version}) was deleted while {count} still {verb} \
         that version: {named}; they and their ResourceBindings stay, and report the missing \
         revision until their binding names another version"
    ))
}

/// Whether the deletion of a revision is reported: not the latest one (made again at once, with
/// its own event), and not while its Promise is gone or going (its requests go with it).
pub(crate) fn reported(latest: bool, promise_stays: bool) -> bool {
    !latest && promise_stays
}

/// The requests (`namespace/name`, sorted) whose bindings name `version` of `promise`.
async fn requests_naming(rt: &Runtime, promise: &str, version: &str) -> Result<Vec<String>, Error> {
    let selector = Selector::from_labels([(labels::PROMISE_NAME, promise)]);
    let bindings = rt
        .cp
        .list(&builtin(Builtin::ResourceBinding), None, &selector)
        .await?;
    let mut requests: Vec<String> = bindings
        .iter()
        .filter(|b| b.metadata.deletion_timestamp.is_none())
        .filter_map(|b| to_typed::<ResourceBinding>(b).ok())
        .filter(|b| b.spec.version == version)
        .map(|b| {
            let r = b.spec.resource_ref;
            let namespace = Some(r.namespace)
                .filter(|n| !n.is_empty())
                .or(b.metadata.namespace)
                .unwrap_or_default();
            format!("{namespace}/{}", r.name)
        })
        .collect();
    requests.sort();
    requests.dedup();
    Ok(requests)
}

/// A revision being deleted: says which requests still name its version, then lets it go.
pub(crate) async fn finish(rt: &Runtime, revision: &Object) -> Result<Next, Error> {
    let kind = builtin(Builtin::PromiseRevision);
    if !status::has_finalizer(revision, finalizers::PROMISE_REVISION) {
        return Ok(Next::Done);
    }
    let promise_name = label(revision, labels::PROMISE_NAME).unwrap_or_default();
    let promise = match promise_name {
        "" => None,
        name => lookups::promise(rt, name).await?,
    };
    let latest = is_latest(revision);
    if let Some(promise) =
        promise.filter(|p| reported(latest, p.metadata.deletion_timestamp.is_none()))
    {
        let info = crate::controllers::promise::revision::info(revision)?;
        let requests = requests_naming(rt, promise_name, &info.version).await?;
        if let Some(message) = in_use_message(&info.name, &info.version, &requests) {
            tracing::warn!(promise = %promise_name, revision = %info.name, "{message}");
            crate::events::record(&rt.cp, &promise, Reason::RevisionStillInUse, &message).await;
            crate::events::record(&rt.cp, revision, Reason::RevisionStillInUse, &message).await;
        }
    }
    status::remove_finalizer(
        rt.cp.as_ref(),
        &kind,
        revision,
        finalizers::PROMISE_REVISION,
    )
    .await?;
    Ok(Next::Done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_event_names_the_requests_that_still_name_the_version_bounded() {
        let many: Vec<String> = (0..13).map(|i| format!("default/r{i:02}")).collect();
        let cases: Vec<(&str, Vec<String>, Option<&str>)> = vec![
            ("nobody", vec![], None),
            (
                "one",
                vec!["team-a/db".into()],
                Some(
                    "PromiseRevision db-6654c (version v1) was deleted while 1 request still \
                     names that version: team-a/db; they and their ResourceBindings stay, and \
                     report the missing revision until their binding names another version",
                ),
            ),
            (
                "two",
                vec!["a/x".into(), "b/y".into()],
                Some(
                    "PromiseRevision db-6654c (version v1) was deleted while 2 requests still \
                     name that version: a/x, b/y; they and their ResourceBindings stay, and \
                     report the missing revision until their binding names another version",
                ),
            ),
        ];
        for (name, requests, want) in cases {
            assert_eq!(
                in_use_message("db-6654c", "v1", &requests).as_deref(),
                want,
                "{name}"
            );
        }
        let message = in_use_message("db-6654c", "v1", &many).expect("a message");
        assert!(message.contains("13 requests still name"), "{message}");
        assert!(
            message.contains("default/r09 and 3 more;") && !message.contains("default/r10"),
            "{message}"
        );
    }

    #[test]
    fn only_an_older_revision_of_a_promise_that_stays_is_reported() {
        let cases = [
            ("older, Promise stays", false, true, true),
            ("latest: made again instead", true, true, false),
            ("older, Promise going", false, false, false),
            ("latest, Promise going", true, false, false),
        ];
        for (name, latest, stays, want) in cases {
            assert_eq!(reported(latest, stays), want, "{name}");
        }
    }
}
