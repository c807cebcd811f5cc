//! A store seen through a layer of pending changes: writes land in the layer, in memory; reads
//! see the layer on top of the store beneath, which is only ever read. What the layer holds can
//! then be compared with the store: a preview of what the same writes would change there.

use crate::{Change, Key, Result, StateStore, Version, WriteInfo, WriteOutcome};
use bytes::Bytes;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Where [`Overlay::check_access`] reads: any key proves the store answers reads with our
/// credentials; this one is unlikely to exist, so the answer stays small.
const ACCESS_PROBE: &str = ".kratix-read-probe";

/// Writes kept in memory over a store that is only read.
#[derive(Debug)]
pub struct Overlay {
    beneath: Arc<dyn StateStore>,
    /// Per key the content a write left (`None`: deleted). Held across a whole write, so writes
    /// through one overlay are applied one at a time, as one unit each.
    layer: tokio::sync::Mutex<Layer>,
}

#[derive(Debug, Default)]
struct Layer {
    files: BTreeMap<Key, Option<Bytes>>,
    writes: u64,
}

/// A key the layer would change: what the store beneath holds, and what it would hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    pub key: Key,
    /// `None`: the key is absent beneath (the layer adds it).
    pub before: Option<Bytes>,
    /// `None`: the layer deletes the key.
    pub after: Option<Bytes>,
}

impl Overlay {
    pub fn new(beneath: Arc<dyn StateStore>) -> Self {
        Self {
            beneath,
            layer: tokio::sync::Mutex::new(Layer::default()),
        }
    }

    /// Every key whose content the layer differs on from the store beneath, sorted by key. A key
    /// written and then put back to what the store holds is not listed.
    pub async fn pending(&self) -> Result<Vec<Pending>> {
        let layer = self.layer.lock().await;
        let mut out = Vec::new();
        for (key, after) in &layer.files {
            let before = self.beneath.read(key).await?;
            if &before != after {
                out.push(Pending {
                    key: key.clone(),
                    before,
                    after: after.clone(),
                });
            }
        }
        Ok(out)
    }
}

async fn current(beneath: &dyn StateStore, layer: &Layer, key: &Key) -> Result<Option<Bytes>> {
    match layer.files.get(key) {
        Some(content) => Ok(content.clone()),
        None => beneath.read(key).await,
    }
}

/// The keys of `listed` (beneath, under `prefix`) as the layer changes them, sorted.
fn list_through(listed: Vec<Key>, layer: &BTreeMap<Key, Option<Bytes>>, prefix: &Key) -> Vec<Key> {
    let mut keys: BTreeSet<Key> = listed.into_iter().collect();
    for (key, content) in layer.iter().filter(|(k, _)| k.starts_with(prefix)) {
        match content {
            Some(_) => keys.insert(key.clone()),
            None => keys.remove(key),
        };
    }
    keys.into_iter().collect()
}

