//! Waiting for objects to settle. When no other process runs the home's controllers, the waiting
//! command runs them itself meanwhile (see [`Driver`]); otherwise it only watches.

use std::collections::HashSet;
use std::future::Future;
use std::time::{Duration, Instant};

use futures::{FutureExt, StreamExt};
use serde_json::Value;

use crate::api::{KindInfo, Object, ObjectKey, GROUP};
use crate::platform::Platform;
use crate::store::ControlPlane;

use super::driver::Driver;

mod settlement;

pub(crate) use settlement::{condition_met, observed_current_generation, settlement, Settlement};
use settlement::{for_promise_generation, labelled_paused, says_paused};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An object reached a failed state.
    #[error("{key} failed: {reason}")]
    Failed { key: ObjectKey, reason: String },
    /// The timeout passed first.
    #[error("timed out after {seconds}s waiting for {what}")]
    Timeout { seconds: u64, what: String },
    /// The control plane could not be read.
    #[error("reading {key}")]
    Store {
        key: ObjectKey,
        #[source]
        source: crate::store::Error,
    },
    /// The controllers could not be started here.
    #[error(transparent)]
    Driver(#[from] super::driver::Error),
}

/// How often a wait looks again at the latest, when nothing it is told of changes.
const CHECK_INTERVAL: Duration = Duration::from_millis(50);

/// How long a wait woken by a change lets further changes gather before it looks: the look
/// then covers all of them, however fast the controllers write.
const GATHER: Duration = Duration::from_millis(5);

/// Runs `check` until it returns `Some`: again whenever the control plane changes (changes
/// made in this process are told at once, other processes' within the store's poll interval),
/// and every [`CHECK_INTERVAL`] anyway. Meanwhile the controllers run in this process whenever
/// no other process runs them (see [`Driver`]). Cheap: [`settle`] reads only what is pending.
pub(crate) async fn drive_until<T, F, Fut>(
    driver: &Driver,
    timeout: Duration,
    what: &str,
    mut check: F,
) -> Result<T, Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Option<T>, Error>>,
{
    let deadline = Instant::now() + timeout;
    let mut changes = changes_from_now(driver.control_plane().as_ref()).await;
    loop {
        driver.take_over_if_free()?;
        if let Some(result) = check().await? {
            return Ok(result);
        }
        driver.look().await;
        if Instant::now() >= deadline {
            return Err(Error::Timeout {
                seconds: timeout.as_secs(),
                what: what.to_string(),
            });
        }
        tokio::select! {
            () = tokio::time::sleep(CHECK_INTERVAL) => {}
            change = changes.next() => match change {
                Some(Ok(_)) => {
                    tokio::time::sleep(GATHER).await;
                    // Those gathered are covered by the look that follows.
                    while let Some(Some(Ok(_))) = changes.next().now_or_never() {}
                }
                // Without the feed, the interval alone paces the looks.
                _ => changes = futures::stream::pending().boxed(),
            },
        }
    }
}

/// The control plane's changes from now on; none (the wait then looks at its interval) when
/// its position cannot be read.
async fn changes_from_now(cp: &dyn ControlPlane) -> ChangeFeed {
    match cp.current_resource_version().await {
        Ok(now) => cp.watch(&[], &now),
        Err(_) => futures::stream::pending().boxed(),
    }
}

type ChangeFeed =
    futures::stream::BoxStream<'static, Result<crate::store::Change, crate::store::Error>>;

