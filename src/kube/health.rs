//! `/healthz`, `/readyz` and `/metrics` (Prometheus text format) of `kratix-rs controller`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use hyper::StatusCode;
use tokio::net::TcpListener;
use tokio::sync::watch;

use super::leader::Role;
use crate::metrics::{self, Metrics};

/// What readiness depends on besides the role, each part set by the task that knows it.
#[derive(Debug, Default)]
pub(crate) struct Probes {
    /// The API server answered the last look.
    pub api_reachable: AtomicBool,
    /// The system namespace exists (looked at once at start, created only when missing).
    pub system_namespace: AtomicBool,
    /// The last look at the Lease (its read, and its write when one was due) succeeded;
    /// set from the start when there is no leader election.
    pub election: AtomicBool,
}

/// What the endpoints report on.
#[derive(Debug, Clone)]
pub(crate) struct State {
    pub role: watch::Receiver<Role>,
    pub metrics: Arc<Metrics>,
    pub probes: Arc<Probes>,
    /// The watches of the controllers' change feed.
    pub watches: super::WatchHealth,
}

/// A moment's view of everything readiness depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Checks {
    pub role: Role,
    pub api_reachable: bool,
    pub system_namespace: bool,
    pub election: bool,
    /// The leader's controllers have listed everything and their change feed is open.
    pub started: bool,
    /// Watches of the change feed that could not be opened at their last attempt.
    pub failing_watches: usize,
}

/// Why this replica is not ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum NotReady {
    #[error("the API server does not answer")]
    ApiServer,
    #[error("the system namespace is missing or cannot be read (see the log)")]
    SystemNamespace,
    #[error("the Lease of the leader election cannot be read or written (see the log)")]
    Election,
    #[error("the controllers have not listed everything and opened their change feed yet")]
    Starting,
    #[error("{0} watch(es) of the change feed cannot be opened (see the log)")]
    Watches(usize),
}

impl Checks {
    fn of(state: &State) -> Self {
        Self {
            role: *state.role.borrow(),
            api_reachable: state.probes.api_reachable.load(Ordering::SeqCst),
            system_namespace: state.probes.system_namespace.load(Ordering::SeqCst),
            election: state.probes.election.load(Ordering::SeqCst),
            started: state.metrics.started(),
            failing_watches: state.watches.failing(),
        }
    }
}

/// Which endpoints a listener serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Endpoints {
    pub health: bool,
    pub metrics: bool,
}

/// Ready when this replica can do its part: the API server answers, the system namespace is
/// there and the Lease can be looked at; a standby is then ready to take over, the leader once
/// its controllers have listed everything and every watch of their change feed is open.
pub(crate) fn ready(c: &Checks) -> Result<(), NotReady> {
    if !c.api_reachable {
        return Err(NotReady::ApiServer);
    }
    if !c.system_namespace {
        return Err(NotReady::SystemNamespace);
    }
    if !c.election {
        return Err(NotReady::Election);
    }
    if c.role == Role::Leader {
        if !c.started {
            return Err(NotReady::Starting);
        }
        if c.failing_watches > 0 {
            return Err(NotReady::Watches(c.failing_watches));
        }
    }
    Ok(())
}

/// The answer to a GET of `/metrics`: the controllers' metrics and whether this replica leads,
/// as it does at this moment.
fn scrape(state: &State) -> (StatusCode, String) {
    state
        .metrics
        .set_leader(*state.role.borrow() == Role::Leader);
    metrics::scrape(&state.metrics)
}

/// The answer to a GET of `path`.
pub(crate) fn answer(path: &str, endpoints: Endpoints, state: &State) -> (StatusCode, String) {
    match path {
        "/healthz" if endpoints.health => (StatusCode::OK, "ok\n".into()),
        "/readyz" if endpoints.health => match ready(&Checks::of(state)) {
            Ok(()) => (StatusCode::OK, "ok\n".into()),
            Err(why) => (
                StatusCode::SERVICE_UNAVAILABLE,
                format!("not ready: {why}\n"),
            ),
        },
        "/metrics" if endpoints.metrics => scrape(state),
        _ => (StatusCode::NOT_FOUND, "not found\n".into()),
    }
}

/// Binds `addr` (before returning, so that a bad address fails the start).
pub(crate) async fn bind(addr: &str) -> Result<TcpListener, super::Error> {
    Ok(metrics::bind(addr).await?)
}

