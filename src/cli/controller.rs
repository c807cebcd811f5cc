//! `kratix-rs controller`: every controller of the embedded runtime, unchanged, on a Kubernetes
//! API server; one replica acts at a time when `--leader-elect` is given.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tracing::{info, warn};

use crate::controllers::Runtime;
use crate::jobs::{job, KubeJobs};
use crate::kube::health::{self, Endpoints};
use crate::kube::leader::{Elector, Role, Timing};
use crate::kube::lease::{self, LeaseRef};
use crate::kube::KubeControlPlane;
use crate::pipeline::Executor;
use crate::platform::Platform;
use crate::store::ControlPlane;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Kube(#[from] crate::kube::Error),
    #[error(transparent)]
    Platform(#[from] crate::platform::Error),
    #[error(transparent)]
    Jobs(#[from] crate::jobs::Error),
    #[error("the pipeline Job settings")]
    JobSettings(#[from] crate::jobs::job::SettingsError),
    /// The work folder could not be made.
    #[error("work folder {path}")]
    WorkDir {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// This replica could not renew its Lease in time: it stopped acting, so that the replica
    /// that takes the Lease over acts alone.
    #[error("lost the leader election: stopped so that another replica acts alone")]
    LeadershipLost,
    /// Flags that do not fit together.
    #[error("{0}")]
    Usage(String),
}

/// Where pipelines run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum Pipelines {
    /// Each pipeline run is a Kubernetes Job shaped like Kratix's.
    #[default]
    Jobs,
    /// Pipelines run inside the controller's own pod (or machine), as in the embedded runtime.
    Local,
}

/// How logs are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum LogFormat {
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

#[derive(Debug, Clone, clap::Args)]
pub struct ControllerArgs {
    /// Kubeconfig to connect with; without it, `KUBECONFIG`, `~/.kube/config`, then the
    /// in-cluster service account.
    #[arg(long, env = "KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// Folder for pipeline runs (their input, output and logs) and state-store caches (Git's
    /// bare repositories); `images.yaml` here maps images to local commands. Losing it loses
    /// nothing: runs start again and caches are fetched again.
    #[arg(long, env = "KRATIX_WORK_DIR", default_value = "/var/lib/kratix-rs")]
    pub work_dir: PathBuf,
    /// Take part in leader election: only the holder of the Lease acts.
    #[arg(long)]
    pub leader_elect: bool,
    /// Namespace of the Lease.
    #[arg(long, default_value = crate::api::SYSTEM_NAMESPACE)]
    pub leader_election_namespace: String,
    /// Name of the Lease.
    #[arg(long, default_value = "kratix-rs-controller")]
    pub leader_election_id: String,
    /// Seconds a Lease not renewed holds before a standby takes over.
    #[arg(long, default_value_t = 15)]
    pub lease_duration: u64,
    /// Seconds the leader keeps acting without renewing (less than the lease duration).
    #[arg(long, default_value_t = 10)]
    pub renew_deadline: u64,
    /// Seconds between two looks at the Lease.
    #[arg(long, default_value_t = 2)]
    pub retry_period: u64,
    /// This replica's name in the Lease (default: host name and a random suffix).
    #[arg(long, env = "POD_NAME")]
    pub identity: Option<String>,
    /// Address of /healthz and /readyz.
    #[arg(long, default_value = "0.0.0.0:8081")]
    pub health_addr: String,
    /// Address of /metrics (Prometheus text format).
    #[arg(long, default_value = "0.0.0.0:8080")]
    pub metrics_addr: String,
    /// Where pipelines run: `jobs` (a Kubernetes Job per run; needs
    /// `KRATIX_PIPELINE_ADAPTER_IMAGE`) or `local` (inside the controller's own pod or machine).
    #[arg(long, env = "KRATIX_PIPELINES", value_enum, default_value_t = Pipelines::Jobs)]
    pub pipelines: Pipelines,
    /// Log format on standard error; `KRATIX_LOG` sets the level (e.g. `info`).
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// How new requests of a versioned Promise are bound: `floating` (`spec.version:
    /// latest`, following each new Promise version) or `pinned` (the version current when the
    /// request is made).
    #[arg(long, env = crate::controllers::BINDING_VERSION_ENV, value_enum, default_value_t)]
    pub resource_binding_version: crate::controllers::request::binding::Strategy,
    /// The ServiceAccount this controller runs as (`namespace/name`; deploy/ sets it). It is
    /// granted `delete` on each Promise's request kind as the kind is installed, so that deleting
    /// a Promise can delete its requests without a right to delete every kind.
    #[arg(long, env = "KRATIX_SERVICE_ACCOUNT")]
    pub service_account: Option<crate::kube::request_access::Account>,
    #[command(flatten)]
    pub intervals: super::IntervalArgs,
}

impl ControllerArgs {
    fn timing(&self) -> Timing {
        Timing {
            lease_duration: Duration::from_secs(self.lease_duration),
            renew_deadline: Duration::from_secs(self.renew_deadline),
            retry_period: Duration::from_secs(self.retry_period),
        }
    }

    fn identity(&self) -> String {
        self.identity.clone().unwrap_or_else(|| {
            let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
                .map_or_else(|_| "kratix-rs".into(), |h| h.trim().to_string());
            format!("{host}_{}", uuid::Uuid::new_v4().simple())
        })
    }
}

/// What carries out pipeline runs on Kubernetes: Jobs on the cluster of `config`, or the local
/// executor.
pub(crate) fn pipeline_executor(
    pipelines: Pipelines,
    config: kube::Config,
) -> Result<Arc<dyn Executor>, Error> {
    Ok(match pipelines {
        Pipelines::Jobs => Arc::new(KubeJobs::new(config, job::Settings::from_env()?)?),
        Pipelines::Local => Arc::new(crate::pipeline::Local::default()),
    })
}

/// The controllers on `platform`, running pipelines with `executor`; their metrics include
/// `kratix_leader`.
pub fn runtime(platform: Platform, executor: Arc<dyn Executor>) -> Runtime {
    Runtime::new(platform)
        .with_executor(executor)
        .with_metrics(Arc::new(crate::metrics::Metrics::with_leader()))
}

/// Runs until SIGTERM (or SIGINT); then stops as `serve` does and gives the Lease up.
pub async fn run(args: ControllerArgs) -> Result<(), Error> {
    if args.leader_elect {
        args.timing().check().map_err(Error::Usage)?;
    }
    // The same signal stops start-up (waiting for the API server) and the controllers.
    let signal = super::signal::shutdown();
    tokio::pin!(signal);
    let config = crate::kube::client_config(args.kubeconfig.as_deref()).await?;
    // Settings are checked before anything else happens.
    let executor = pipeline_executor(args.pipelines, config.clone())?;
    let mut kube = KubeControlPlane::new(
        ::kube::Client::try_from(config).map_err(|e| Error::Kube(crate::kube::Error::Config(e)))?,
    );
    if let Some(account) = args.service_account.clone() {
        kube = kube.with_request_access(account);
    }
    std::fs::create_dir_all(&args.work_dir).map_err(|source| Error::WorkDir {
        path: args.work_dir.display().to_string(),
        source,
    })?;
    let cp: Arc<dyn ControlPlane> = Arc::new(kube.clone());
    let platform = Platform::with_control_plane(&args.work_dir, cp.clone())?;
    // Jobs run on the cluster's nodes, whose scheduler and quotas bound them: no cap unless
    // KRATIX_MAX_PARALLEL sets one.
    let slots = crate::controllers::pipeline_slots(
        std::env::var(crate::controllers::MAX_PARALLEL_ENV)
            .ok()
            .as_deref(),
        args.pipelines == Pipelines::Jobs,
    );
    let runtime = runtime(platform, executor)
        .with_max_parallel(slots)
        .with_binding_strategy(args.resource_binding_version)
        .with_settings(|s| args.intervals.apply(s));

    let (role_tx, role_rx) = watch::channel(Role::Standby);
    let probes = Arc::new(health::Probes::default());
    let state = health::State {
        role: role_rx.clone(),
        metrics: runtime.metrics().clone(),
        probes: probes.clone(),
        watches: kube.watch_health(),
    };
    let _servers = serve_endpoints(&args, state).await?;
    let _probe = AbortOnDrop(tokio::spawn(probe_api_server(cp, probes.clone())));
    tokio::select! {
        () = &mut signal => return Ok(()),
        () = system_namespace(&kube) => probes.system_namespace.store(true, Ordering::SeqCst),
    }

    let (stop_tx, stop_rx) = watch::channel(false);
    let election = join_election(&args, &kube, role_tx, &probes, stop_rx);
    let mut role = role_rx.clone();
    // Only whether it leads: the value borrowed from the channel must not outlive this, or
    // the election could never publish a new role.
    let leading = tokio::select! {
        () = &mut signal => None,
        changed = role.wait_for(|r| *r == Role::Leader) => Some(changed.is_ok()),
    };
    let outcome = match leading {
        None => Ok(()),
        Some(true) => act(runtime, role_rx, signal).await,
        Some(false) => Err(Error::LeadershipLost),
    };
    // The Lease is renewed until the controllers have stopped, then given up.
    let _ = stop_tx.send(true);
    if let Some(election) = election {
        let _ = election.await;
    }
    outcome
}

/// Makes sure the system namespace exists (creating it only when missing), retrying until it
/// does: `/readyz` says not ready meanwhile, and the log says why.
async fn system_namespace(kube: &KubeControlPlane) {
    while let Err(err) = kube.ensure_system_namespace().await {
        warn!(error = %crate::controllers::ErrorChain(&err), "the system namespace is not usable; looking again in 5s");
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
}

/// Starts taking part in the election, or (without `--leader-elect`) leads at once.
fn join_election(
    args: &ControllerArgs,
    kube: &KubeControlPlane,
    role: watch::Sender<Role>,
    probes: &Arc<health::Probes>,
    stop: watch::Receiver<bool>,
) -> Option<tokio::task::JoinHandle<()>> {
    if !args.leader_elect {
        probes.election.store(true, Ordering::SeqCst);
        let _ = role.send(Role::Leader);
        // Keep the sender: the role never changes.
        tokio::spawn(async move {
            let _keep = role;
            std::future::pending::<()>().await;
        });
        return None;
    }
    let elector = Elector::new(args.identity(), args.timing());
    let at = LeaseRef {
        namespace: args.leader_election_namespace.clone(),
        name: args.leader_election_id.clone(),
    };
    info!(identity = elector.identity(), lease = %at.name, "joining the leader election");
    Some(tokio::spawn(lease::elect(
        kube.client(),
        at,
        elector,
        role,
        probes.clone(),
        stop,
    )))
}

/// Runs the controllers while this replica leads. Stopped by the signal, runs in progress get
/// the shutdown grace (the Lease is still renewed meanwhile); stopped by losing the Lease, they
/// are stopped at once, since another replica may already act.
async fn act(
    runtime: Runtime,
    mut role: watch::Receiver<Role>,
    signal: impl std::future::Future<Output = ()>,
) -> Result<(), Error> {
    info!("leading: starting the controllers");
    let lost = Arc::new(AtomicBool::new(false));
    let lost_flag = lost.clone();
    let at_once = runtime
        .clone()
        .with_settings(|s| s.shutdown_grace = Duration::ZERO);
    runtime
        .run((), async move {
            tokio::select! {
                () = signal => info!("stopping"),
                _ = role.wait_for(|r| *r != Role::Leader) => {
                    warn!("lost the leader election; stopping the controllers");
                    lost_flag.store(true, Ordering::SeqCst);
                }
            }
            if lost_flag.load(Ordering::SeqCst) {
                at_once.stop_executing().await;
            }
        })
        .await;
    if lost.load(Ordering::SeqCst) {
        return Err(Error::LeadershipLost);
    }
    Ok(())
}

/// Listens for the health and metrics endpoints (one listener when the addresses are equal).
async fn serve_endpoints(
    args: &ControllerArgs,
    state: health::State,
) -> Result<Vec<AbortOnDrop>, Error> {
    let mut listeners = vec![];
    if args.health_addr == args.metrics_addr {
        let all = Endpoints {
            health: true,
            metrics: true,
        };
        listeners.push((health::bind(&args.health_addr).await?, all));
    } else {
        let health = Endpoints {
            health: true,
            metrics: false,
        };
        let metrics = Endpoints {
            health: false,
            metrics: true,
        };
        listeners.push((health::bind(&args.health_addr).await?, health));
        listeners.push((health::bind(&args.metrics_addr).await?, metrics));
    }
    Ok(listeners
        .into_iter()
        .map(|(listener, endpoints)| {
            AbortOnDrop(tokio::spawn(health::serve(
                listener,
                endpoints,
                state.clone(),
            )))
        })
        .collect())
}

/// Looks at the API server every few seconds, for `/readyz`.
async fn probe_api_server(cp: Arc<dyn ControlPlane>, probes: Arc<health::Probes>) {
    loop {
        let ok = cp.current_resource_version().await.is_ok();
        probes.api_reachable.store(ok, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_secs(if ok { 5 } else { 1 })).await;
    }
}

/// A task that ends with its handle.
pub(super) struct AbortOnDrop(pub(super) tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
