//! The kinds the controllers know, kept between reconciles: reading them means listing and
//! parsing every Promise, which every reconcile and every change would otherwise do. Forgotten
//! whenever a Promise changes; a kind not found reads them again, so a Promise applied a moment
//! ago is never missed.

use std::sync::{Arc, Mutex, PoisonError};

use crate::api::KindInfo;
use crate::platform::{self, Platform};

#[derive(Debug, Default)]
pub struct Kinds {
    known: Mutex<Option<Arc<Vec<KindInfo>>>>,
}

impl Kinds {
    /// The kind of a stored object, given its group and kind name.
    pub async fn kind_of(
        &self,
        platform: &Platform,
        group: &str,
        kind: &str,
    ) -> Result<Option<KindInfo>, platform::Error> {
        if let Some(found) = self.known().and_then(|known| find(&known, group, kind)) {
            return Ok(Some(found));
        }
        Ok(find(&self.read(platform).await?, group, kind))
    }

    /// Every kind, read afresh.
    pub async fn read(&self, platform: &Platform) -> Result<Arc<Vec<KindInfo>>, platform::Error> {
        let kinds = Arc::new(platform.kinds().await?);
        *self.known.lock().unwrap_or_else(PoisonError::into_inner) = Some(kinds.clone());
        Ok(kinds)
    }

    /// Forgets what is kept: a Promise changed.
    pub fn forget(&self) {
        *self.known.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }

    fn known(&self) -> Option<Arc<Vec<KindInfo>>> {
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
