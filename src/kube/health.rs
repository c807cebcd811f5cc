//! `/healthz`, `/readyz` and `/metrics` (Prometheus text format) of `kratix-rs controller`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use hyper::StatusCode;
use tokio::net::TcpListener;
use tokio::sync::watch;

use super::leader::Role;
use crate::controllers::metrics::{self, Metrics};

/// What the endpoints report on.
#[derive(Debug, Clone)]
pub struct State {
    pub role: watch::Receiver<Role>,
    pub metrics: Arc<Metrics>,
    /// Whether the API server answered the last look.
    pub api_reachable: Arc<AtomicBool>,
}

/// Which endpoints a listener serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Endpoints {
    pub health: bool,
    pub metrics: bool,
}

/// Ready when the API server answers and, for the leader, once its controllers have listed
/// everything and opened their change feed; a standby is ready to take over.
pub fn ready(role: Role, api_reachable: bool, started: bool) -> bool {
    api_reachable && (role == Role::Standby || started)
}

/// The metrics in Prometheus' text format: the controllers', and whether this replica leads.
pub fn render(state: &State) -> String {
    let mut out = state.metrics.render();
    let leader = u8::from(*state.role.borrow() == Role::Leader);
    out.push_str("# HELP kratix_leader Whether this replica is the leader (1) or a standby (0).\n");
    out.push_str("# TYPE kratix_leader gauge\n");
    out.push_str(&format!("kratix_leader {leader}\n"));
    out
}

/// The answer to a GET of `path`.
pub fn answer(path: &str, endpoints: Endpoints, state: &State) -> (StatusCode, String) {
    match path {
        "/healthz" if endpoints.health => (StatusCode::OK, "ok\n".into()),
        "/readyz" if endpoints.health => {
            let role = *state.role.borrow();
            let ok = ready(
                role,
                state.api_reachable.load(Ordering::SeqCst),
                state.metrics.started(),
            );
            if ok {
                (StatusCode::OK, "ok\n".into())
            } else {
                (StatusCode::SERVICE_UNAVAILABLE, "not ready\n".into())
            }
        }
        "/metrics" if endpoints.metrics => (StatusCode::OK, render(state)),
        _ => (StatusCode::NOT_FOUND, "not found\n".into()),
    }
}

/// Binds `addr` (before returning, so that a bad address fails the start).
pub async fn bind(addr: &str) -> Result<TcpListener, super::Error> {
    Ok(metrics::bind(addr).await?)
}

/// Serves `endpoints` on `listener` until the task is dropped.
pub async fn serve(listener: TcpListener, endpoints: Endpoints, state: State) {
    let answer: metrics::Answer = Arc::new(move |path: &str| answer(path, endpoints, &state));
    metrics::serve(listener, answer).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(role: Role, started: bool, reachable: bool) -> State {
        let metrics = Arc::new(Metrics::default());
        metrics.set_started(started);
        metrics.record(crate::api::GROUP, "Work", true);
        metrics.record("example.com", "Thing", false);
        State {
            role: watch::channel(role).1,
            metrics,
            api_reachable: Arc::new(AtomicBool::new(reachable)),
        }
    }

    #[test]
    fn readiness_needs_the_api_server_and_a_started_leader() {
        let cases = [
            (Role::Standby, true, false, true),
            (Role::Standby, false, false, false),
            (Role::Leader, true, false, false),
            (Role::Leader, true, true, true),
            (Role::Leader, false, true, false),
        ];
        for (role, reachable, started, want) in cases {
            assert_eq!(
                ready(role, reachable, started),
                want,
                "{role:?} {reachable} {started}"
            );
        }
    }

    #[test]
    fn endpoints_answer_only_where_served() {
        let both = Endpoints {
            health: true,
            metrics: true,
        };
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
        let (status, _) = answer("/readyz", both, &state(Role::Leader, true, false));
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    }

    #[test]
    fn metrics_are_prometheus_text() {
        let text = render(&state(Role::Leader, true, true));
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
