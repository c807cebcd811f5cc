//! Kubernetes-style events recorded by the controllers: what happened to an object and why
//! (type, reason, message, count, first and last seen). They are core/v1 `Event` objects
//! stored through the control plane, so on Kubernetes they are the cluster's own events and
//! `kubectl describe` shows them. Recording never fails a reconcile: a failure is logged.

mod model;

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use tracing::warn;

use crate::api::{KindInfo, Object, ObjectKey};
use crate::store::{self, ControlPlane, Selector};
use statestores::error_chain::ErrorChain;

pub(crate) use model::{
    event_name, expired, label_of, repeated, sweep_due, to_prune, Stored, INVOLVED_LABEL,
    MAX_PER_OBJECT,
};
pub use model::{new_event, Involved, Reason};

/// The kind of the events: core/v1 `Event`.
pub fn kind() -> KindInfo {
    KindInfo {
        group: String::new(),
        version: "v1".into(),
        kind: "Event".into(),
        plural: "events".into(),
        singular: "event".into(),
        short_names: vec!["ev".into()],
        namespaced: true,
    }
}

/// How often a write that lost a race with another writer of the same event is tried again.
const ATTEMPTS: usize = 3;

/// Records that `reason` happened to `obj`: a repeat of the same reason and message bumps the
/// stored event's count and last-seen time; a new one is stored, and the object's oldest
/// events beyond the bounds go. Never fails: what goes wrong is logged.
pub async fn record(cp: &Arc<dyn ControlPlane>, obj: &Object, reason: Reason, message: &str) {
    let involved = Involved::of(obj);
    if let Err(err) = try_record(cp.as_ref(), &involved, reason, message).await {
        warn!(object = %involved.key, reason = reason.as_str(), error = %ErrorChain(&err), "recording an event failed");
    }
    sweep_in_background(cp);
}

/// When this process last swept (milliseconds since the epoch; `i64::MIN`: never).
static LAST_SWEEP_MS: AtomicI64 = AtomicI64::new(i64::MIN);

/// Starts a [`sweep`] in a task of its own when one is due, so that no reconcile waits for it.
/// The controllers call it as they start, while they look at everything anyway: a sweep lists
/// every event of the home, and left to the first event recorded it would slow the first change
/// after a start in a home that holds many.
pub(crate) fn sweep_in_background(cp: &Arc<dyn ControlPlane>) {
    let now = now_ms();
    let last = LAST_SWEEP_MS.load(Ordering::Relaxed);
    let last_ms = (last != i64::MIN).then_some(last);
    if !sweep_due(last_ms, now)
        || LAST_SWEEP_MS
            .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
    {
        return;
    }
    let cp = cp.clone();
    tokio::spawn(async move {
        if let Err(err) = sweep(cp.as_ref(), now).await {
            warn!(error = %ErrorChain(&err), "removing old events failed");
        }
    });
}

/// Removes every event, of any object, not seen for [`MAX_AGE_MS`] before `now_ms`; returns how
/// many went.
pub async fn sweep(cp: &dyn ControlPlane, now_ms: i64) -> store::Result<usize> {
    let mut gone = 0;
    for event in cp.list(&kind(), None, &Selector::everything()).await? {
        if !expired(last_seen_ms(&event), now_ms) {
            continue;
        }
        let name = event.metadata.name.clone().unwrap_or_default();
        match cp
            .delete(&kind(), event.metadata.namespace.as_deref(), &name)
            .await
        {
            Ok(_) => gone += 1,
            Err(store::Error::NotFound { .. }) => {}
            Err(err) => return Err(err),
        }
    }
    Ok(gone)
}

fn now_ms() -> i64 {
    jiff::Timestamp::now().as_millisecond()
}

