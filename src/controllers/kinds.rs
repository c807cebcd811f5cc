//! The kinds the controllers know, kept between reconciles: reading them means listing and
//! parsing every Promise, which every reconcile and every change would otherwise do. Forgotten
//! whenever a Promise changes; a kind not found reads them again, so a Promise applied a moment
//! ago is never missed.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use crate::api::{promise_api, KindInfo};
use crate::platform::{self, Platform};

#[derive(Debug, Default)]
pub(crate) struct Kinds {
    known: Mutex<Option<Arc<Known>>>,
}

/// What one reading of the Promises gave.
#[derive(Debug)]
struct Known {
    all: Arc<Vec<KindInfo>>,
    /// The request kind of each Promise that defines one, by the Promise's name.
    of_promise: HashMap<String, KindInfo>,
}

impl Kinds {
    /// The kind of a stored object, given its group and kind name.
    pub(crate) async fn kind_of(
        &self,
        platform: &Platform,
        group: &str,
        kind: &str,
    ) -> Result<Option<KindInfo>, platform::Error> {
        if let Some(found) = self.known().and_then(|known| find(&known.all, group, kind)) {
            return Ok(Some(found));
        }
        Ok(find(&self.read(platform).await?, group, kind))
    }

    /// The request kind the Promise `promise` defines, if it exists and defines one.
    pub(crate) async fn request_kind_of(
        &self,
        platform: &Platform,
        promise: &str,
    ) -> Result<Option<KindInfo>, platform::Error> {
        if let Some(found) = self
            .known()
            .and_then(|known| known.of_promise.get(promise).cloned())
        {
            return Ok(Some(found));
        }
        self.read(platform).await?;
        Ok(self
            .known()
            .and_then(|known| known.of_promise.get(promise).cloned()))
    }

    /// Every kind, read afresh.
    pub(crate) async fn read(
        &self,
        platform: &Platform,
    ) -> Result<Arc<Vec<KindInfo>>, platform::Error> {
        let promises = platform.promises().await?;
        let of_promise = promises
            .iter()
            .filter_map(|p| {
                let kind = promise_api::kinds_from_promises(std::slice::from_ref(p))
                    .into_iter()
                    .next()?;
                Some((p.metadata.name.clone()?, kind))
            })
            .collect();
        let all = Arc::new(promise_api::all_kinds(&promises));
        *self.known.lock().unwrap_or_else(PoisonError::into_inner) = Some(Arc::new(Known {
            all: all.clone(),
            of_promise,
        }));
        Ok(all)
    }

    /// Forgets what is kept: a Promise changed.
    pub(crate) fn forget(&self) {
        *self.known.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }

    fn known(&self) -> Option<Arc<Known>> {
        self.known
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

fn find(kinds: &[KindInfo], group: &str, kind: &str) -> Option<KindInfo> {
    kinds
        .iter()
        .find(|k| k.group == group && k.kind == kind)
        .cloned()
}
