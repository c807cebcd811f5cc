//! Changes of the control plane taken together: every change already read comes out with the
//! first, each changed object once.

use futures::{FutureExt, StreamExt};
use tracing::warn;

use super::{ChangeFeed, ErrorChain};
use crate::api::ObjectKey;
use crate::store;

/// The objects changed in a run of changes read together, each once, in the order first seen.
#[derive(Debug, Default)]
pub(super) struct ChangeBatch {
    pub keys: Vec<ObjectKey>,
    seen: std::collections::HashSet<ObjectKey>,
    /// The feed failed or ended: everything must be looked at again.
    pub feed_lost: bool,
}

impl ChangeBatch {
    /// `first` and every change of `changes` that is already read.
    pub fn take(
        first: Option<Result<store::Change, store::Error>>,
        changes: &mut ChangeFeed,
    ) -> Self {
        let mut batch = ChangeBatch::default();
        let mut next = first;
        loop {
            match next {
                Some(Ok(change)) => {
                    if batch.seen.insert(change.key.clone()) {
                        batch.keys.push(change.key);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Change, ChangeType};

    fn change(name: &str) -> Result<Change, store::Error> {
        Ok(Change {
            change_type: ChangeType::Modified,
            key: ObjectKey::new("g", "K", None, name),
            resource_version: "1".into(),
        })
    }

    fn names(batch: &ChangeBatch) -> Vec<&str> {
        batch.keys.iter().map(|k| k.name.as_str()).collect()
    }

    #[test]
    fn takes_what_is_read_each_object_once_and_notices_a_lost_feed() {
        let mut feed: ChangeFeed =
            futures::stream::iter(vec![change("b"), change("a"), change("b")]).boxed();
        let batch = ChangeBatch::take(Some(change("a")), &mut feed);
        assert_eq!(names(&batch), ["a", "b"]);
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
}
