//! The command-line contract (docs/cli.md).

pub(crate) mod apply;
mod complete_words;
pub mod completion;
pub mod controller;
pub(crate) mod describe;
pub(crate) mod diff;
pub(crate) use crate::admission::documents;
mod driver;
pub(crate) mod events;
mod examples;
pub(crate) mod get;
pub(crate) mod logs;
pub(crate) mod metadata;
pub(crate) mod output;
pub(crate) mod progress;
pub mod run;
mod signal;
#[cfg(test)]
mod test_objects;
pub(crate) mod tree;
pub(crate) mod wait;
mod waiting;

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "kratix-rs",
    version,
    about = "Kratix, the platform framework: Promises, sequential pipelines, Git and bucket state stores",
    after_help = examples::TOP
)]
pub struct Cli {
    /// The platform's home folder (embedded control plane, caches, pipeline runs).
    #[arg(long, global = true, env = "KRATIX_HOME", default_value = "./.kratix")]
    pub home: PathBuf,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create or update objects from YAML, then wait until they have settled.
    #[command(after_help = examples::APPLY)]
    Apply {
        /// A file, a folder (every *.yaml / *.yml inside, recursively) or `-` for standard input.
        #[arg(short = 'f', long = "filename", required = true)]
        files: Vec<PathBuf>,
        #[command(flatten)]
        wait: WaitArgs,
    },
    /// Show what applying objects would write to the state stores, as unified diffs per
    /// Destination, without changing the home or any store. Exit status 0: no differences,
    /// 1: differences, 2 or more: an error.
    #[command(after_help = examples::DIFF)]
    Diff {
        /// A file, a folder (every *.yaml / *.yml inside, recursively) or `-` for standard input.
        #[arg(short = 'f', long = "filename", required = true)]
        files: Vec<PathBuf>,
        /// Give up waiting for the workflows after this many seconds.
        #[arg(long, default_value_t = 600)]
        timeout: u64,
    },
    /// Delete objects (running their delete workflows and removing their files first).
    #[command(after_help = examples::DELETE)]
    Delete {
        #[arg(short = 'f', long = "filename")]
        files: Vec<PathBuf>,
        /// KIND NAME
        target: Vec<String>,
        #[arg(short = 'n', long)]
        namespace: Option<String>,
        #[command(flatten)]
        wait: WaitArgs,
    },
    /// Show objects.
    #[command(after_help = examples::GET)]
    Get {
        /// A kind, plural, singular or short name, including the kinds Promises define.
        /// A kind, plural, singular or short name, including the kinds Promises define.
        #[arg(value_parser = completion::KindParser, hide_possible_values = true)]
        kind: String,
        name: Option<String>,
        #[arg(short = 'n', long)]
        namespace: Option<String>,
        /// Every namespace.
        #[arg(short = 'A', long)]
        all_namespaces: bool,
        /// Label selector, e.g. `app=x,tier!=db`.
        #[arg(short = 'l', long)]
        selector: Option<String>,
        #[arg(short = 'o', long, value_enum, default_value_t = OutputFormat::Table)]
        output: OutputFormat,
        /// Add a LABELS column to the table.
        #[arg(long)]
        show_labels: bool,
        /// After the objects, print a line for every change until interrupted (or `--timeout`).
        #[arg(short = 'w', long)]
        watch: bool,
        /// With `--watch`: stop after this many seconds.
        #[arg(long, requires = "watch")]
        timeout: Option<u64>,
    },
    /// Show one object for a person: metadata, conditions, pipeline runs, where its files went,
    /// and its recent events.
    #[command(after_help = examples::DESCRIBE)]
    Describe {
        /// A kind, plural, singular or short name, including the kinds Promises define.
        #[arg(value_parser = completion::KindParser, hide_possible_values = true)]
        kind: String,
        name: String,
        #[arg(short = 'n', long)]
        namespace: Option<String>,
    },
    /// Show the events the controllers recorded (of every object, of a kind, or of one object).
    #[command(after_help = examples::EVENTS)]
    Events {
        /// A kind, plural, singular or short name, including the kinds Promises define.
        #[arg(value_parser = completion::KindParser, hide_possible_values = true)]
        kind: Option<String>,
        name: Option<String>,
        #[arg(short = 'n', long)]
        namespace: Option<String>,
        /// Every namespace.
        #[arg(short = 'A', long)]
        all_namespaces: bool,
        #[arg(short = 'o', long, value_enum, default_value_t = OutputFormat::Table)]
        output: OutputFormat,
    },
    /// Show where a Promise, a request or a Destination led: pipeline runs, Works, placements,
    /// and the state store's commit and paths.
    #[command(after_help = examples::TREE)]
    Tree {
        /// `promise`, `destination`, or a kind a Promise defines.
        #[arg(value_parser = completion::KindParser, hide_possible_values = true)]
        kind: String,
        name: String,
        #[arg(short = 'n', long)]
        namespace: Option<String>,
        /// `text` (box-drawing branches on a terminal, ASCII otherwise), `dot` or `mermaid`.
        #[arg(short = 'o', long, value_enum, default_value_t = tree::TreeFormat::Text)]
        output: tree::TreeFormat,
    },
    /// Wait for a condition of an object (for its current generation), or for its deletion.
    #[command(after_help = examples::WAIT)]
    Wait {
        /// A kind, plural, singular or short name, including the kinds Promises define.
        /// A kind, plural, singular or short name, including the kinds Promises define.
        #[arg(value_parser = completion::KindParser, hide_possible_values = true)]
        kind: String,
        name: String,
        #[arg(short = 'n', long)]
        namespace: Option<String>,
        /// `condition=TYPE[=STATUS]` or `delete`.
        #[arg(long = "for")]
        for_: String,
        #[arg(long, default_value_t = 300)]
        timeout: u64,
        #[command(flatten)]
        progress: ProgressArgs,
    },
    /// Re-run an object's configure workflow from its first pipeline.
    #[command(after_help = examples::RECONCILE)]
    Reconcile {
        /// A kind, plural, singular or short name, including the kinds Promises define.
        /// A kind, plural, singular or short name, including the kinds Promises define.
        #[arg(value_parser = completion::KindParser, hide_possible_values = true)]
        kind: String,
        name: String,
        #[arg(short = 'n', long)]
        namespace: Option<String>,
        #[command(flatten)]
        wait: WaitArgs,
    },
    /// Show the output of an object's pipeline runs.
    #[command(after_help = examples::LOGS)]
    Logs {
        /// A kind, plural, singular or short name, including the kinds Promises define.
        /// A kind, plural, singular or short name, including the kinds Promises define.
        #[arg(value_parser = completion::KindParser, hide_possible_values = true)]
        kind: String,
        name: String,
        #[arg(short = 'n', long)]
        namespace: Option<String>,
        #[arg(long)]
        pipeline: Option<String>,
    },
    /// Add, change (`--overwrite`) or remove (`key-`) labels of an object; metadata only.
    #[command(after_help = examples::LABEL)]
    Label(MetadataArgs),
    /// Add, change (`--overwrite`) or remove (`key-`) annotations of an object; metadata only.
    #[command(after_help = examples::ANNOTATE)]
    Annotate(MetadataArgs),
    /// Run every controller of the home until SIGINT or SIGTERM.
    #[command(after_help = examples::SERVE)]
    Serve {
        /// How many pipeline runs of different objects may run at once (default
        /// `KRATIX_MAX_PARALLEL`, else the number of cores).
        #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
        max_parallel: Option<u16>,
        /// How new requests of a versioned Promise are bound: `floating` (`spec.version:
        /// latest`, following each new Promise version) or `pinned` (the version current when
        /// the request is made).
        #[arg(long, env = crate::controllers::BINDING_VERSION_ENV, value_enum)]
        resource_binding_version: Option<crate::controllers::request::binding::Strategy>,
        /// Serve `/metrics` (Prometheus text format) and `/healthz` on this address, e.g.
        /// `127.0.0.1:8080`; none without it.
        #[arg(long)]
        metrics_addr: Option<String>,
        /// Serve the platform's read-only Kubernetes API to people on this address too (e.g.
        /// `127.0.0.1:6443`) and write `<home>/kubeconfig` (owner-only) with an administrator's
        /// token for it: `kubectl --kubeconfig <home>/kubeconfig get promises`. Pipelines get
        /// the API whether or not this is given.
        #[arg(long, value_name = "ADDR")]
        api_addr: Option<std::net::SocketAddr>,
        /// Log format on standard error; `KRATIX_LOG` sets the level (e.g. `info`).
        #[arg(long, value_enum, default_value_t = controller::LogFormat::Text)]
        log_format: controller::LogFormat,
        #[command(flatten)]
        intervals: IntervalArgs,
    },
    /// Run every controller against a Kubernetes API server (Promises' APIs become CRDs), with
    /// optional leader election, health and metrics endpoints; until SIGTERM.
    #[command(after_help = examples::CONTROLLER)]
    Controller(controller::ControllerArgs),
    /// Print the CustomResourceDefinitions of Kratix's kinds.
    #[command(after_help = examples::CRDS)]
    Crds,
    /// Run one of the adapter containers of a pipeline Job (inside the Job's pod).
    #[command(after_help = examples::PIPELINE_ADAPTER)]
    PipelineAdapter {
        #[arg(value_enum)]
        step: crate::jobs::adapter::Step,
    },
    /// Print a completion script for a shell.
    #[command(after_help = examples::COMPLETION)]
    Completion {
        #[arg(value_enum)]
        shell: completion::CompletionShell,
    },
}

