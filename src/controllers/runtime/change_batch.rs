//! Changes of the control plane taken together: every change already read comes out with the
//! first, each changed object once.

use std::sync::Arc;

use futures::{FutureExt, StreamExt};
use tracing::warn;

use crate::api::{Object, ObjectKey};
use crate::controllers::{ChangeFeed, ErrorChain};
use crate::store;

/// An object as the last change of it in a batch left it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum LastSeen {
    /// Deleted.
    Gone,
    /// As the feed carried it.
    Now(Arc<Object>),
}

/// What the change says the object is now: gone when deleted, else the object the feed
/// carried, if it did (`None`: it must be read).
pub(crate) fn last_seen(change: &store::Change) -> Option<LastSeen> {
    match (change.change_type, &change.object) {
        (store::ChangeType::Deleted, _) => Some(LastSeen::Gone),
        (_, Some(obj)) => Some(LastSeen::Now(obj.clone())),
        (_, None) => None,
    }
}

/// The objects changed in a run of changes read together, each once, in the order first seen.
#[derive(Debug, Default)]
pub(crate) struct ChangeBatch {
    pub(crate) keys: Vec<ObjectKey>,
    seen: std::collections::HashSet<ObjectKey>,
    /// The keys whose every change in the batch was a modification (neither made nor deleted).
    pub(crate) modified_only: std::collections::HashSet<ObjectKey>,
    /// The keys changed exactly once in the batch, with the `resourceVersion` of that change.
    pub(crate) single: std::collections::HashMap<ObjectKey, String>,
    /// The feed failed or ended: everything must be looked at again.
    pub(crate) feed_lost: bool,
    /// The position of the last change taken.
    pub(crate) newest: Option<String>,
    /// Each key's object as its last change in the batch left it, where that is known.
    pub(crate) last_seen: std::collections::HashMap<ObjectKey, LastSeen>,
}

impl ChangeBatch {
    /// `first` and every change of `changes` that is already read.
    pub(crate) fn take(
        first: Option<Result<store::Change, store::Error>>,
        changes: &mut ChangeFeed,
    ) -> Self {
        let mut batch = ChangeBatch::default();
        let mut next = first;
        loop {
            match next {
                Some(Ok(change)) => {
                    batch.newest = Some(change.resource_version.clone());
                    match last_seen(&change) {
                        Some(seen) => batch.last_seen.insert(change.key.clone(), seen),
                        None => batch.last_seen.remove(&change.key),
                    };
                    let modified = change.change_type == store::ChangeType::Modified;
                    if batch.seen.insert(change.key.clone()) {
                        if modified {
                            batch.modified_only.insert(change.key.clone());
                        }
                        batch
                            .single
                            .insert(change.key.clone(), change.resource_version);
                        batch.keys.push(change.key);
                    } else {
                        batch.single.remove(&change.key);
                        if !modified {
                            batch.modified_only.remove(&change.key);
                        }
                    }
                }
                Some(Err(err)) => {
                    // The feed was lost (e.g. pruned): look at everything again.
                    warn!(error = %ErrorChain(&err), "change feed interrupted; resyncing");
                    batch.feed_lost = true;
                    return batch;
                }
                None => {
                    batch.feed_lost = true;
                    return batch;
                }
            }
            match changes.next().now_or_never() {
                Some(more) => next = more,
                None => return batch,
            }
        }
    }
}

