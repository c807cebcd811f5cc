//! Storing what was admitted: created as the document gives it, or merged into the stored
//! object as `kubectl apply` merges (what the document sets wins, what it set last time and no
//! longer sets goes, what others set is kept).

use serde_json::json;

use super::{complete, last_applied, merge, set_configuration, without_server_fields};
use super::{Error, Prepared};
use crate::api::Object;
use crate::store::{self, ControlPlane};

/// One object `apply` stored.
#[derive(Debug, Clone)]
pub(crate) struct Stored {
    pub object: Object,
    /// It was stored before without a last-applied configuration (it was not made by `apply`),
    /// so the merge removed nothing; it has one now.
    pub without_history: bool,
    /// It was created or changed; false when the merge left the stored object as it was.
    pub changed: bool,
}

struct Merged {
    object: Object,
    /// The stored object had a last-applied configuration (else nothing was removed).
    history: bool,
}

impl Prepared {
    /// The stored object `live` with this document merged in as `kubectl apply` merges it: what
    /// the file sets wins, what it set last time and no longer sets goes, the rest is kept.
    /// Defaults are filled in and the result is checked again, as the API server does after a
    /// patch; identity and status stay `live`'s. `Err` names the document.
    fn merged_with(&self, live: &Object) -> Result<Merged, Error> {
        let invalid = |reason: String| Error::Invalid {
            document: self.document.clone(),
            reason: format!("merged with the stored object: {reason}"),
        };
        let previous = last_applied::previous(live);
        let history = previous.is_some();
        let last = previous.map_or_else(|| json!({}), last_applied::comparable);
        let live_value = serde_json::to_value(live).map_err(|e| invalid(e.to_string()))?;
        let mut merged = merge::merge(&last, &self.applied, &live_value);
        without_server_fields(&mut merged);
        let (mut object, _pruned) = complete(&self.kind, merged, &self.batch).map_err(invalid)?;
        object.metadata.uid = live.metadata.uid.clone();
        object.metadata.resource_version = live.metadata.resource_version.clone();
        object.metadata.creation_timestamp = live.metadata.creation_timestamp.clone();
        object.metadata.generation = live.metadata.generation;
        object.metadata.deletion_timestamp = live.metadata.deletion_timestamp.clone();
        object.metadata.managed_fields = live.metadata.managed_fields.clone();
        if let (Some(status), Some(map)) = (live.data.get("status"), object.data.as_object_mut()) {
            map.insert("status".into(), status.clone());
        }
        set_configuration(&mut object, &self.configuration);
        Ok(Merged { object, history })
    }
}

/// Stores every prepared object: created as the file gives it, or merged into the stored one
/// as `kubectl apply` merges (see [`Prepared::merged_with`]).
pub(crate) async fn store_all(
    cp: &dyn ControlPlane,
    prepared: &[Prepared],
) -> Result<Vec<Stored>, Error> {
    let mut stored = Vec::with_capacity(prepared.len());
    for p in prepared {
        stored.push(store_one(cp, p).await?);
    }
    Ok(stored)
}

/// Stores one prepared object: created, or merged into the stored one (see
/// [`Prepared::merged_with`]), again with what others wrote when they wrote meanwhile.
pub(crate) async fn store_one(cp: &dyn ControlPlane, p: &Prepared) -> Result<Stored, Error> {
    let key = p.key();
    let name = key.name.clone();
    let ns = key.namespace.clone();
    let store_err = |source| Error::Store {
        key: key.clone(),
        source,
    };
    // Retry on conflicts with controllers writing the same object meanwhile: the merge is made
    // again with what they wrote.
    for _ in 0..20 {
        let existing = cp
            .get(&p.kind, ns.as_deref(), &name)
            .await
            .map_err(store_err)?;
        let before = existing
            .as_ref()
            .and_then(|live| live.metadata.resource_version.clone());
        let (result, without_history) = match existing {
            None => (cp.create(&p.kind, &p.object).await, false),
            Some(live) => {
                let merged = p.merged_with(&live)?;
                if merged.object == live {
                    // Nothing to change: no write (an identical update is still a round trip
                    // through the API server's admission, for every document of every sync).
                    return Ok(Stored {
                        object: live,
                        without_history: false,
                        changed: false,
                    });
                }
                (cp.update(&p.kind, &merged.object).await, !merged.history)
            }
        };
        match result {
            Ok(object) => {
                return Ok(Stored {
                    changed: object.metadata.resource_version != before,
                    object,
                    without_history,
                })
            }
            Err(store::Error::Conflict { .. } | store::Error::AlreadyExists { .. }) => continue,
            Err(e) => return Err(store_err(e)),
        }
    }
    Err(store_err(store::Error::Conflict {
        key: key.clone(),
        expected: "latest".into(),
    }))
}