/// The periodic reconciliations of `serve` and `controller`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct IntervalArgs {
    /// How often configure workflows run again although nothing changed, for Promises that set
    /// no interval: a Go duration (`10h`, `30m`) or seconds (default
    /// `KRATIX_RECONCILIATION_INTERVAL`, else 10h).
    #[arg(long, value_name = "DURATION", value_parser = parse_interval)]
    pub reconciliation_interval: Option<Duration>,
    /// How often written files are checked in their state store and restored where others
    /// changed or deleted them; `0` turns it off (default
    /// `KRATIX_STATE_STORE_RECONCILIATION_INTERVAL`, else 10h).
    #[arg(long, value_name = "DURATION", value_parser = parse_interval)]
    pub state_store_reconciliation_interval: Option<Duration>,
    /// Whether a failed configure workflow is retried (its failed pipeline after a backoff,
    /// the whole workflow at the interval): `false` leaves it failed until its spec changes or
    /// it is reconciled by hand, as Kratix's `reconcileAfterFailure` (default
    /// `KRATIX_RECONCILE_AFTER_FAILURE`, else true).
    #[arg(long, value_name = "BOOL")]
    pub reconcile_after_failure: Option<bool>,
}

impl IntervalArgs {
    /// Puts the given intervals into the controllers' settings.
    pub fn apply(&self, settings: &mut crate::controllers::Settings) {
        if let Some(every) = self.reconciliation_interval {
            settings.intervals.default = every;
        }
        if let Some(every) = self.state_store_reconciliation_interval {
            settings.drift_interval = (!every.is_zero()).then_some(every);
        }
        if let Some(retry) = self.reconcile_after_failure {
            settings.intervals.after_failure = retry;
        }
    }
}

