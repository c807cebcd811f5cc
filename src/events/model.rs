//! Kubernetes-style events as pure functions: which object an event is about, its name (so that
//! repeats of the same reason and message find it again), a repeat folded into the stored event,
//! and which events are old enough, or many enough, to go.

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::api::{Object, ObjectKey};

/// The label that ties an event to the object it is about, so that one object's events are
/// listed without reading every event of the namespace.
pub(crate) const INVOLVED_LABEL: &str = "kratix.io/involved-object";

/// Who records the events, as `source.component` and `reportingComponent` say.
pub(crate) const COMPONENT: &str = "kratix-rs";

/// Events kept per object: the oldest beyond these go.
pub(crate) const MAX_PER_OBJECT: usize = 20;

/// Events not seen again for this long go (the API server's default `--event-ttl` is 1 hour;
/// a home is looked at less often than a cluster, so events last a day there).
pub(crate) const MAX_AGE_MS: i64 = 24 * 60 * 60 * 1000;

/// `Normal` or `Warning`, as Kubernetes' events say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventType {
    Normal,
    Warning,
}

impl EventType {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// Why an event is recorded. Each reason has one type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    PipelineStarted,
    PipelineSucceeded,
    PipelineFailed,
    WorkWritten,
    WriteFailed,
    PromiseAvailable,
    RequirementsNotFulfilled,
    /// The latest PromiseRevision of a Promise was deleted where nothing refuses it (on
    /// Kubernetes, without Kratix's admission webhook) and was made again.
    LatestRevisionRecreated,
    /// A PromiseRevision that is not the latest was deleted while requests' bindings name its
    /// version; they stay.
    RevisionStillInUse,
    /// A pipeline's `workflow-control.yaml` suspended its workflow (until its `retryAfter`, or
    /// a spec change or manual reconciliation).
    WorkflowSuspended,
    /// A GitStateStore with `spec.insecure: true`: its server's TLS certificate is not verified.
    TlsNotVerified,
    Deleted,
    /// The platform Destination's sync applied documents of its store.
    PlatformApplied,
    /// The platform Destination's sync deleted objects whose documents left its store.
    PlatformPruned,
    /// The platform Destination's sync could not apply a document (named in the message).
    PlatformSyncFailed,
    /// A Destination without `spec.path`: nothing is written for it.
    PathRequired,
    /// A Destination whose path another Destination of its state store holds: nothing is
    /// written for it.
    PathInUse,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::PipelineStarted => "PipelineStarted",
            Reason::PipelineSucceeded => "PipelineSucceeded",
            Reason::PipelineFailed => "PipelineFailed",
            Reason::WorkWritten => "WorkWritten",
            Reason::WriteFailed => "WriteFailed",
            Reason::PromiseAvailable => "PromiseAvailable",
            Reason::RequirementsNotFulfilled => "RequirementsNotFulfilled",
            Reason::LatestRevisionRecreated => "LatestRevisionRecreated",
            Reason::RevisionStillInUse => "RevisionStillInUse",
            Reason::WorkflowSuspended => "WorkflowSuspended",
            Reason::TlsNotVerified => "TlsNotVerified",
            Reason::Deleted => "Deleted",
            Reason::PlatformApplied => "PlatformApplied",
            Reason::PlatformPruned => "PlatformPruned",
            Reason::PlatformSyncFailed => "PlatformSyncFailed",
            Reason::PathRequired => "PathRequired",
            Reason::PathInUse => "PathInUse",
        }
    }

    pub(crate) fn event_type(self) -> EventType {
        match self {
            Reason::PipelineFailed
            | Reason::WriteFailed
            | Reason::RequirementsNotFulfilled
            | Reason::LatestRevisionRecreated
            | Reason::RevisionStillInUse
            | Reason::WorkflowSuspended
            | Reason::PlatformSyncFailed
            | Reason::PathRequired
            | Reason::PathInUse
            | Reason::TlsNotVerified => EventType::Warning,
            _ => EventType::Normal,
        }
    }
}

/// The object an event is about (`involvedObject`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Involved {
    pub api_version: String,
    pub key: ObjectKey,
    pub uid: Option<String>,
}

impl Involved {
    pub fn of(obj: &Object) -> Self {
        Involved {
            api_version: obj
                .types
                .as_ref()
                .map(|t| t.api_version.clone())
                .unwrap_or_default(),
            key: ObjectKey::of(obj),
            uid: obj.metadata.uid.clone(),
        }
    }

    /// Where its events live: its own namespace, or `default` for a cluster-scoped object (as
    /// Kubernetes' event recorders do).
    pub(crate) fn event_namespace(&self) -> String {
        self.key
            .namespace
            .clone()
            .unwrap_or_else(|| "default".to_string())
    }

    /// The value of [`INVOLVED_LABEL`]: a digest of the object's kind, namespace and name
    /// (label values are short; names are not).
    pub fn label(&self) -> String {
        label_of(&self.key)
    }
}