#[async_trait::async_trait]
impl StateStore for Overlay {
    fn kind(&self) -> &'static str {
        self.beneath.kind()
    }

    async fn write(&self, changes: &[Change], _info: &WriteInfo) -> Result<WriteOutcome> {
        let mut layer = self.layer.lock().await;
        let mut outcome = WriteOutcome::default();
        for change in changes {
            let now = current(self.beneath.as_ref(), &layer, change.key()).await?;
            match change {
                Change::Put(key, content) if now.as_ref() != Some(content) => {
                    layer.files.insert(key.clone(), Some(content.clone()));
                    outcome.written.push(key.clone());
                }
                Change::Delete(key) if now.is_some() => {
                    layer.files.insert(key.clone(), None);
                    outcome.deleted.push(key.clone());
                }
                Change::Put(..) | Change::Delete(_) => {}
            }
        }
        if outcome.changed() {
            layer.writes += 1;
            // The layer's own counter: no version of the store beneath holds these changes.
            outcome.version = Some(Version(format!("overlay-{}", layer.writes)));
        }
        Ok(outcome)
    }

    async fn read(&self, key: &Key) -> Result<Option<Bytes>> {
        let layer = self.layer.lock().await;
        current(self.beneath.as_ref(), &layer, key).await
    }

    async fn list(&self, prefix: &Key) -> Result<Vec<Key>> {
        let layer = self.layer.lock().await;
        let listed = self.beneath.list(prefix).await?;
        Ok(list_through(listed, &layer.files, prefix))
    }

    /// Reads only: the overlay never writes beneath, so reading is all the access it needs.
    async fn check_access(&self) -> Result<()> {
        let probe = Key::parse(ACCESS_PROBE).map_err(|e| crate::Error::Config {
            store: self.beneath.kind().to_string(),
            source: Box::new(e),
        })?;
        self.beneath.list(&probe).await.map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::InMemory;

    fn key(s: &str) -> Key {
        Key::parse(s).expect("valid key")
    }

    fn put(path: &str, content: &str) -> Change {
        Change::Put(key(path), Bytes::from(content.to_string()))
    }

    fn info() -> WriteInfo {
        WriteInfo {
            message: "m".into(),
            author_name: "a".into(),
            author_email: String::new(),
        }
    }

    async fn seeded(files: &[(&str, &str)]) -> InMemory {
        let store = InMemory::new();
        let changes: Vec<Change> = files.iter().map(|(p, c)| put(p, c)).collect();
        store.write(&changes, &info()).await.expect("seed");
        store
    }

    #[tokio::test]
    async fn pending_lists_what_differs_from_beneath_and_beneath_is_untouched() {
        type Case<'a> = (
            &'a str,
            Vec<Vec<Change>>,
            Vec<(&'a str, Option<&'a str>, Option<&'a str>)>,
        );
        let cases: Vec<Case> = vec![
            ("nothing written", vec![], vec![]),
            (
                "changed, added, deleted",
                vec![vec![
                    put("d/a", "A2"),
                    put("d/new", "N"),
                    Change::Delete(key("d/b")),
                ]],
                vec![
                    ("d/a", Some("A"), Some("A2")),
                    ("d/b", Some("B"), None),
                    ("d/new", None, Some("N")),
                ],
            ),
            (
                "same content is no change",
                vec![vec![put("d/a", "A")]],
                vec![],
            ),
            (
                "changed then changed back",
                vec![vec![put("d/a", "x")], vec![put("d/a", "A")]],
                vec![],
            ),
            (
                "added then deleted",
                vec![vec![put("d/n", "x")], vec![Change::Delete(key("d/n"))]],
                vec![],
            ),
            (
                "absent delete is no change",
                vec![vec![Change::Delete(key("d/none"))]],
                vec![],
            ),
        ];
        for (name, writes, want) in cases {
            let beneath = seeded(&[("d/a", "A"), ("d/b", "B")]).await;
            let overlay = Overlay::new(Arc::new(beneath.clone()));
            for changes in &writes {
                overlay.write(changes, &info()).await.expect("write");
            }
            let got: Vec<(String, Option<String>, Option<String>)> = overlay
                .pending()
                .await
                .expect("pending")
                .into_iter()
                .map(|p| {
                    let text = |b: Option<Bytes>| b.map(|b| String::from_utf8_lossy(&b).into());
                    (p.key.to_string(), text(p.before), text(p.after))
                })
                .collect();
            let want: Vec<(String, Option<String>, Option<String>)> = want
                .into_iter()
                .map(|(k, b, a)| (k.into(), b.map(Into::into), a.map(Into::into)))
                .collect();
            assert_eq!(got, want, "{name}");
            let untouched = beneath.list(&Key::root()).await.expect("list");
            assert_eq!(untouched, vec![key("d/a"), key("d/b")], "{name}");
            assert_eq!(
                beneath.read(&key("d/a")).await.expect("read").as_deref(),
                Some(&b"A"[..]),
                "{name}"
            );
        }
    }

    #[test]
    fn listing_sees_the_layer_within_the_prefix_only() {
        let layer = BTreeMap::from([
            (key("d/new"), Some(Bytes::from_static(b"n"))),
            (key("d/gone"), None),
            (key("other/x"), Some(Bytes::from_static(b"x"))),
        ]);
        let got = list_through(vec![key("d/gone"), key("d/kept")], &layer, &key("d"));
        assert_eq!(got, vec![key("d/kept"), key("d/new")]);
    }

    mod conformance {
        use super::super::Overlay;
        use crate::InMemory;
        use std::sync::Arc;
        crate::conformance_suite!(async { Overlay::new(Arc::new(InMemory::new())) });
    }
}