/// Waits until every object has settled; fails as soon as one has failed. A Promise has settled
/// once its requests have too (a Promise change re-runs their workflows). An object seen settled
/// is not read again, so each look reads only what is still pending, not everything applied.
pub(crate) async fn settle(
    driver: &Driver,
    platform: &Platform,
    objects: &[(KindInfo, ObjectKey)],
    timeout: Duration,
) -> Result<(), Error> {
    let cp = platform.control_plane();
    let last_pending = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let settled = std::sync::Arc::new(std::sync::Mutex::new(HashSet::<ObjectKey>::new()));
    let result = drive_until(driver, timeout, "objects to settle", || {
        let cp = cp.clone();
        let last = last_pending.clone();
        let settled = settled.clone();
        async move {
            let is_settled = |key: &ObjectKey| {
                settled
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .contains(key)
            };
            for (kind, key) in objects {
                if is_settled(key) {
                    continue;
                }
                let Some(obj) = get(cp.as_ref(), kind, key).await? else {
                    continue;
                };
                let mut to_check = vec![(kind.clone(), obj.clone())];
                if kind.group == GROUP && kind.kind == "Promise" {
                    to_check.extend(requests_of(cp.as_ref(), &obj).await?);
                }
                for (kind, obj) in &to_check {
                    let key = ObjectKey::of(obj);
                    match settlement_now(cp.as_ref(), kind, obj).await? {
                        Settlement::Settled => {}
                        Settlement::Failed(reason) => return Err(Error::Failed { key, reason }),
                        Settlement::Pending(reason) => {
                            if let Ok(mut last) = last.lock() {
                                *last = format!("{key}: {reason}");
                            }
                            return Ok(None);
                        }
                    }
                }
                settled
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .insert(key.clone());
            }
            Ok(Some(()))
        }
    })
    .await;
    match result {
        Err(Error::Timeout { seconds, .. }) => Err(Error::Timeout {
            seconds,
            what: last_pending.lock().map(|l| l.clone()).unwrap_or_default(),
        }),
        other => other,
    }
}

/// Every request of a Promise, with its kind.
async fn requests_of(
    cp: &dyn ControlPlane,
    promise: &Object,
) -> Result<Vec<(KindInfo, Object)>, Error> {
    let Some(kind) = crate::api::promise_api::kinds_from_promises(std::slice::from_ref(promise))
        .into_iter()
        .next()
    else {
        return Ok(vec![]);
    };
    let requests = cp
        .list(&kind, None, &crate::store::Selector::everything())
        .await
        .map_err(|source| Error::Store {
            key: ObjectKey::of(promise),
            source,
        })?;
    Ok(requests.into_iter().map(|r| (kind.clone(), r)).collect())
}

/// [`settlement`], plus for requests: has the request been reconciled for its Promise's
/// current generation?
async fn settlement_now(
    cp: &dyn ControlPlane,
    kind: &KindInfo,
    obj: &Object,
) -> Result<Settlement, Error> {
    let settled = settlement(kind, obj);
    let is_request = kind.group != GROUP && !kind.group.is_empty();
    if is_request && matches!(settled, Settlement::Pending(_)) && says_paused(obj) {
        // Paused by its Promise's label: settled while that label holds, whatever generation
        // the request's status was written for.
        let promise = match crate::api::object::label(obj, crate::api::labels::PROMISE_NAME) {
            Some(name) => {
                let key = ObjectKey::new(GROUP, "Promise", None, name);
                get(
                    cp,
                    &crate::platform::builtin(crate::api::Builtin::Promise),
                    &key,
                )
                .await?
            }
            None => None,
        };
        if promise.as_ref().is_some_and(labelled_paused) {
            return Ok(Settlement::Settled);
        }
    }
    // A failure is checked against the Promise's generation too: right after a Promise change
    // the request still shows how the previous Promise's workflow ended until its controller
    // has looked at it again.
    if matches!(settled, Settlement::Pending(_)) || !is_request {
        return Ok(settled);
    }
    let Some(promise_name) = crate::api::object::label(obj, crate::api::labels::PROMISE_NAME)
    else {
        return Ok(settled);
    };
    let promise_key = ObjectKey::new(GROUP, "Promise", None, promise_name);
    let promise = get(
        cp,
        &crate::platform::builtin(crate::api::Builtin::Promise),
        &promise_key,
    )
    .await?;
    let observed = obj
        .data
        .pointer("/status/observedPromiseGeneration")
        .and_then(Value::as_i64);
    let current = promise.and_then(|p| p.metadata.generation);
    Ok(for_promise_generation(
        settled,
        observed,
        current,
        promise_name,
    ))
}

pub(crate) async fn get(
    cp: &dyn ControlPlane,
    kind: &KindInfo,
    key: &ObjectKey,
) -> Result<Option<Object>, Error> {
    cp.get(kind, key.namespace.as_deref(), &key.name)
        .await
        .map_err(|source| Error::Store {
            key: key.clone(),
            source,
        })
}