async fn try_record(
    cp: &dyn ControlPlane,
    involved: &Involved,
    reason: Reason,
    message: &str,
) -> store::Result<()> {
    let kind = kind();
    let namespace = involved.event_namespace();
    let name = event_name(involved, reason, message);
    let mut last = None;
    for _ in 0..ATTEMPTS {
        let now = format!("{:.3}", jiff::Timestamp::now());
        // Most events are new: create first, and read the stored one only when it is there.
        let event: Object = serde_json::from_value(new_event(involved, reason, message, &now))
            .map_err(|source| store::Error::Backend {
                context: format!("encoding event {name}"),
                source: Box::new(source),
            })?;
        let result = match cp.create(&kind, &event).await {
            Ok(_) if recorded_beyond_bound(&involved.key) => return prune(cp, involved).await,
            Ok(_) => return Ok(()),
            Err(store::Error::AlreadyExists { .. }) => {
                match cp.get(&kind, Some(&namespace), &name).await? {
                    Some(stored) => cp.update(&kind, &repeated(&stored, involved, &now)).await,
                    // Gone between the two: create it again.
                    None => continue,
                }
            }
            Err(err) => Err(err),
        };
        match result {
            Ok(_) => return Ok(()),
            Err(err @ store::Error::Conflict { .. }) => last = Some(err),
            Err(err) => return Err(err),
        }
    }
    last.map_or(Ok(()), Err)
}

/// How many events this process recorded per object, while it knows fewer objects than this.
const COUNTED_OBJECTS: usize = 10_000;

/// Counts an event recorded for `key`: whether this process recorded more than
/// [`MAX_PER_OBJECT`] of them. Only then can the object hold more than it keeps (what earlier
/// processes recorded ages out with the sweep), so only then are its events listed and pruned:
/// most objects never are.
fn recorded_beyond_bound(key: &ObjectKey) -> bool {
    static COUNTS: std::sync::Mutex<Option<std::collections::HashMap<ObjectKey, usize>>> =
        std::sync::Mutex::new(None);
    let mut counts = COUNTS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let counts = counts.get_or_insert_with(Default::default);
    if counts.len() >= COUNTED_OBJECTS && !counts.contains_key(key) {
        // Forgetting the counts only delays a prune until the bound is seen again.
        counts.clear();
    }
    let n = counts.entry(key.clone()).or_default();
    *n += 1;
    *n > MAX_PER_OBJECT
}

/// Removes the object's events beyond [`MAX_PER_OBJECT`] or older than [`MAX_AGE_MS`].
async fn prune(cp: &dyn ControlPlane, involved: &Involved) -> store::Result<()> {
    let namespace = involved.event_namespace();
    let events = of_object(cp, &involved.key).await?;
    let stored: Vec<Stored> = events
        .iter()
        .map(|e| Stored {
            name: e.metadata.name.clone().unwrap_or_default(),
            last_seen_ms: last_seen_ms(e),
        })
        .collect();
    for name in to_prune(&stored, now_ms()) {
        match cp.delete(&kind(), Some(&namespace), &name).await {
            Ok(_) | Err(store::Error::NotFound { .. }) => {}
            Err(err) => return Err(err),
        }
    }
    Ok(())
}

/// When an event was last seen, in milliseconds since the epoch.
pub(crate) fn last_seen_ms(event: &Object) -> Option<i64> {
    ["lastTimestamp", "eventTime", "firstTimestamp"]
        .iter()
        .find_map(|f| event.data.get(*f).and_then(serde_json::Value::as_str))
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        .map(jiff::Timestamp::as_millisecond)
}

/// The events recorded about the object `key`, oldest first.
pub async fn of_object(cp: &dyn ControlPlane, key: &ObjectKey) -> store::Result<Vec<Object>> {
    let namespace = key.namespace.clone().unwrap_or_else(|| "default".into());
    let selector =
        Selector::parse(&format!("{INVOLVED_LABEL}={}", label_of(key))).map_err(|source| {
            store::Error::Backend {
                context: "selecting events".into(),
                source: Box::new(source),
            }
        })?;
    let mut events = cp.list(&kind(), Some(&namespace), &selector).await?;
    // Another object of the same name and namespace but another kind has another label; this
    // only guards against a digest shared by chance.
    events.retain(|e| about(e, key));
    sort_by_last_seen(&mut events);
    Ok(events)
}

