//! Counters that only grow, across processes and restarts: one ConfigMap per counter in the
//! system namespace holds the highest number any process reserved. A process reserves a block
//! of numbers with one write conditioned on its `resourceVersion` and hands them out itself, so
//! that creating many pipeline runs at once costs one round trip per block, not two per run,
//! and the processes' runs do not queue on one object's conflicts.
//!
//! What this guarantees: every number is handed out once; one process hands its numbers out in
//! increasing order; a block reserved after another one holds only higher numbers. So a
//! process that starts, or a replica that becomes the leader (it reserves after the previous
//! leader stopped acting), numbers above everything handed out before. Numbers a process
//! reserved and did not hand out are skipped, never reused. What it does not guarantee: that
//! two processes running at once number in the order of their calls (one may still hand out
//! its older block's numbers after the other reserved a newer one). The controllers need no
//! more: a run's number orders it among the runs of its own object only, and one object's
//! runs are created one reconcile at a time, by the one replica that acts.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use kube::Client;
use tokio::sync::Mutex;

use super::errors::{backend, to_store};
use super::CAS_ATTEMPTS;
use crate::api::{ObjectKey, SYSTEM_NAMESPACE};
use crate::store;

const VALUE: &str = "value";

/// How many numbers one write reserves. Large enough that a burst of runs rarely waits on the
/// API server, small enough that a restart skips few.
pub(super) const BLOCK_SIZE: i64 = 64;

/// A stored counter that cannot be advanced.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    #[error("the stored value is not a whole number")]
    NotANumber(#[source] std::num::ParseIntError),
    #[error("the stored value {stored} leaves no room for {size} more numbers")]
    Exhausted { stored: i64, size: i64 },
}

/// Numbers reserved by this process and not handed out yet: `next..=last`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Block {
    next: i64,
    last: i64,
}

/// The number to hand out from `block` and what is left of it; `None` when there is no block or
/// it is spent, and a new one must be reserved.
pub(super) fn take(block: Option<Block>) -> Option<(i64, Option<Block>)> {
    let block = block.filter(|b| b.next <= b.last)?;
    let rest = (block.next < block.last).then_some(Block {
        next: block.next + 1,
        last: block.last,
    });
    Some((block.next, rest))
}

/// The block of `size` numbers (at least one) reserved after `stored`, the highest number
/// reserved so far (none: the counter starts at 1). Its `last` is the value to store.
pub(super) fn reserve(stored: Option<&str>, size: i64) -> Result<Block, Error> {
    let stored = stored
        .map(str::parse::<i64>)
        .transpose()
        .map_err(Error::NotANumber)?
        .unwrap_or(0);
    let size = size.max(1);
    let last = stored
        .checked_add(size)
        .ok_or(Error::Exhausted { stored, size })?;
    Ok(Block {
        next: stored + 1,
        last,
    })
}

/// The ConfigMap holding counter `name`: a DNS label made of the name's letters and digits.
pub(super) fn config_map_name(name: &str) -> String {
    let cleaned: String = name
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let mut full = format!("kratix-rs-sequence-{cleaned}");
    full.truncate(63);
    full.trim_end_matches('-').to_string()
}

/// The blocks this process holds, by counter. One lock for all: while one caller reserves,
/// the others wait for its block instead of racing it for the ConfigMap.
#[derive(Debug, Clone, Default)]
pub(super) struct Blocks(Arc<Mutex<HashMap<String, Block>>>);

impl Blocks {
    /// The counter's next number: from the block held, or from a block reserved now.
    pub(super) async fn next(&self, client: &Client, name: &str) -> store::Result<i64> {
        let mut held = self.0.lock().await;
        loop {
            if let Some((value, rest)) = take(held.get(name).copied()) {
                match rest {
                    Some(rest) => held.insert(name.to_string(), rest),
                    None => held.remove(name),
                };
                return Ok(value);
            }
            let block = reserve_block(client, name, BLOCK_SIZE).await?;
            held.insert(name.to_string(), block);
        }
    }
}