/// [`INVOLVED_LABEL`]'s value for the object `key`.
pub(crate) fn label_of(key: &ObjectKey) -> String {
    digest(&[
        &key.group,
        &key.kind,
        key.namespace.as_deref().unwrap_or_default(),
        &key.name,
    ])[..32]
        .to_string()
}

fn digest(parts: &[&str]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part.as_bytes());
        hasher.update([0]);
    }
    hex::encode(hasher.finalize())
}

/// The event's name: the object's name and a digest of (object, reason, message), so that a
/// repeat is found by name and bumped instead of stored again.
pub(crate) fn event_name(involved: &Involved, reason: Reason, message: &str) -> String {
    let hash = digest(&[&involved.label(), reason.as_str(), message]);
    let base: String = involved
        .key
        .name
        .chars()
        .take(200)
        .collect::<String>()
        .trim_end_matches(['.', '-'])
        .to_string();
    format!("{base}.{}", &hash[..16])
}

/// A new event, seen once at `now` (RFC 3339).
pub fn new_event(involved: &Involved, reason: Reason, message: &str, now: &str) -> Value {
    let mut object = json!({
        "apiVersion": involved.api_version,
        "kind": involved.key.kind,
        "name": involved.key.name,
    });
    if let Some(ns) = &involved.key.namespace {
        object["namespace"] = json!(ns);
    }
    if let Some(uid) = &involved.uid {
        object["uid"] = json!(uid);
    }
    json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": event_name(involved, reason, message),
            "namespace": involved.event_namespace(),
            "labels": {INVOLVED_LABEL: involved.label()},
        },
        "involvedObject": object,
        "type": reason.event_type().as_str(),
        "reason": reason.as_str(),
        "message": message,
        "count": 1,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
    })
}

/// A repeat of a stored event: one more, last seen `now`, and about the object as it is now
/// (a recreated object of the same name has a new uid).
pub(crate) fn repeated(stored: &Object, involved: &Involved, now: &str) -> Object {
    let mut event = stored.clone();
    let count = event.data.get("count").and_then(Value::as_i64).unwrap_or(1);
    if let Some(map) = event.data.as_object_mut() {
        map.insert("count".into(), json!(count.saturating_add(1)));
        map.insert("lastTimestamp".into(), json!(now));
        if let (Some(uid), Some(object)) = (
            &involved.uid,
            map.get_mut("involvedObject").and_then(Value::as_object_mut),
        ) {
            object.insert("uid".into(), json!(uid));
        }
    }
    event
}

/// What pruning needs of one stored event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stored {
    pub name: String,
    /// `lastTimestamp` in milliseconds since the epoch; `None` when unreadable.
    pub last_seen_ms: Option<i64>,
}

/// Whether an event last seen at `last_seen_ms` (`None`: unreadable) is too old to keep.
pub(crate) fn expired(last_seen_ms: Option<i64>, now_ms: i64) -> bool {
    last_seen_ms.is_none_or(|ms| now_ms.saturating_sub(ms) > MAX_AGE_MS)
}

/// How often a process looks through every event for those too old to keep: events of objects
/// that get no new events (deleted ones, say) are otherwise never pruned.
pub(crate) const SWEEP_EVERY_MS: i64 = 60 * 60 * 1000;

/// Whether a sweep is due, the last having been at `last_ms` (`None`: never in this process).
pub(crate) fn sweep_due(last_ms: Option<i64>, now_ms: i64) -> bool {
    last_ms.is_none_or(|last| now_ms.saturating_sub(last) >= SWEEP_EVERY_MS)
}

/// The names of one object's events that go: those last seen more than [`MAX_AGE_MS`] before
/// `now_ms` (or when, unreadably), then the oldest beyond [`MAX_PER_OBJECT`].
pub(crate) fn to_prune(events: &[Stored], now_ms: i64) -> Vec<String> {
    let mut kept: Vec<&Stored> = Vec::new();
    let mut gone = Vec::new();
    for event in events {
        if expired(event.last_seen_ms, now_ms) {
            gone.push(event.name.clone());
        } else {
            kept.push(event);
        }
    }
    // Newest first; the name breaks ties so that the choice does not depend on list order.
    kept.sort_by(|a, b| {
        b.last_seen_ms
            .cmp(&a.last_seen_ms)
            .then(a.name.cmp(&b.name))
    });
    gone.extend(kept.iter().skip(MAX_PER_OBJECT).map(|e| e.name.clone()));
    gone
}

#[cfg(test)]
mod tests {
    use super::*;

    fn involved(ns: Option<&str>, name: &str) -> Involved {
        Involved {
            api_version: "example.com/v1".into(),
            key: ObjectKey::new("example.com", "Redis", ns, name),
            uid: Some("u1".into()),
        }
    }

