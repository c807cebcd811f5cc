//! Carries out one parsed command.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use crate::api::{labels, KindInfo, ObjectKey};
use crate::controllers;
use crate::platform::Platform;
use crate::store::embedded::HomeLock;
use crate::store::{self, ControlPlane};

use super::driver::Driver;
use super::metadata::{self, Which};
use super::progress::printer::{object_event, Mode, Progress};
use super::{
    apply, describe, documents, events, get, logs, wait, Cli, Command, MetadataArgs, ProgressArgs,
    ProgressOutput,
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
    Wait(#[from] wait::Error),
    #[error(transparent)]
    Controllers(#[from] controllers::Error),
    #[error(transparent)]
    Metadata(#[from] metadata::Error),
    #[error(transparent)]
    Adapter(#[from] crate::jobs::adapter::Error),
    /// A command's arguments don't fit together.
    #[error("{0}")]
    Usage(String),
    /// The object named on the command line does not exist.
    #[error("{key} not found")]
    NotFound { key: ObjectKey },
    #[error("updating {key}")]
    Store {
        key: ObjectKey,
        #[source]
        source: store::Error,
    },
    /// Another process already runs the controllers of this home.
    #[error("another kratix-rs process is already serving {home}")]
    AlreadyServing { home: String },
    #[error(transparent)]
    Controller(#[from] super::controller::Error),
    #[error("writing to standard output")]
    Stdout(#[source] std::io::Error),
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
            let known = apply::Known::load(&platform).await?;
            let prepared = apply::prepare(&docs, &known)?;
            for p in &prepared {
                for field in &p.pruned {
                    eprintln!("warning: {}: unknown field {field} dropped", p.document);
                }
            }
            for (document, warning) in apply::requirement_warnings(&prepared, &known.promises) {
                eprintln!("warning: {document}: {warning}");
            }
            let cp = platform.control_plane();
            let progress = progress_for(&platform, &w.progress);
            let before = snapshot(cp.as_ref(), &prepared).await;
            let stored = apply::store_all(cp.as_ref(), &prepared).await?;
            for ((p, obj), old_rv) in prepared.iter().zip(&stored).zip(before) {
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
                    print_state_store_hints(&platform, &prepared).await;
                }
            }
            Ok(())
        }
        Command::Delete {
            files,
            target,
            namespace,
            wait: w,
        } => {
            let targets = delete_targets(&platform, &files, &target, namespace.as_deref()).await?;
            let cp = platform.control_plane();
            let progress = progress_for(&platform, &w.progress);
            for (kind, key) in &targets {
                match cp.delete(kind, key.namespace.as_deref(), &key.name).await {
                    Ok(_) => progress.say(
                        &format!("{}/{} deleted", kind.kind.to_ascii_lowercase(), key.name),
                        object_event(key, kind, json!({"event": "DeleteRequested"})),
                    ),
                    Err(store::Error::NotFound { .. }) => {
                        return Err(Error::NotFound { key: key.clone() })
                    }
                    Err(source) => {
                        return Err(Error::Store {
                            key: key.clone(),
                            source,
                        })
                    }
                }
            }
            if !w.no_wait {
                with_progress(driver, &progress, &targets, || {
                    wait_gone(driver, &platform, &targets, w.timeout())
                })
                .await?;
            }
            Ok(())
        }
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
        } => {
            let kind = platform.resolve_kind(&kind).await?;
            let key = key_for(&kind, &name, namespace.as_deref());
            let timeout = Duration::from_secs(timeout);
            let progress = progress_for(&platform, &progress);
            let targets = [(kind.clone(), key.clone())];
            if for_ == "delete" {
                return with_progress(driver, &progress, &targets, || {
                    wait_gone(driver, &platform, &targets, timeout)
                })
                .await;
            }
            let spec = for_.strip_prefix("condition=").ok_or_else(|| {
                Error::Usage(format!(
                    "--for {for_:?}: expected condition=TYPE[=STATUS] or delete"
                ))
            })?;
            let (type_, status) = spec.split_once('=').unwrap_or((spec, "True"));
            let cp = platform.control_plane();
            let what = format!("{key} to have condition {type_}={status}");
            with_progress(driver, &progress, &targets, || async {
                wait::drive_until(driver, timeout, &what, || {
                    let (cp, kind, key) = (cp.clone(), kind.clone(), key.clone());
                    async move {
                        let obj = wait::get(cp.as_ref(), &kind, &key).await?;
                        Ok(obj
                            .filter(|o| wait::condition_met(o, type_, status))
                            .map(|_| ()))
                    }
                })
                .await
                .map_err(Error::from)
            })
            .await?;
            progress.say(
                &format!(
                    "{} {} condition met",
                    kind.kind.to_ascii_lowercase(),
                    key.name
                ),
                object_event(
                    &key,
                    &kind,
                    json!({"event": "ConditionMet", "condition": type_, "status": status}),
                ),
            );
            Ok(())
        }
        Command::Reconcile {
            kind,
            name,
            namespace,
            wait: w,
        } => {
            let kind = platform.resolve_kind(&kind).await?;
            let key = key_for(&kind, &name, namespace.as_deref());
            request_manual_reconciliation(platform.control_plane().as_ref(), &kind, &key).await?;
            let progress = progress_for(&platform, &w.progress);
            progress.say(
                &format!(
                    "{} {} reconciliation requested",
                    kind.kind.to_ascii_lowercase(),
                    key.name
                ),
                object_event(&key, &kind, json!({"event": "ReconciliationRequested"})),
            );
            if w.no_wait {
                return Ok(());
            }
            // The controller removes the label when it starts the re-run; only then do the
            // conditions describe the re-run rather than the previous one.
            let cp = platform.control_plane();
            wait::drive_until(driver, w.timeout(), "the re-run to start", || {
                let (cp, kind, key) = (cp.clone(), kind.clone(), key.clone());
                async move {
                    let obj = wait::get(cp.as_ref(), &kind, &key).await?;
                    Ok(match obj {
                        None => Some(()),
                        Some(o) => crate::api::object::label(&o, labels::MANUAL_RECONCILIATION)
                            .is_none()
                            .then_some(()),
                    })
                }
            })
            .await?;
            // Progress from here: before, the conditions describe the previous run.
            let targets = [(kind.clone(), key.clone())];
            with_progress(driver, &progress, &targets, || {
                wait::settle(driver, &platform, &targets, w.timeout())
            })
            .await?;
            progress.say(
                "reconciled",
                object_event(&key, &kind, json!({"event": "Reconciled"})),
            );
            Ok(())
        }
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
        Command::Serve { max_parallel } => {
            let lock = HomeLock::try_acquire(&platform.home)
                .map_err(|e| Error::Controllers(controllers::Error::Store(e)))?
                .ok_or_else(|| Error::AlreadyServing {
                    home: platform.home.display().to_string(),
                })?;
            eprintln!("serving {}", platform.home.display());
            let mut runtime = controllers::Runtime::new(platform.clone());
            if let Some(n) = max_parallel {
                runtime = runtime.with_max_parallel(usize::from(n));
            }
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

/// The progress a waiting command shows, as its flags and standard error ask.
fn progress_for(platform: &Platform, args: &ProgressArgs) -> Arc<Progress> {
    let mode = Mode::choose(
        args.quiet,
        args.output == Some(ProgressOutput::Json),
        std::io::IsTerminal::is_terminal(&std::io::stderr()),
    );
    Arc::new(Progress::new(platform.control_plane(), mode))
}

/// Runs `wait` with `progress` following `targets`, and shows how they ended, failed or not.
async fn with_progress<F, Fut, E>(
    driver: &Driver,
    progress: &Arc<Progress>,
    targets: &[(KindInfo, ObjectKey)],
    wait: F,
) -> Result<(), Error>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Result<(), E>>,
    Error: From<E>,
{
    progress.follow(targets);
    driver.show_progress(progress.clone());
    let result = wait().await;
    progress.finish().await;
    Ok(result?)
}

fn key_for(kind: &KindInfo, name: &str, namespace: Option<&str>) -> ObjectKey {
    let ns = kind
        .namespaced
        .then(|| namespace.unwrap_or("default").to_string());
    ObjectKey::new(&kind.group, &kind.kind, ns.as_deref(), name)
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

async fn delete_targets(
    platform: &Platform,
    files: &[std::path::PathBuf],
    target: &[String],
    namespace: Option<&str>,
) -> Result<Vec<(KindInfo, ObjectKey)>, Error> {
    match (files.is_empty(), target) {
        (false, []) => {
            let docs = documents::load(files)?;
            let kinds = platform.kinds().await?;
            let mut out = Vec::new();
            for doc in &docs {
                let kind = kinds
                    .iter()
                    .find(|k| k.kind == doc.kind() && k.api_version() == doc.api_version())
                    .cloned()
                    .ok_or_else(|| {
                        Error::Usage(format!("{doc}: kind {:?} is not known", doc.kind()))
                    })?;
                let ns = doc
                    .value
                    .pointer("/metadata/namespace")
                    .and_then(serde_json::Value::as_str)
                    .or(namespace);
                out.push((kind.clone(), key_for(&kind, doc.name(), ns)));
            }
            // Requests before Promises, so each request's delete workflow runs with its Promise.
            out.reverse();
            Ok(out)
        }
        (true, [kind, name]) => {
            let kind = platform.resolve_kind(kind).await?;
            let key = key_for(&kind, name, namespace);
            Ok(vec![(kind, key)])
        }
        _ => Err(Error::Usage(
            "delete needs either -f PATH or KIND NAME".into(),
        )),
    }
}

async fn wait_gone(
    driver: &Driver,
    platform: &Platform,
    targets: &[(KindInfo, ObjectKey)],
    timeout: Duration,
) -> Result<(), Error> {
    let cp = platform.control_plane();
    wait::drive_until(driver, timeout, "deletion", || {
        let cp = cp.clone();
        async move {
            for (kind, key) in targets {
                if wait::get(cp.as_ref(), kind, key).await?.is_some() {
                    return Ok(None);
                }
            }
            Ok(Some(()))
        }
    })
    .await?;
    Ok(())
}

async fn request_manual_reconciliation(
    cp: &dyn ControlPlane,
    kind: &KindInfo,
    key: &ObjectKey,
) -> Result<(), Error> {
    metadata::update_with_retries(cp, kind, key, |obj| {
        obj.metadata
            .labels
            .get_or_insert_with(Default::default)
            .insert(labels::MANUAL_RECONCILIATION.into(), "true".into());
        Ok(metadata::Outcome::Changed)
    })
    .await?;
    Ok(())
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
async fn print_state_store_hints(platform: &Platform, prepared: &[apply::Prepared]) {
    for p in prepared.iter().filter(|p| p.kind.kind == "GitStateStore") {
        let Some(url) = p
            .object
            .data
            .pointer("/spec/url")
            .and_then(serde_json::Value::as_str)
        else {
            continue;
        };
        if let Some(path) = controllers::state_stores::local_repository_path(&platform.home, url) {
            println!(
                "Git state store {:?} is at {}\n  look at it with: git --git-dir {} log --stat",
                p.key().name,
                path.display(),
                path.display()
            );
        }
    }
}