fn parse_interval(text: &str) -> Result<Duration, String> {
    crate::controllers::parse_duration_setting(text)
        .ok_or_else(|| format!("{text:?} is not a duration (e.g. \"10h\", \"90s\", \"600\")"))
}

#[derive(Debug, Clone, clap::Args)]
pub struct WaitArgs {
    /// Store the change and return without waiting for it to settle.
    #[arg(long)]
    pub no_wait: bool,
    /// Give up waiting after this many seconds.
    #[arg(long, default_value_t = 600)]
    pub timeout: u64,
    #[command(flatten)]
    pub progress: ProgressArgs,
}

/// How the waiting commands show progress.
#[derive(Debug, Clone, clap::Args)]
pub struct ProgressArgs {
    /// No progress: only the command's own lines, as before progress existed.
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// `json`: one JSON event per line on standard output (the command's own lines included)
    /// instead of text.
    #[arg(short = 'o', long, value_enum)]
    pub output: Option<ProgressOutput>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProgressOutput {
    Json,
}

impl WaitArgs {
    pub fn timeout(&self) -> Duration {
        Duration::from_secs(self.timeout)
    }
}

/// `KIND NAME key=value … key- …` of `label` and `annotate`.
#[derive(Debug, Clone, clap::Args)]
pub struct MetadataArgs {
    /// A kind, plural, singular or short name, including the kinds Promises define.
    #[arg(value_parser = completion::KindParser, hide_possible_values = true)]
    pub kind: String,
    pub name: String,
    /// `key=value` to set, `key-` to remove.
    #[arg(required = true)]
    pub changes: Vec<String>,
    /// Allow changing a value that is already set.
    #[arg(long)]
    pub overwrite: bool,
    #[arg(short = 'n', long)]
    pub namespace: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    Table,
    Wide,
    Yaml,
    Json,
    /// `kind.group/name`, one a line.
    Name,
}
