//! Carries out one parsed command.

use std::time::Duration;

use serde_json::json;

use crate::api::{KindInfo, ObjectKey};
use crate::controllers;
use crate::platform::Platform;
use crate::store::embedded::HomeLock;
use crate::store::ControlPlane;

use super::driver::Driver;
use super::metadata::{self, Which};
use super::progress::printer::{object_event, Mode};
use super::waiting::{self, key_for, progress_for, with_progress};
use super::{
    apply, describe, diff, documents, events, get, logs, tree, wait, Cli, Command, MetadataArgs,
};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Platform(#[from] crate::platform::Error),
    #[error(transparent)]
    Documents(#[from] documents::Error),
    #[error(transparent)]
    Apply(#[from] apply::Error),
    #[error(transparent)]
    Get(#[from] get::Error),
    #[error(transparent)]
    Logs(#[from] logs::Error),
    #[error(transparent)]
    Describe(#[from] describe::Error),
    #[error(transparent)]
    Events(#[from] events::Error),
    #[error(transparent)]
    Waiting(#[from] waiting::Error),
    #[error(transparent)]
    Controllers(#[from] controllers::Error),
    #[error(transparent)]
    Metadata(#[from] metadata::Error),
    #[error(transparent)]
    Adapter(#[from] crate::jobs::adapter::Error),
    /// Another process already runs the controllers of this home.
    #[error("another kratix-rs process is already serving {home}")]
    AlreadyServing { home: String },
    #[error(transparent)]
    Controller(#[from] super::controller::Error),
    #[error(transparent)]
    Endpoint(#[from] crate::metrics::Error),
    #[error(transparent)]
    Api(#[from] crate::apiserver::Error),
    /// `--api-addr` was given and the platform API could not start.
    #[error("--api-addr: the platform API could not start (see the warning above)")]
    NoApi,
    #[error("writing to standard output")]
    Stdout(#[source] std::io::Error),
    #[error(transparent)]
    Diff(#[from] diff::Error),
    #[error(transparent)]
    Tree(#[from] tree::Error),
    /// `diff` found differences (and printed them): not a failure, but exit status 1.
    #[error("the state stores would change")]
    Differences,
}

pub async fn run(cli: Cli) -> Result<(), Error> {
    if let Command::Crds = cli.command {
        print!("{}", crate::api::crds::crds_yaml());
        return Ok(());
    }
    if let Command::Completion { shell } = cli.command {
        use std::io::Write;
        return std::io::stdout()
            .write_all(&super::completion::script(shell))
            .map_err(Error::Stdout);
    }
    if let Command::PipelineAdapter { step } = cli.command {
        return Ok(crate::jobs::adapter::run(step).await?);
    }
    if let Command::Controller(args) = cli.command {
        return Ok(super::controller::run(args).await?);
    }
    let platform = Platform::open(&cli.home)?;
    // One set of controllers for the whole command, however many waits it makes.
    let driver = Driver::new(platform.clone());
    let result = dispatch(cli.command, &platform, &driver).await;
    driver.shutdown().await;
    result
}

async fn dispatch(command: Command, platform: &Platform, driver: &Driver) -> Result<(), Error> {
    let platform = platform.clone();
    match command {
        Command::Apply { files, wait: w } => {
            let docs = documents::load(&files)?;
            let known = apply::Known::load(
                &platform,
                crate::controllers::Settings::from_env().intervals.minimum,
            )
            .await?;
            let prepared = apply::prepare(&docs, &known)?;
            for p in &prepared {
                for field in &p.pruned {
                    eprintln!("warning: {}: unknown field {field} dropped", p.document);
                }
                for warning in &p.warnings {
                    eprintln!("warning: {}: {warning}", p.document);
                }
            }
            for (document, warning) in apply::requirement_warnings(&prepared, &known.promises) {
                eprintln!("warning: {document}: {warning}");
            }
            let cp = platform.control_plane();
            let progress = progress_for(&platform, &w.progress);
            let before = snapshot(cp.as_ref(), &prepared).await;
            let stored = apply::store_all(cp.as_ref(), &prepared).await?;
            for ((p, stored), old_rv) in prepared.iter().zip(&stored).zip(before) {
                if stored.without_history {
                    eprintln!(
                        "warning: {}: {} had no {} annotation (it was not made by apply), so nothing was removed from it; it has one now",
                        p.document,
                        p.key(),
                        crate::api::labels::LAST_APPLIED
                    );
                }
                let obj = &stored.object;
                let verb = match old_rv {
                    None => "created",
                    Some(rv) if Some(&rv) == obj.metadata.resource_version.as_ref() => "unchanged",
                    Some(_) => "configured",
                };
                progress.say(
                    &format!(
                        "{}/{} {verb}",
                        p.kind.kind.to_ascii_lowercase(),
                        p.key().name
                    ),
                    object_event(
                        &p.key(),
                        &p.kind,
                        json!({"event": "Applied", "result": verb}),
                    ),
                );
            }
            if !w.no_wait {
                let targets: Vec<(KindInfo, ObjectKey)> =
                    prepared.iter().map(|p| (p.kind.clone(), p.key())).collect();
                with_progress(driver, &progress, &targets, || {
                    wait::settle(driver, &platform, &targets, w.timeout())
                })
                .await?;
                progress.say(
                    &format!("all {} objects settled", targets.len()),
                    json!({"event": "AllSettled", "objects": targets.len()}),
                );
                if progress.mode() != Mode::Json {
                    print_state_store_hints(&platform, &prepared);
                }
            }
            Ok(())
        }
        Command::Diff { files, timeout } => {
            let sections = diff::run(&platform.home, &files, Duration::from_secs(timeout)).await?;
            print!("{}", diff::render(&sections));
            if sections.is_empty() {
                Ok(())
            } else {
                Err(Error::Differences)
            }
        }
        Command::Tree {
            kind,
            name,
            namespace,
            output,
        } => {
            let terminal = std::io::IsTerminal::is_terminal(&std::io::stdout());
            let text = tree::run(
                &platform,
                &kind,
                &name,
                namespace.as_deref(),
                output,
                terminal,
            )
            .await?;
            print!("{text}");
            Ok(())
        }
        Command::Delete {
            files,
            target,
            namespace,
            wait: w,
        } => Ok(
            waiting::delete(&platform, driver, &files, &target, namespace.as_deref(), &w).await?,
        ),
        Command::Get {
            kind,
            name,
            namespace,
            all_namespaces,
            selector,
            output,
            show_labels,
            watch,
            timeout,
        } => {
            let args = get::GetArgs {
                kind: &kind,
                name: name.as_deref(),
                namespace: namespace.as_deref(),
                all_namespaces,
                selector: selector.as_deref(),
                output,
                show_labels,
            };
            if watch {
                return Ok(get::watch(&platform, args, timeout.map(Duration::from_secs)).await?);
            }
            let text = get::run(&platform, args).await?;
            if text.is_empty() {
                eprintln!("No resources found");
            }
            print!("{text}");
            Ok(())
        }
        Command::Describe {
            kind,
            name,
            namespace,
        } => {
            print!(
                "{}",
                describe::run(&platform, &kind, &name, namespace.as_deref()).await?
            );
            Ok(())
        }
        Command::Events {
            kind,
            name,
            namespace,
            all_namespaces,
            output,
        } => {
            let text = events::run(
                &platform,
                events::EventsArgs {
                    kind: kind.as_deref(),
                    name: name.as_deref(),
                    namespace: namespace.as_deref(),
                    all_namespaces,
                    output,
                },
            )
            .await?;
            if text.is_empty() {
                eprintln!("No events found");
            }
            print!("{text}");
            Ok(())
        }
        Command::Wait {
            kind,
            name,
            namespace,
            for_,
            timeout,
            progress,
        } => Ok(waiting::wait(
            &platform,
            driver,
            (&kind, &name, namespace.as_deref()),
            &for_,
            Duration::from_secs(timeout),
            &progress,
        )
        .await?),
        Command::Reconcile {
            kind,
            name,
            namespace,
            wait: w,
        } => Ok(
            waiting::reconcile(&platform, driver, (&kind, &name, namespace.as_deref()), &w).await?,
        ),
        Command::Logs {
            kind,
            name,
            namespace,
            pipeline,
        } => {
            let text = logs::run(
                &platform,
                &kind,
                &name,
                namespace.as_deref(),
                pipeline.as_deref(),
            )
            .await?;
            print!("{text}");
            Ok(())
        }
        Command::Label(args) => change_metadata(&platform, Which::Labels, args).await,
        Command::Annotate(args) => change_metadata(&platform, Which::Annotations, args).await,
        Command::Serve {
            max_parallel,
            intervals,
            resource_binding_version,
            metrics_addr,
            api_addr,
            log_format: _,
        } => {
            let lock = HomeLock::try_acquire(&platform.home)
                .map_err(|e| Error::Controllers(controllers::Error::Store(e)))?
                .ok_or_else(|| Error::AlreadyServing {
                    home: platform.home.display().to_string(),
                })?;
            let (mut runtime, api) = super::driver::with_platform_api(
                controllers::Runtime::new(platform.clone()),
                &platform,
            );
            if let Some(addr) = api_addr {
                let api = api.as_ref().ok_or(Error::NoApi)?;
                let at = api.expose(addr)?;
                eprintln!(
                    "platform API on https://{at}: kubectl --kubeconfig {}",
                    platform.home.join(crate::apiserver::KUBECONFIG).display()
                );
            }
            if let Some(n) = max_parallel {
                runtime = runtime.with_max_parallel(usize::from(n));
            }
            runtime = runtime.with_settings(|s| intervals.apply(s));
            if let Some(strategy) = resource_binding_version {
                runtime = runtime.with_binding_strategy(strategy);
            }
            let _endpoint = match &metrics_addr {
                Some(addr) => Some(serve_metrics(addr, runtime.metrics().clone()).await?),
                None => None,
            };
            eprintln!("serving {}", platform.home.display());
            runtime
                .run(lock, async {
                    super::signal::shutdown().await;
                    eprintln!("stopping");
                })
                .await;
            Ok(())
        }
        Command::Controller(_)
        | Command::Crds
        | Command::PipelineAdapter { .. }
        | Command::Completion { .. } => Ok(()),
    }
}

/// Serves `/metrics` and `/healthz` on `addr` until the handle is dropped.
async fn serve_metrics(
    addr: &str,
    metrics: std::sync::Arc<crate::metrics::Metrics>,
) -> Result<super::controller::AbortOnDrop, Error> {
    let listener = crate::metrics::bind(addr).await?;
    let answer: crate::metrics::Answer = std::sync::Arc::new(move |path: &str| match path {
        "/metrics" => crate::metrics::scrape(&metrics),
        "/healthz" => (hyper::StatusCode::OK, "ok\n".into()),
        _ => (hyper::StatusCode::NOT_FOUND, "not found\n".into()),
    });
    eprintln!(
        "metrics on http://{}/metrics",
        listener
            .local_addr()
            .map_or_else(|_| addr.to_string(), |a| a.to_string())
    );
    Ok(super::controller::AbortOnDrop(tokio::spawn(
        crate::metrics::serve(listener, answer),
    )))
}

async fn snapshot(cp: &dyn ControlPlane, prepared: &[apply::Prepared]) -> Vec<Option<String>> {
    let mut out = Vec::with_capacity(prepared.len());
    for p in prepared {
        let key = p.key();
        let rv = cp
            .get(&p.kind, key.namespace.as_deref(), &key.name)
            .await
            .ok()
            .flatten()
            .and_then(|o| o.metadata.resource_version);
        out.push(rv);
    }
    out
}

/// `label` and `annotate`: checks every argument before reading the object, then changes
/// only its metadata.
async fn change_metadata(
    platform: &Platform,
    which: Which,
    args: MetadataArgs,
) -> Result<(), Error> {
    let changes = metadata::parse(which, &args.changes)?;
    let kind = platform.resolve_kind(&args.kind).await?;
    let key = key_for(&kind, &args.name, args.namespace.as_deref());
    let outcome = metadata::apply(
        platform.control_plane().as_ref(),
        &kind,
        &key,
        which,
        &changes,
        args.overwrite,
    )
    .await?;
    println!(
        "{}/{} {}",
        kind.kind.to_ascii_lowercase(),
        key.name,
        metadata::verb(which, outcome)
    );
    Ok(())
}

/// After a successful apply, says where local Git state stores are and how to look at them.
fn print_state_store_hints(platform: &Platform, prepared: &[apply::Prepared]) {
    for p in prepared.iter().filter(|p| p.kind.kind == "GitStateStore") {
        let Some(url) = p
            .object
            .data
            .pointer("/spec/url")
            .and_then(serde_json::Value::as_str)
        else {
            continue;
        };
        if let Some(path) = controllers::state_store::local_repository_path(&platform.home, url) {
            println!(
                "Git state store {:?} is at {}\n  look at it with: git --git-dir {} log --stat",
                p.key().name,
                path.display(),
                path.display()
            );
        }
    }
}