/// Serves `endpoints` on `listener` until the task is dropped.
pub(crate) async fn serve(listener: TcpListener, endpoints: Endpoints, state: State) {
    let answer: metrics::Answer = Arc::new(move |path: &str| answer(path, endpoints, &state));
    metrics::serve(listener, answer).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(role: Role, started: bool, reachable: bool) -> State {
        let metrics = Arc::new(Metrics::with_leader());
        metrics.set_started(started);
        metrics.record(crate::api::GROUP, "Work", None);
        metrics.record(
            "example.com",
            "Thing",
            Some(crate::metrics::ErrorCategory::ControlPlane),
        );
        let probes = Probes::default();
        probes.api_reachable.store(reachable, Ordering::SeqCst);
        probes.system_namespace.store(true, Ordering::SeqCst);
        probes.election.store(true, Ordering::SeqCst);
        State {
            role: watch::channel(role).1,
            metrics,
            probes: Arc::new(probes),
            watches: Default::default(),
        }
    }

    #[test]
    fn readiness_needs_everything_this_replica_does_its_part_with() {
        let all = Checks {
            role: Role::Leader,
            api_reachable: true,
            system_namespace: true,
            election: true,
            started: true,
            failing_watches: 0,
        };
        let standby = Checks {
            role: Role::Standby,
            started: false,
            ..all
        };
        let cases = [
            ("leader, all well", all, Ok(())),
            ("standby, all well", standby, Ok(())),
            (
                "API server away",
                Checks {
                    api_reachable: false,
                    ..all
                },
                Err(NotReady::ApiServer),
            ),
            (
                "standby, API server away",
                Checks {
                    api_reachable: false,
                    ..standby
                },
                Err(NotReady::ApiServer),
            ),
            (
                "standby, namespace missing or forbidden",
                Checks {
                    system_namespace: false,
                    ..standby
                },
                Err(NotReady::SystemNamespace),
            ),
            (
                "standby, Lease unreadable",
                Checks {
                    election: false,
                    ..standby
                },
                Err(NotReady::Election),
            ),
            (
                "leader not started",
                Checks {
                    started: false,
                    ..all
                },
                Err(NotReady::Starting),
            ),
            (
                "leader with failing watches",
                Checks {
                    failing_watches: 2,
                    ..all
                },
                Err(NotReady::Watches(2)),
            ),
            (
                "standby: its watches are not open, as it does not act",
                Checks {
                    failing_watches: 2,
                    ..standby
                },
                Ok(()),
            ),
        ];
        for (case, checks, want) in cases {
            assert_eq!(ready(&checks), want, "{case}");
        }
    }

    fn both() -> Endpoints {
        Endpoints {
            health: true,
            metrics: true,
        }
    }

    #[test]
    fn endpoints_answer_only_where_served() {
        let both = both();
        let health_only = Endpoints {
            health: true,
            metrics: false,
        };
        let s = state(Role::Leader, true, true);
        let cases = [
            ("/healthz", both, StatusCode::OK),
            ("/readyz", both, StatusCode::OK),
            ("/metrics", both, StatusCode::OK),
            ("/metrics", health_only, StatusCode::NOT_FOUND),
            ("/", both, StatusCode::NOT_FOUND),
        ];
        for (path, endpoints, want) in cases {
            assert_eq!(answer(path, endpoints, &s).0, want, "{path} {endpoints:?}");
        }
        let (status, body) = answer("/readyz", both, &state(Role::Leader, true, false));
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(body, "not ready: the API server does not answer\n");
    }

    #[test]
    fn metrics_are_prometheus_text_and_say_whether_this_replica_leads() {
        let (status, text) = answer("/metrics", both(), &state(Role::Leader, true, true));
        assert_eq!(status, StatusCode::OK);
        let (_, standby) = answer("/metrics", both(), &state(Role::Standby, true, true));
        assert!(standby.lines().any(|l| l == "kratix_leader 0"), "{standby}");
        for line in [
            "# TYPE kratix_reconcile_total counter",
            "kratix_reconcile_total{controller=\"request\"} 1",
            "kratix_reconcile_total{controller=\"work\"} 1",
            "kratix_reconcile_errors_total{controller=\"request\"} 1",
            "kratix_reconcile_errors_total{controller=\"work\"} 0",
            "kratix_leader 1",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} missing in\n{text}");
        }
    }
}
