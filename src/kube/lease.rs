//! Leader election, the I/O: reads and writes a `coordination.k8s.io/v1` Lease every retry
//! period, as [`super::leader::Elector`] decides, and publishes this replica's role.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, PostParams};
use kube::Client;
use tokio::sync::watch;
use tracing::{info, warn};

use super::health::Probes;
use super::leader::{Action, Elector, Record, Role};
use statestores::error_chain::ErrorChain;

/// Where the Lease is.
#[derive(Debug, Clone)]
pub(crate) struct LeaseRef {
    pub namespace: String,
    pub name: String,
}

fn record(lease: &Lease) -> Record {
    let spec = lease.spec.clone().unwrap_or_default();
    Record {
        holder: spec.holder_identity,
        renew_time: spec.renew_time.map(|t| t.0.to_string()),
        lease_duration: std::time::Duration::from_secs(
            u64::try_from(spec.lease_duration_seconds.unwrap_or(0)).unwrap_or(0),
        ),
        transitions: spec.lease_transitions.unwrap_or(0),
    }
}

/// The Lease after `action` by `elector` on `current`; `None` for [`Action::Wait`].
fn written(
    current: Option<&Lease>,
    action: &Action,
    elector: &Elector,
    at: &LeaseRef,
) -> Option<Lease> {
    let now = MicroTime(jiff::Timestamp::now());
    let mut lease = current.cloned().unwrap_or_else(|| Lease {
        metadata: kube::core::ObjectMeta {
            name: Some(at.name.clone()),
            namespace: Some(at.namespace.clone()),
            ..Default::default()
        },
        spec: None,
    });
    let mut spec = lease.spec.clone().unwrap_or_default();
    match action {
        Action::Wait => return None,
        Action::Acquire => {
            spec.holder_identity = Some(elector.identity().to_string());
            spec.acquire_time = Some(now.clone());
            spec.lease_transitions =
                Some(spec.lease_transitions.unwrap_or(0) + i32::from(current.is_some()));
        }
        Action::Renew => {}
    }
    spec.renew_time = Some(now);
    spec.lease_duration_seconds =
        Some(i32::try_from(elector.timing().lease_duration.as_secs()).unwrap_or(i32::MAX));
    lease.spec = Some(spec);
    Some(lease)
}

/// Takes part in the election until `stop` turns true; then gives the Lease up if held, so
/// that a standby takes over at once. `role` tells who acts; `probes.election` whether the last
/// look at the Lease (its read, and its write when one was due) succeeded.
pub(crate) async fn elect(
    client: Client,
    at: LeaseRef,
    mut elector: Elector,
    role: watch::Sender<Role>,
    probes: Arc<Probes>,
    mut stop: watch::Receiver<bool>,
) {
    let api: Api<Lease> = Api::namespaced(client, &at.namespace);
    let start = tokio::time::Instant::now();
    let retry = elector.timing().retry_period;
    loop {
        let current = match api.get_opt(&at.name).await {
            Ok(lease) => Some(lease),
            Err(err) => {
                warn!(error = %ErrorChain(&err), lease = %at.name, "reading the Lease failed");
                None
            }
        };
        let mut ok = current.is_some();
        if let Some(current) = current {
            let action = elector.decide(current.as_ref().map(record).as_ref(), start.elapsed());
            if let Some(lease) = written(current.as_ref(), &action, &elector, &at) {
                let pp = PostParams::default();
                let result = match &current {
                    None => api.create(&pp, &lease).await,
                    Some(_) => api.replace(&at.name, &pp, &lease).await,
                };
                match result {
                    Ok(_) => elector.written(true, start.elapsed()),
                    Err(kube::Error::Api(status)) if status.code == 409 => elector.lost_race(),
                    Err(err) => {
                        warn!(error = %ErrorChain(&err), lease = %at.name, "writing the Lease failed");
                        elector.written(false, start.elapsed());
                        ok = false;
                    }
                }
            } else {
                elector.lost_race();
            }
        }
        probes.election.store(ok, Ordering::SeqCst);
        let now_role = elector.role(start.elapsed());
        let published = *role.borrow();
        if published != now_role {
            info!(identity = elector.identity(), role = ?now_role, "leader election");
            let _ = role.send(now_role);
        }
        tokio::select! {
            () = tokio::time::sleep(retry) => {}
            _ = stop.wait_for(|s| *s) => break,
        }
    }
    if elector.role(start.elapsed()) == Role::Leader {
        release(&api, &at, elector.identity()).await;
    }
    let _ = role.send(Role::Standby);
}

/// Clears the holder of a Lease this replica holds.
async fn release(api: &Api<Lease>, at: &LeaseRef, identity: &str) {
    let Ok(Some(mut lease)) = api.get_opt(&at.name).await else {
        return;
    };
    let Some(spec) = lease.spec.as_mut() else {
        return;
    };
    if spec.holder_identity.as_deref() != Some(identity) {
        return;
    }
    spec.holder_identity = None;
    spec.lease_duration_seconds = Some(1);
    if let Err(err) = api.replace(&at.name, &PostParams::default(), &lease).await {
        warn!(error = %ErrorChain(&err), lease = %at.name, "releasing the Lease failed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::leader::Timing;
    use k8s_openapi::api::coordination::v1::LeaseSpec;

    #[test]
    fn writes_name_the_holder_and_count_terms() {
        let at = LeaseRef {
            namespace: "ns".into(),
            name: "l".into(),
        };
        let elector = Elector::new("me", Timing::default());
        let held = |holder: &str, transitions| Lease {
            metadata: Default::default(),
            spec: Some(LeaseSpec {
                holder_identity: Some(holder.into()),
                lease_transitions: Some(transitions),
                ..Default::default()
            }),
        };
        // (current, action) → (holder, transitions) written, or nothing
        let cases = [
            (None, Action::Acquire, Some(("me", 0))),
            (Some(held("other", 3)), Action::Acquire, Some(("me", 4))),
            (Some(held("me", 4)), Action::Renew, Some(("me", 4))),
            (Some(held("other", 3)), Action::Wait, None),
        ];
        for (current, action, want) in cases {
            let got = written(current.as_ref(), &action, &elector, &at).map(|l| {
                let spec = l.spec.expect("spec");
                assert_eq!(spec.lease_duration_seconds, Some(15));
                assert!(spec.renew_time.is_some());
                (
                    spec.holder_identity.unwrap_or_default(),
                    spec.lease_transitions.unwrap_or(0),
                )
            });
            let want = want.map(|(h, t)| (h.to_string(), t));
            assert_eq!(got, want, "{current:?} {action:?}");
        }
    }
}
