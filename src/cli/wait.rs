//! Waiting for objects to settle. When no other process runs the home's controllers, the waiting
//! command runs them itself meanwhile (see [`Driver`]); otherwise it only watches.

use std::collections::HashSet;
use std::future::Future;
use std::time::{Duration, Instant};

use futures::{FutureExt, StreamExt};
use serde_json::Value;

use crate::api::object::condition;
use crate::api::{KindInfo, Object, ObjectKey, GROUP};
use crate::platform::Platform;
use crate::store::ControlPlane;

use super::driver::Driver;

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

/// Where an object stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settlement {
    Settled,
    Pending(String),
    Failed(String),
}

fn cond_str(c: Option<&Value>, field: &str) -> String {
    c.and_then(|c| c.get(field))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// Has the controller looked at the object's current generation?
pub fn observed_current_generation(obj: &Object) -> bool {
    let observed = obj
        .data
        .pointer("/status/observedGeneration")
        .and_then(Value::as_i64);
    observed.is_some() && observed == obj.metadata.generation
}

/// Whether an applied object has settled: workflows finished and works written for Promises and
/// requests; Ready for Destinations and state stores; at once for everything else.
pub fn settlement(kind: &KindInfo, obj: &Object) -> Settlement {
    if obj.metadata.deletion_timestamp.is_some() {
        return Settlement::Pending("being deleted".into());
    }
    let is_request = kind.group != GROUP && !kind.group.is_empty();
    let kratix_kind = kind.group == GROUP;
    match kind.kind.as_str() {
        "Promise" if kratix_kind => workflow_settlement(obj),
        "Destination" | "GitStateStore" | "BucketStateStore" if kratix_kind => {
            let ready = condition(obj, "Ready");
            if !observed_current_generation(obj) {
                return Settlement::Pending("not reconciled yet".into());
            }
            match cond_str(ready, "status").as_str() {
                "True" => Settlement::Settled,
                _ => Settlement::Pending(format!(
                    "Ready: {} {}",
                    cond_str(ready, "reason"),
                    cond_str(ready, "message")
                )),
            }
        }
        "PromiseRelease" if kratix_kind => {
            if !observed_current_generation(obj) {
                return Settlement::Pending("not reconciled yet".into());
            }
            let installed = condition(obj, "Installed");
            match cond_str(installed, "status").as_str() {
                "True" => Settlement::Settled,
                "False" => Settlement::Failed(format!(
                    "{}: {}",
                    cond_str(installed, "reason"),
                    cond_str(installed, "message")
                )),
                _ => Settlement::Pending("not installed yet".into()),
            }
        }
        _ if is_request => workflow_settlement(obj),
        _ => Settlement::Settled,
    }
}

/// Whether the object says it is paused (`Reconciled` of the pause's reason).
fn says_paused(obj: &Object) -> bool {
    cond_str(condition(obj, "Reconciled"), "reason")
        == crate::controllers::workflow::pausing::PAUSED_REASON
}

/// Whether `obj` carries `kratix.io/paused: "true"`.
fn labelled_paused(obj: &Object) -> bool {
    crate::api::object::label(obj, crate::api::labels::PAUSED) == Some("true")
}

fn workflow_settlement(obj: &Object) -> Settlement {
    // Paused by its own label: nothing runs until the label goes, so there is nothing to wait
    // for, whatever generation its status was written for (a paused object does not claim to
    // have seen a spec changed while paused); `apply` keeps a pause the file does not lift.
    if labelled_paused(obj) && says_paused(obj) {
        return Settlement::Settled;
    }
    if !observed_current_generation(obj) {
        return Settlement::Pending("not reconciled yet".into());
    }
    // The controller clears the label when it starts the re-run; until then the conditions
    // describe the previous run.
    if crate::api::object::label(obj, crate::api::labels::MANUAL_RECONCILIATION) == Some("true") {
        return Settlement::Pending("manual reconciliation requested".into());
    }
    let configure = condition(obj, "ConfigureWorkflowCompleted");
    if cond_str(configure, "status") == "False"
        && cond_str(configure, "reason") == "ConfigureWorkflowFailed"
    {
        return Settlement::Failed(cond_str(configure, "message"));
    }
    // A Promise waiting for its required Promises says which condition holds it.
    let requirements = condition(obj, "RequirementsFulfilled");
    if cond_str(requirements, "status") == "False" {
        return Settlement::Pending(format!(
            "RequirementsFulfilled: {} ({})",
            cond_str(requirements, "message"),
            cond_str(requirements, "reason")
        ));
    }
    let reconciled = condition(obj, "Reconciled");
    // Paused by its Promise's label, seen for its current generation.
    if says_paused(obj) {
        return Settlement::Settled;
    }
    match cond_str(reconciled, "status").as_str() {
        "True" => Settlement::Settled,
        _ => {
            let works = condition(obj, "WorksSucceeded");
            let mut reason = format!("Reconciled: {}", cond_str(reconciled, "message"));
            if cond_str(works, "status") == "False" {
                reason = format!("WorksSucceeded: {}", cond_str(works, "message"));
            }
            Settlement::Pending(reason)
        }
    }
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
pub async fn drive_until<T, F, Fut>(
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
            _ = tokio::time::sleep(CHECK_INTERVAL) => {}
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
pub async fn settle(
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

/// A request's settlement given the Promise generation its status was written for (`observed`)
/// and the Promise's current one: a status written for an older Promise says nothing yet,
/// whether it reads settled or failed.
fn for_promise_generation(
    settled: Settlement,
    observed: Option<i64>,
    current: Option<i64>,
    promise_name: &str,
) -> Settlement {
    match current {
        Some(current) if observed != Some(current) => Settlement::Pending(format!(
            "not reconciled yet for the latest change of Promise {promise_name}"
        )),
        _ => settled,
    }
}

pub async fn get(
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

/// `--for condition=TYPE[=STATUS]`: has the condition that status for the current generation?
pub fn condition_met(obj: &Object, type_: &str, status: &str) -> bool {
    observed_current_generation(obj)
        && condition(obj, type_)
            .and_then(|c| c.get("status"))
            .and_then(Value::as_str)
            .is_some_and(|s| s.eq_ignore_ascii_case(status))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::test_objects::{redis as request, redis_kind as request_kind};
    use serde_json::json;

    #[test]
    fn a_request_status_counts_only_for_the_current_promise_generation() {
        let failed = || Settlement::Failed("b".into());
        let cases = [
            (
                "settled, same generation",
                Settlement::Settled,
                Some(2),
                Some(2),
                "settled",
            ),
            (
                "settled, older generation",
                Settlement::Settled,
                Some(1),
                Some(2),
                "pending",
            ),
            (
                "failed, same generation",
                failed(),
                Some(2),
                Some(2),
                "failed",
            ),
            (
                "failed, older generation",
                failed(),
                Some(1),
                Some(2),
                "pending",
            ),
            ("failed, never observed", failed(), None, Some(2), "pending"),
            ("Promise gone", failed(), Some(1), None, "failed"),
        ];
        for (name, settled, observed, current, want) in cases {
            let got = match for_promise_generation(settled, observed, current, "p") {
                Settlement::Settled => "settled",
                Settlement::Pending(_) => "pending",
                Settlement::Failed(_) => "failed",
            };
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn settlement_follows_conditions_of_the_current_generation() {
        let cases = [
            ("no status", json!({}), 1, "pending"),
            (
                "reconciled for an older generation",
                json!({"observedGeneration": 1, "conditions": [{"type": "Reconciled", "status": "True"}]}),
                2,
                "pending",
            ),
            (
                "reconciled",
                json!({"observedGeneration": 2, "conditions": [{"type": "Reconciled", "status": "True"}]}),
                2,
                "settled",
            ),
            (
                "paused, the new generation seen",
                json!({"observedGeneration": 2, "conditions": [
                    {"type": "Reconciled", "status": "Unknown", "reason": "PausedReconciliation", "message": "Paused"}]}),
                2,
                "settled",
            ),
            (
                "paused, the new generation not seen yet",
                json!({"observedGeneration": 1, "conditions": [
                    {"type": "Reconciled", "status": "Unknown", "reason": "PausedReconciliation", "message": "Paused"}]}),
                2,
                "pending",
            ),
            (
                "pipeline failed",
                json!({"observedGeneration": 2, "conditions": [
                    {"type": "ConfigureWorkflowCompleted", "status": "False", "reason": "ConfigureWorkflowFailed", "message": "A Configure Pipeline has failed: b"}]}),
                2,
                "failed",
            ),
        ];
        for (name, status, generation, want) in cases {
            let got = match settlement(&request_kind(), &request(generation, status)) {
                Settlement::Settled => "settled",
                Settlement::Pending(_) => "pending",
                Settlement::Failed(_) => "failed",
            };
            assert_eq!(got, want, "{name}");
        }
    }

    /// A paused object keeps the generation it last acted on: held by its own label it has
    /// settled whatever generation its status was written for; once the label goes, the
    /// condition the pause left says nothing until the controller has looked again.
    #[test]
    fn an_object_paused_by_its_own_label_has_settled_at_any_generation() {
        let paused = json!({"observedGeneration": 1, "conditions": [
            {"type": "Reconciled", "status": "Unknown", "reason": "PausedReconciliation", "message": "Paused"}]});
        let cases = [
            (Some("true"), paused.clone(), "settled"),
            (None, paused.clone(), "pending"),
            (Some("false"), paused, "pending"),
            (
                Some("true"),
                json!({"observedGeneration": 1, "conditions": [{"type": "Reconciled", "status": "True"}]}),
                "pending",
            ),
        ];
        for (label, status, want) in cases {
            let mut obj = request(2, status);
            if let Some(value) = label {
                obj.metadata.labels = Some(
                    [(crate::api::labels::PAUSED.to_string(), value.to_string())]
                        .into_iter()
                        .collect(),
                );
            }
            let got = match settlement(&request_kind(), &obj) {
                Settlement::Settled => "settled",
                Settlement::Pending(_) => "pending",
                Settlement::Failed(_) => "failed",
            };
            assert_eq!(got, want, "{label:?} {:#}", obj.data);
        }
    }
}
