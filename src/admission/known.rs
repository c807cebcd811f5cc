//! What a batch of documents is checked against from the stored platform.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::Value;

use crate::api::destination_paths::PathClaim;
use crate::api::{Destination, Object};
use crate::platform::Platform;
use crate::store::Selector;

/// What apply needs to know about the stored platform to validate a batch.
#[derive(Debug, Default, Clone)]
pub(crate) struct Known {
    pub promises: Vec<Object>,
    /// `(kind, name)` of stored GitStateStores and BucketStateStores.
    pub state_stores: BTreeSet<(String, String)>,
    /// Filepath mode of stored Destinations, by name (the mode is immutable).
    pub destination_modes: BTreeMap<String, String>,
    /// Where each stored Destination writes (no two may share a folder of one store).
    pub destinations: Vec<PathClaim>,
    /// The shortest `reconciliationInterval` a Promise may ask for (the platform's setting).
    pub minimum_interval: Duration,
}

impl Known {
    /// What `platform` stores, for documents checked with `minimum_interval` as the shortest
    /// reconciliation interval a Promise may ask for.
    pub(crate) async fn load(
        platform: &Platform,
        minimum_interval: Duration,
    ) -> Result<Self, crate::platform::Error> {
        let cp = platform.store.as_ref();
        let everything = Selector::everything();
        let mut known = Known {
            promises: platform.promises().await?,
            minimum_interval,
            ..Known::default()
        };
        for store_kind in crate::api::kinds::STATE_STORES {
            let info = store_kind.info();
            let kind = info.kind.as_str();
            for obj in cp
                .list(&info, None, &everything)
                .await
                .map_err(crate::platform::Error::from)?
            {
                known.state_stores.insert((
                    kind.to_string(),
                    obj.metadata.name.clone().unwrap_or_default(),
                ));
            }
        }
        for obj in cp
            .list(
                &crate::platform::builtin(crate::api::Builtin::Destination),
                None,
                &everything,
            )
            .await
            .map_err(crate::platform::Error::from)?
        {
            let mode = obj
                .data
                .pointer("/spec/filepath/mode")
                .and_then(Value::as_str)
                .unwrap_or("nestedByMetadata")
                .to_string();
            known
                .destination_modes
                .insert(obj.metadata.name.clone().unwrap_or_default(), mode);
            if let Ok(dest) = crate::api::object::to_typed::<Destination>(&obj) {
                known.destinations.push(PathClaim::of(&dest));
            }
        }
        Ok(known)
    }
}
