//! `diff -f PATH`: what applying the documents would write to the state stores. The documents
//! are applied to a scratch copy of the home, whose controllers run the workflows for real;
//! every state store they open is an [`Overlay`]: the writer plans and writes as always, the
//! writes stay in memory, and the real store is only read. The home and the stores are left
//! as they were.

mod report;
mod scratch;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use statestores::{Key, Overlay, StateStore};

use crate::api::{Builtin, Destination, KindInfo, ObjectKey};
use crate::controllers::placement::layout::destination_root;
use crate::controllers::state_store::Cache;
use crate::controllers::state_store::Wrap;
use crate::platform::{builtin, Platform};
use crate::store::Selector;

use super::driver::Driver;
use super::{apply, documents, wait};
pub(crate) use report::{render, Section, StoreRef};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Documents(#[from] documents::Error),
    #[error(transparent)]
    Apply(#[from] apply::Error),
    #[error(transparent)]
    Scratch(#[from] scratch::Error),
    #[error(transparent)]
    Wait(#[from] wait::Error),
    #[error("reading the scratch copy")]
    Store(#[from] crate::store::Error),
    #[error("{kind} {name:?}: reading what the writes would replace")]
    Read {
        kind: String,
        name: String,
        #[source]
        source: statestores::Error,
    },
}

/// The overlays opened for each state store `(kind, name)`.
#[derive(Debug, Default, Clone)]
struct Overlays(Arc<Mutex<BTreeMap<StoreRef, Arc<Overlay>>>>);

impl Overlays {
    /// Wraps each store the controllers open in its overlay. A store opened again (its spec or
    /// Secret changed) keeps the overlay it has, and so what was written through it.
    fn wrap(&self) -> Wrap {
        let overlays = self.clone();
        Arc::new(move |kind, name, store| {
            let mut all = overlays.0.lock().unwrap_or_else(PoisonError::into_inner);
            let key = StoreRef {
                kind: kind.to_string(),
                name: name.to_string(),
            };
            let overlay = all
                .entry(key)
                .or_insert_with(|| Arc::new(Overlay::new(store)));
            overlay.clone() as Arc<dyn StateStore>
        })
    }

    fn all(&self) -> Vec<(StoreRef, Arc<Overlay>)> {
        let all = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        all.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }
}

/// Applies `files` to a scratch copy of `home`'s platform, waits (at most `timeout`) until
/// everything has settled, and returns what would change in the state stores.
pub(crate) async fn run(
    home: &Path,
    files: &[PathBuf],
    timeout: Duration,
) -> Result<Vec<Section>, Error> {
    let docs = documents::load(files)?;
    let scratch = scratch::Scratch::of(home).await?;
    let copy = scratch.platform.clone();
    let prepared = apply::prepare(
        &docs,
        &apply::Known::load(
            &copy,
            crate::controllers::Settings::from_env().intervals.minimum,
        )
        .await
        .map_err(apply::Error::from)?,
    )?;
    for p in &prepared {
        for field in &p.pruned {
            eprintln!("warning: {}: unknown field {field} dropped", p.document);
        }
        for warning in &p.warnings {
            eprintln!("warning: {}: {warning}", p.document);
        }
    }
    apply::store_all(copy.control_plane().as_ref(), &prepared).await?;

    let overlays = Overlays::default();
    // Relative repository paths name folders of the real home, as in the real platform.
    let cache = Arc::new(Cache::wrapped(
        copy.cache_dir(),
        home.to_path_buf(),
        overlays.wrap(),
    ));
    let real_home = home.to_path_buf();
    let driver = Driver::customised(
        copy.clone(),
        Arc::new(move |runtime| {
            runtime
                .with_state_stores(cache.clone())
                .hiding_also(real_home.clone())
        }),
    );
    let targets: Vec<(KindInfo, ObjectKey)> =
        prepared.iter().map(|p| (p.kind.clone(), p.key())).collect();
    let settled = wait::settle(&driver, &copy, &targets, timeout).await;
    // What the change set off beyond the objects themselves is carried out before stopping.
    driver.shutdown().await;
    settled?;

    let mut pending = Vec::new();
    for (store, overlay) in overlays.all() {
        let files = overlay.pending().await.map_err(|source| Error::Read {
            kind: store.kind.clone(),
            name: store.name.clone(),
            source,
        })?;
        pending.push((store, files));
    }
    Ok(report::sections(pending, &destination_roots(&copy).await?))
}

/// Where each Destination's files lie, from the Destinations and stores of the copy.
async fn destination_roots(platform: &Platform) -> Result<Vec<report::DestinationRoot>, Error> {
    let cp = platform.control_plane();
    let mut store_paths: BTreeMap<StoreRef, Option<String>> = BTreeMap::new();
    for kind in crate::api::kinds::STATE_STORES {
        let info = kind.info();
        for store in cp.list(&info, None, &Selector::everything()).await? {
            let path = crate::api::state_store::key_prefix(&store).map(str::to_string);
            let name = store.metadata.name.clone().unwrap_or_default();
            store_paths.insert(
                StoreRef {
                    kind: info.kind.clone(),
                    name,
                },
                path,
            );
        }
    }
    let mut roots = Vec::new();
    for obj in cp
        .list(
            &builtin(Builtin::Destination),
            None,
            &Selector::everything(),
        )
        .await?
    {
        // A Destination that cannot be read as one has no files the writer could have planned.
        let Ok(dest) = crate::api::object::to_typed::<Destination>(&obj) else {
            continue;
        };
        let Some(store_ref) = dest.spec.state_store_ref.clone() else {
            continue;
        };
        let store = StoreRef {
            kind: store_ref.kind,
            name: store_ref.name,
        };
        let store_path = store_paths.get(&store).cloned().flatten();
        let Ok(root) = Key::parse(&destination_root(store_path.as_deref(), &dest.spec.path)) else {
            continue;
        };
        roots.push(report::DestinationRoot {
            destination: obj.metadata.name.clone().unwrap_or_default(),
            store,
            root,
        });
    }
    Ok(roots)
}