    #[test]
    fn names_tell_repeats_from_new_events() {
        let a = involved(Some("default"), "r");
        let cases = [
            (
                "same object, reason, message",
                (&a, Reason::PipelineStarted, "m"),
                true,
            ),
            ("other message", (&a, Reason::PipelineStarted, "n"), false),
            ("other reason", (&a, Reason::PipelineFailed, "m"), false),
            (
                "other namespace",
                (&involved(Some("x"), "r"), Reason::PipelineStarted, "m"),
                false,
            ),
            (
                "cluster-scoped",
                (&involved(None, "r"), Reason::PipelineStarted, "m"),
                false,
            ),
        ];
        let first = event_name(&a, Reason::PipelineStarted, "m");
        assert!(first.starts_with("r."), "{first}");
        for (name, (inv, reason, message), same) in cases {
            assert_eq!(event_name(inv, reason, message) == first, same, "{name}");
        }
        let long = involved(Some("default"), &"x".repeat(253));
        assert!(event_name(&long, Reason::Deleted, "m").len() <= 253);
        assert!(label_of(&a.key).len() <= 63);
    }

    #[test]
    fn new_events_are_core_events_in_the_objects_namespace() {
        let cases = [
            (
                involved(Some("team"), "r"),
                "team",
                Reason::PipelineFailed,
                "Warning",
            ),
            (
                involved(None, "p"),
                "default",
                Reason::PromiseAvailable,
                "Normal",
            ),
        ];
        for (inv, ns, reason, type_) in cases {
            let event = new_event(&inv, reason, "msg", "2026-01-01T00:00:00Z");
            assert_eq!(event["metadata"]["namespace"], ns);
            assert_eq!(event["type"], type_);
            assert_eq!(event["reason"], reason.as_str());
            assert_eq!(event["count"], 1);
            assert_eq!(event["involvedObject"]["name"], inv.key.name.as_str());
            assert_eq!(event["involvedObject"]["uid"], "u1");
            assert_eq!(
                event["involvedObject"].get("namespace").is_some(),
                inv.key.namespace.is_some()
            );
        }
    }

    #[test]
    fn a_repeat_bumps_count_and_last_seen_only() {
        let inv = involved(Some("default"), "r");
        let first: Object = serde_json::from_value(new_event(
            &inv,
            Reason::WorkWritten,
            "m",
            "2026-01-01T00:00:00Z",
        ))
        .expect("an object");
        let again = Involved {
            uid: Some("u2".into()),
            ..inv.clone()
        };
        let second = repeated(&first, &again, "2026-01-01T00:01:00Z");
        let third = repeated(&second, &again, "2026-01-01T00:02:00Z");
        assert_eq!(third.data["count"], 3);
        assert_eq!(third.data["firstTimestamp"], "2026-01-01T00:00:00Z");
        assert_eq!(third.data["lastTimestamp"], "2026-01-01T00:02:00Z");
        assert_eq!(third.data["involvedObject"]["uid"], "u2");
        assert_eq!(third.metadata.name, first.metadata.name);
    }

    #[test]
    fn sweeps_are_hourly_and_take_what_is_a_day_old() {
        let now = 10 * MAX_AGE_MS;
        let cases = [
            ("never swept", None, true),
            ("just swept", Some(now - 1), false),
            ("an hour ago", Some(now - SWEEP_EVERY_MS), true),
        ];
        for (name, last, due) in cases {
            assert_eq!(sweep_due(last, now), due, "{name}");
        }
        let cases = [
            ("unreadable", None, true),
            ("a day old", Some(now - MAX_AGE_MS), false),
            ("older", Some(now - MAX_AGE_MS - 1), true),
            ("recent", Some(now), false),
        ];
        for (name, seen, gone) in cases {
            assert_eq!(expired(seen, now), gone, "{name}");
        }
    }

    #[test]
    fn pruning_drops_old_events_then_the_oldest_beyond_the_bound() {
        let now = 10 * MAX_AGE_MS;
        let at = |name: &str, ms: Option<i64>| Stored {
            name: name.into(),
            last_seen_ms: ms,
        };
        let many: Vec<Stored> = (0..MAX_PER_OBJECT + 2)
            .map(|i| {
                at(
                    &format!("e{i:02}"),
                    Some(now - i64::try_from(i).expect("a small count")),
                )
            })
            .collect();
        let cases: Vec<(&str, Vec<Stored>, Vec<&str>)> = vec![
            ("nothing stored", vec![], vec![]),
            ("recent", vec![at("a", Some(now))], vec![]),
            (
                "too old",
                vec![at("a", Some(now - MAX_AGE_MS - 1)), at("b", Some(now))],
                vec!["a"],
            ),
            ("unreadable time", vec![at("a", None)], vec!["a"]),
            ("beyond the bound: the oldest go", many, vec!["e20", "e21"]),
        ];
        for (name, events, want) in cases {
            assert_eq!(to_prune(&events, now), want, "{name}");
        }
    }
}