/// Whether `event` is about the object `key`.
pub fn about(event: &Object, key: &ObjectKey) -> bool {
    let object = event.data.get("involvedObject");
    let field = |f: &str| {
        object
            .and_then(|o| o.get(f))
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let group = field("apiVersion")
        .rsplit_once('/')
        .map(|(g, _)| g.to_string())
        .unwrap_or_default();
    field("kind") == key.kind
        && field("name") == key.name
        && group == key.group
        && (field("namespace").is_empty() && key.namespace.is_none()
            || Some(field("namespace")) == key.namespace)
}

/// Oldest first, by last seen time, then name.
pub(crate) fn sort_by_last_seen(events: &mut [Object]) {
    events.sort_by_cached_key(|e| (last_seen_ms(e), e.metadata.name.clone()));
}

/// Every event in `namespace` (every namespace when `None`), oldest first.
pub async fn all(cp: &dyn ControlPlane, namespace: Option<&str>) -> store::Result<Vec<Object>> {
    let mut events = cp.list(&kind(), namespace, &Selector::everything()).await?;
    sort_by_last_seen(&mut events);
    Ok(events)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn object() -> Object {
        serde_json::from_value(json!({
            "apiVersion": "example.com/v1", "kind": "Redis",
            "metadata": {"name": "r", "namespace": "team", "uid": "u1"},
        }))
        .expect("an object")
    }

    fn store(home: &std::path::Path) -> Arc<dyn ControlPlane> {
        Arc::new(crate::store::embedded::EmbeddedStore::open(home).expect("a store"))
    }

    #[tokio::test]
    async fn repeats_are_counted_and_an_object_keeps_a_bounded_number() {
        let home = tempfile::tempdir().expect("a home");
        let cp = store(home.path());
        let key = ObjectKey::of(&object());
        for _ in 0..3 {
            record(&cp, &object(), Reason::PipelineStarted, "same").await;
        }
        let events = of_object(cp.as_ref(), &key).await.expect("listed");
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].data["count"], 3);
        assert_eq!(events[0].metadata.namespace.as_deref(), Some("team"));
        for i in 0..MAX_PER_OBJECT + 5 {
            record(&cp, &object(), Reason::WorkWritten, &format!("write {i}")).await;
        }
        let events = of_object(cp.as_ref(), &key).await.expect("listed");
        assert_eq!(events.len(), MAX_PER_OBJECT);
        // The newest stay.
        assert_eq!(
            events.last().map(|e| e.data["message"].clone()),
            Some(json!(format!("write {}", MAX_PER_OBJECT + 4)))
        );
    }

    #[tokio::test]
    async fn a_sweep_removes_what_nobody_saw_for_a_day() {
        let home = tempfile::tempdir().expect("a home");
        let cp = store(home.path());
        let involved = Involved::of(&object());
        let old: Object = serde_json::from_value(new_event(
            &involved,
            Reason::Deleted,
            "old",
            "2000-01-01T00:00:00Z",
        ))
        .expect("an event");
        let now = format!("{:.3}", jiff::Timestamp::now());
        let new: Object =
            serde_json::from_value(new_event(&involved, Reason::PipelineStarted, "new", &now))
                .expect("an event");
        cp.create(&kind(), &old).await.expect("stored");
        cp.create(&kind(), &new).await.expect("stored");
        assert_eq!(sweep(cp.as_ref(), now_ms()).await.expect("swept"), 1);
        let left = all(cp.as_ref(), None).await.expect("listed");
        let messages: Vec<&Value> = left.iter().map(|e| &e.data["message"]).collect();
        assert_eq!(messages, [&json!("new")]);
    }
}
