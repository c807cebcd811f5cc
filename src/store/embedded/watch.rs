//! The change feed as a stream: polls the `changes` table, so writes of other processes show up
//! within one poll interval.

use std::collections::VecDeque;
use std::sync::Arc;

use futures::stream::{self, BoxStream, StreamExt};

use super::{db, Inner};
use crate::api::KindInfo;
use crate::store::{Change, Error, Result};

/// Changes read per poll; more are read on the next poll without waiting.
const BATCH: i64 = 1000;

struct Watch {
    inner: Arc<Inner>,
    kinds: Vec<(String, String)>,
    position: db::Seq,
    pending: VecDeque<Change>,
    /// Marked changed by every write of this process's handles.
    written: tokio::sync::watch::Receiver<()>,
    /// Poll again at once: the last poll was the first, or returned a full batch.
    poll_now: bool,
    ended: bool,
}

/// The stream of changes to `kinds` (all when empty) after `since`. It ends after yielding an
/// error; [`Error::Expired`] means `since` is older than the feed keeps.
pub(super) fn watch(
    inner: Arc<Inner>,
    kinds: &[KindInfo],
    since: &str,
) -> BoxStream<'static, Result<Change>> {
    let position = match parse_position(since) {
        Ok(position) => position,
        Err(err) => return stream::once(async { Err(err) }).boxed(),
    };
    let state = Watch {
        kinds: kinds
            .iter()
            .map(|k| (k.group.clone(), k.kind.clone()))
            .collect(),
        position,
        pending: VecDeque::new(),
        written: inner.written.subscribe(),
        poll_now: true,
        ended: false,
        inner,
    };
    stream::unfold(state, next_change).boxed()
}

async fn next_change(mut watch: Watch) -> Option<(Result<Change>, Watch)> {
    loop {
        if watch.ended {
            return None;
        }
        if let Some(change) = watch.pending.pop_front() {
            return Some((Ok(change), watch));
        }
        if !watch.poll_now {
            // Writes through this handle wake the watch at once; other processes' are found by
            // polling.
            tokio::select! {
                () = tokio::time::sleep(watch.inner.options.poll_interval) => {}
                _ = watch.written.changed() => {}
            }
        }
        watch.written.mark_unchanged();
        match poll(&watch).await {
            Ok((position, changes, full)) => {
                watch.position = position;
                watch.poll_now = full;
                watch
                    .pending
                    .extend(changes.into_iter().filter(|c| wanted(&watch.kinds, c)));
            }
            Err(err) => {
                watch.ended = true;
                return Some((Err(err), watch));
            }
        }
    }
}

/// One read of the feed: the new position, the changes after the old one, and whether the batch
/// was full.
async fn poll(watch: &Watch) -> Result<(db::Seq, Vec<Change>, bool)> {
    let since = watch.position;
    let batch = watch
        .inner
        .clone()
        .run(move |conn| {
            // One read transaction, so the pruning check and the read see the same snapshot.
            let tx = conn
                .transaction()
                .map_err(super::backend("begin reading the change feed"))?;
            if since < db::oldest_resumable_seq(&tx)? {
                return Err(Error::Expired {
                    resource_version: since.to_string(),
                });
            }
            db::changes_after(&tx, since, BATCH)
        })
        .await?;
    let full = i64::try_from(batch.len()).is_ok_and(|n| n >= BATCH);
    let position = batch.last().map_or(since, |(seq, _)| *seq);
    Ok((position, batch.into_iter().map(|(_, c)| c).collect(), full))
}

fn wanted(kinds: &[(String, String)], change: &Change) -> bool {
    kinds.is_empty()
        || kinds
            .iter()
            .any(|(group, kind)| *group == change.key.group && *kind == change.key.kind)
}

/// `""` means the start of the feed, like `"0"`.
fn parse_position(since: &str) -> Result<db::Seq> {
    if since.is_empty() {
        return Ok(0);
    }
    since
        .parse::<db::Seq>()
        .ok()
        .filter(|p| *p >= 0)
        .ok_or_else(|| Error::Backend {
            context: format!("watch from resourceVersion {since:?}"),
            source: Box::new(BadPosition),
        })
}

/// A `resourceVersion` this store did not hand out.
#[derive(Debug, thiserror::Error)]
#[error("not a resourceVersion of the embedded store (a non-negative integer)")]
struct BadPosition;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::ObjectKey;
    use crate::store::ChangeType;

    #[test]
    fn positions_parse() {
        let cases: &[(&str, Option<i64>)] = &[
            ("", Some(0)),
            ("0", Some(0)),
            ("42", Some(42)),
            ("-1", None),
            ("abc", None),
        ];
        for (text, want) in cases {
            assert_eq!(parse_position(text).ok(), *want, "{text:?}");
        }
    }

    #[test]
    fn kind_filter() {
        let change = |group: &str, kind: &str| Change {
            change_type: ChangeType::Added,
            key: ObjectKey::new(group, kind, None, "n"),
            resource_version: "1".to_string(),
            object: None,
        };
        let kinds = vec![("g".to_string(), "A".to_string())];
        assert!(wanted(&[], &change("g", "B")));
        assert!(wanted(&kinds, &change("g", "A")));
        assert!(!wanted(&kinds, &change("g", "B")));
        assert!(!wanted(&kinds, &change("h", "A")));
    }
}