/// Whether a feed that has delivered every change up to `seen` has delivered everything the
/// store holds at `current`. Positions that are not numbers (a control plane that orders them
/// otherwise) never count as caught up.
pub(crate) fn caught_up(seen: &str, current: &str) -> bool {
    let number = |v: &str| v.parse::<u64>().ok();
    match (number(seen), number(current)) {
        (Some(seen), Some(current)) => seen >= current,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Change, ChangeType};

    fn change(name: &str) -> Result<Change, store::Error> {
        change_at(name, "1")
    }

    fn change_at(name: &str, resource_version: &str) -> Result<Change, store::Error> {
        Ok(Change {
            change_type: ChangeType::Modified,
            key: ObjectKey::new("g", "K", None, name),
            resource_version: resource_version.into(),
            object: None,
        })
    }

    fn object(name: &str, resource_version: &str) -> Arc<Object> {
        Arc::new(
            serde_json::from_value(serde_json::json!({
                "apiVersion": "g/v1", "kind": "K",
                "metadata": {"name": name, "resourceVersion": resource_version},
            }))
            .expect("object"),
        )
    }

    #[test]
    fn the_last_change_of_an_object_says_what_it_is_now_when_the_feed_carried_it() {
        let with = |change_type, rv: &str, carried: bool| {
            let mut c = change_at("a", rv).expect("change");
            c.change_type = change_type;
            c.object = carried.then(|| object("a", rv));
            Ok(c)
        };
        let now = |rv: &str| Some(LastSeen::Now(object("a", rv)));
        let cases = [
            (vec![with(ChangeType::Added, "1", true)], now("1")),
            (
                vec![
                    with(ChangeType::Added, "1", true),
                    with(ChangeType::Modified, "2", true),
                ],
                now("2"),
            ),
            // Deleted is gone, carried or not.
            (
                vec![
                    with(ChangeType::Modified, "1", true),
                    with(ChangeType::Deleted, "2", false),
                ],
                Some(LastSeen::Gone),
            ),
            (
                vec![
                    with(ChangeType::Deleted, "1", true),
                    with(ChangeType::Added, "2", true),
                ],
                now("2"),
            ),
            // A last change that did not carry it: unknown, even if an earlier one did.
            (
                vec![
                    with(ChangeType::Modified, "1", true),
                    with(ChangeType::Modified, "2", false),
                ],
                None,
            ),
            (vec![with(ChangeType::Modified, "1", false)], None),
        ];
        for (changes, want) in cases {
            let case = format!("{changes:?}");
            let mut feed: ChangeFeed = futures::stream::iter(changes).boxed();
            let first = feed.next().now_or_never().flatten();
            let batch = ChangeBatch::take(first, &mut feed);
            let key = ObjectKey::new("g", "K", None, "a");
            assert_eq!(batch.last_seen.get(&key).cloned(), want, "{case}");
        }
    }

    fn names(batch: &ChangeBatch) -> Vec<&str> {
        batch.keys.iter().map(|k| k.name.as_str()).collect()
    }

    #[test]
    fn takes_what_is_read_each_object_once_and_notices_a_lost_feed() {
        let mut feed: ChangeFeed =
            futures::stream::iter(vec![change_at("b", "2"), change("a"), change_at("b", "3")])
                .boxed();
        let batch = ChangeBatch::take(Some(change("a")), &mut feed);
        assert_eq!(names(&batch), ["a", "b"]);
        assert_eq!(batch.newest.as_deref(), Some("3"));
        // The stream ended after them: the feed is gone.
        assert!(batch.feed_lost);

        let mut waiting: ChangeFeed = futures::stream::pending().boxed();
        let batch = ChangeBatch::take(Some(change("a")), &mut waiting);
        assert_eq!(names(&batch), ["a"]);
        assert!(!batch.feed_lost);

        let mut feed: ChangeFeed = futures::stream::iter(vec![
            change("b"),
            Err(store::Error::Expired {
                resource_version: "1".into(),
            }),
            change("c"),
        ])
        .boxed();
        let batch = ChangeBatch::take(Some(change("a")), &mut feed);
        assert_eq!(names(&batch), ["a", "b"]);
        assert!(batch.feed_lost);
    }

    #[test]
    fn caught_up_only_at_or_past_the_stores_position() {
        let cases = [
            ("7", "7", true),
            ("8", "7", true),
            ("6", "7", false),
            ("", "7", false),
            ("10", "9", true),
            ("9", "10", false),
            ("abc", "abc", false),
            ("7", "", false),
        ];
        for (seen, current, want) in cases {
            assert_eq!(caught_up(seen, current), want, "{seen:?} {current:?}");
        }
    }
}