/// Reserves the next `size` numbers of counter `name` with a write conditioned on the
/// ConfigMap's `resourceVersion` (or its creation), retried while other writers win.
async fn reserve_block(client: &Client, name: &str, size: i64) -> store::Result<Block> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), SYSTEM_NAMESPACE);
    let cm_name = config_map_name(name);
    let key = ObjectKey::new("", "ConfigMap", Some(SYSTEM_NAMESPACE), &cm_name);
    let pp = PostParams::default();
    for _ in 0..CAS_ATTEMPTS {
        let current = api
            .get_opt(&cm_name)
            .await
            .map_err(|e| to_store(e, &key, None, "get"))?;
        let stored = current
            .as_ref()
            .and_then(|cm| cm.data.as_ref())
            .and_then(|d| d.get(VALUE))
            .map(String::as_str);
        let block =
            reserve(stored, size).map_err(|e| backend(format!("counter {name} in {key}"), e))?;
        let data = BTreeMap::from([(VALUE.to_string(), block.last.to_string())]);
        let result = match current {
            None => {
                let cm = ConfigMap {
                    metadata: kube::core::ObjectMeta {
                        name: Some(cm_name.clone()),
                        namespace: Some(SYSTEM_NAMESPACE.into()),
                        labels: Some(BTreeMap::from([(
                            crate::api::labels::MANAGED_BY.to_string(),
                            "kratix-rs".to_string(),
                        )])),
                        annotations: Some(BTreeMap::from([(
                            "kratix.io/sequence".to_string(),
                            name.to_string(),
                        )])),
                        ..Default::default()
                    },
                    data: Some(data),
                    ..Default::default()
                };
                api.create(&pp, &cm)
                    .await
                    .map_err(|e| to_store(e, &key, None, "create"))
            }
            Some(mut cm) => {
                cm.data = Some(data);
                let expected = cm.metadata.resource_version.clone();
                api.replace(&cm_name, &pp, &cm)
                    .await
                    .map_err(|e| to_store(e, &key, expected.as_deref(), "update"))
            }
        };
        match result {
            Ok(_) => return Ok(block),
            Err(store::Error::Conflict { .. } | store::Error::AlreadyExists { .. }) => continue,
            Err(other) => return Err(other),
        }
    }
    Err(store::Error::Conflict {
        key,
        expected: String::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_name_valid_config_maps() {
        let names = [
            ("pipelinerun", "kratix-rs-sequence-pipelinerun"),
            ("Runs/of.X", "kratix-rs-sequence-runs-of-x"),
            (
                &"a".repeat(80),
                &format!("kratix-rs-sequence-{}", "a".repeat(44)),
            ),
        ];
        for (name, want) in names {
            assert_eq!(config_map_name(name), want, "{name}");
        }
    }

    #[test]
    fn a_block_starts_after_the_highest_number_reserved() {
        let block = |next, last| Some(Block { next, last });
        let cases = [
            (None, 64, block(1, 64)),
            (Some("64"), 64, block(65, 128)),
            // A counter written one number at a time (by an older version) goes on from there.
            (Some("41"), 64, block(42, 105)),
            (Some("41"), 1, block(42, 42)),
            (Some("41"), 0, block(42, 42)),
            (Some("-3"), 4, block(-2, 1)),
            (Some("x"), 64, None),
            (Some(""), 64, None),
            (Some(&i64::MAX.to_string()), 1, None),
            (
                Some(&(i64::MAX - 64).to_string()),
                64,
                block(i64::MAX - 63, i64::MAX),
            ),
        ];
        for (stored, size, want) in cases {
            assert_eq!(reserve(stored, size).ok(), want, "{stored:?} {size}");
        }
        assert!(matches!(reserve(Some("x"), 1), Err(Error::NotANumber(_))));
        assert!(matches!(
            reserve(Some(&i64::MAX.to_string()), 2),
            Err(Error::Exhausted { size: 2, .. })
        ));
    }

    #[test]
    fn a_block_hands_its_numbers_out_in_order_then_asks_for_another() {
        let block = |next, last| Some(Block { next, last });
        let cases = [
            (None, None),
            (block(5, 7), Some((5, block(6, 7)))),
            (block(6, 7), Some((6, block(7, 7)))),
            (block(7, 7), Some((7, None))),
            // Never made by `reserve`, but spent all the same.
            (block(8, 7), None),
        ];
        for (held, want) in cases {
            assert_eq!(take(held), want, "{held:?}");
        }
    }

    #[test]
    fn numbers_grow_across_blocks_and_none_repeats() {
        // One process taking 200 numbers: a reservation whenever its block is spent, each one
        // after the value the previous one stored.
        let (mut stored, mut held, mut got, mut writes) = (None::<String>, None, vec![], 0);
        while got.len() < 200 {
            if let Some((value, rest)) = take(held) {
                got.push(value);
                held = rest;
            } else {
                let block = reserve(stored.as_deref(), BLOCK_SIZE).expect("reserve");
                stored = Some(block.last.to_string());
                held = Some(block);
                writes += 1;
            }
        }
        assert_eq!(got, (1..=200).collect::<Vec<i64>>());
        assert_eq!(writes, 4);
        // A restart forgets the block: the next process starts above everything reserved.
        let after = reserve(stored.as_deref(), BLOCK_SIZE).expect("reserve");
        assert_eq!(take(Some(after)).map(|(v, _)| v), Some(257));
    }
}
