//! `get`: one object or a list, as a table, YAML or JSON.

use crate::api::printer_columns::PrinterColumn;
use crate::api::{KindInfo, Object};
use crate::platform::Platform;
use crate::store::Selector;

use super::output;
use super::OutputFormat;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Platform(#[from] crate::platform::Error),
    #[error(transparent)]
    Selector(#[from] crate::store::selector::Error),
    #[error("reading {kind}")]
    Store {
        kind: String,
        #[source]
        source: crate::store::Error,
    },
    /// `get KIND NAME` of an object that does not exist.
    #[error("{kind} {name:?} not found{namespace}")]
    NotFound {
        kind: String,
        name: String,
        namespace: String,
    },
    #[error("printing")]
    Print(#[source] serde_json::Error),
    #[error("printing")]
    PrintYaml(#[source] serde_yaml::Error),
    /// The change feed failed while watching.
    #[error("watching {kind}")]
    Watch {
        kind: String,
        #[source]
        source: crate::store::Error,
    },
    #[error("writing to standard output")]
    Stdout(#[source] std::io::Error),
}

pub(crate) struct GetArgs<'a> {
    pub kind: &'a str,
    pub name: Option<&'a str>,
    pub namespace: Option<&'a str>,
    pub all_namespaces: bool,
    pub selector: Option<&'a str>,
    pub output: OutputFormat,
    pub show_labels: bool,
}

pub(crate) async fn run(platform: &Platform, args: GetArgs<'_>) -> Result<String, Error> {
    let (kind, namespace, selector) = query(platform, &args).await?;
    let cp = platform.store.as_ref();
    let store_err = |source| Error::Store {
        kind: kind.kind.clone(),
        source,
    };
    if let Some(name) = args.name {
        let obj = cp
            .get(&kind, namespace.as_deref(), name)
            .await
            .map_err(store_err)?
            .ok_or_else(|| Error::NotFound {
                kind: kind.kind.clone(),
                name: name.to_string(),
                namespace: namespace
                    .as_deref()
                    .map(|ns| format!(" in namespace {ns:?}"))
                    .unwrap_or_default(),
            })?;
        let declared = columns_for(platform, &kind, &args).await?;
        return print(&kind, &declared, std::slice::from_ref(&obj), &args, false);
    }
    let objs = cp
        .list(&kind, namespace.as_deref(), &selector)
        .await
        .map_err(store_err)?;
    let declared = columns_for(platform, &kind, &args).await?;
    print(&kind, &declared, &objs, &args, true)
}

/// The printer columns `kind`'s Promise declares, when `get` prints a table.
async fn columns_for(
    platform: &Platform,
    kind: &KindInfo,
    args: &GetArgs<'_>,
) -> Result<Vec<PrinterColumn>, Error> {
    if !matches!(args.output, OutputFormat::Table | OutputFormat::Wide) {
        return Ok(Vec::new());
    }
    crate::platform::declared_columns(platform.store.as_ref(), kind)
        .await
        .map_err(|source| Error::Store {
            kind: kind.kind.clone(),
            source,
        })
}

/// Prints `objs` in the requested format; `list` prints JSON and YAML as a `List`.
fn print(
    kind: &KindInfo,
    declared: &[PrinterColumn],
    objs: &[Object],
    args: &GetArgs<'_>,
    list: bool,
) -> Result<String, Error> {
    let value = |objs: &[Object]| match objs {
        [one] if !list => output::redact(kind, one),
        _ => output::list_json(kind, objs),
    };
    match args.output {
        OutputFormat::Json => serde_json::to_string_pretty(&value(objs))
            .map(|s| s + "\n")
            .map_err(Error::Print),
        OutputFormat::Yaml => serde_yaml::to_string(&value(objs)).map_err(Error::PrintYaml),
        OutputFormat::Name => Ok(output::names(kind, objs)),
        OutputFormat::Table | OutputFormat::Wide => {
            if objs.is_empty() {
                return Ok(String::new());
            }
            Ok(output::table(
                kind,
                declared,
                objs,
                output::TableOptions {
                    all_namespaces: list && args.all_namespaces,
                    wide: args.output == OutputFormat::Wide,
                    show_labels: args.show_labels,
                },
            ))
        }
    }
}

/// `get -w`: prints what `get` prints, then a line (a row, or a JSON object, a YAML document,
/// a name) for every change of a matching object — a deleted object's last state included —
/// until interrupted or `timeout` passes.
pub(crate) async fn watch(
    platform: &Platform,
    args: GetArgs<'_>,
    timeout: Option<std::time::Duration>,
) -> Result<(), Error> {
    use futures::StreamExt;
    let (kind, namespace, selector) = query(platform, &args).await?;
    let cp = platform.store.as_ref();
    let store_err = |source| Error::Store {
        kind: kind.kind.clone(),
        source,
    };
    // From before the first listing, so that no change between the two is missed.
    let since = cp.current_resource_version().await.map_err(store_err)?;
    let mut objs = cp
        .list(&kind, namespace.as_deref(), &selector)
        .await
        .map_err(store_err)?;
    objs.retain(|o| {
        args.name
            .is_none_or(|n| o.metadata.name.as_deref() == Some(n))
    });
    let declared = columns_for(platform, &kind, &args).await?;
    let first = print(&kind, &declared, &objs, &args, args.name.is_none())?;
    // A table's header comes with the first row, whenever that is.
    let mut headed = !first.is_empty();
    write(&first)?;
    let mut last: std::collections::BTreeMap<crate::api::ObjectKey, Object> = objs
        .into_iter()
        .map(|o| (crate::api::ObjectKey::of(&o), o))
        .collect();
    let mut printed: std::collections::BTreeMap<crate::api::ObjectKey, String> =
        std::collections::BTreeMap::new();
    for (key, obj) in &last {
        printed.insert(
            key.clone(),
            watch_line(&kind, &declared, obj, &args, false)?,
        );
    }
    let mut changes = cp.watch(std::slice::from_ref(&kind), &since);
    let stop = async {
        match timeout {
            Some(t) => {
                tokio::select! {
                    () = tokio::time::sleep(t) => {}
                    () = super::signal::shutdown() => {}
                }
            }
            None => super::signal::shutdown().await,
        }
    };
    tokio::pin!(stop);
    loop {
        let change = tokio::select! {
            () = &mut stop => return Ok(()),
            change = changes.next() => change,
        };
        let Some(change) = change else {
            return Ok(());
        };
        let change = change.map_err(|source| Error::Watch {
            kind: kind.kind.clone(),
            source,
        })?;
        let key = change.key;
        let wanted = namespace
            .as_deref()
            .is_none_or(|ns| key.namespace.as_deref() == Some(ns))
            && args.name.is_none_or(|n| key.name == n);
        if !wanted {
            continue;
        }
        let stored = cp
            .get(&kind, key.namespace.as_deref(), &key.name)
            .await
            .map_err(store_err)?;
        let gone = stored.is_none();
        let obj = match stored {
            Some(obj) => {
                last.insert(key.clone(), obj.clone());
                obj
            }
            // Deleted: its last state, as kubectl shows it.
            None => match last.remove(&key) {
                Some(obj) => obj,
                None => continue,
            },
        };
        let labels = obj.metadata.labels.clone().unwrap_or_default();
        if !selector.matches(&labels) {
            continue;
        }
        // A change that shows nothing new (a status field no column shows) prints nothing.
        let line = watch_line(&kind, &declared, &obj, &args, !headed)?;
        if !gone && printed.get(&key) == Some(&line) {
            continue;
        }
        write(&line)?;
        if gone {
            printed.remove(&key);
        } else {
            printed.insert(key, line);
        }
        headed = true;
    }
}

/// One changed object as `get -w` prints it.
fn watch_line(
    kind: &KindInfo,
    declared: &[PrinterColumn],
    obj: &Object,
    args: &GetArgs<'_>,
    header: bool,
) -> Result<String, Error> {
    Ok(match args.output {
        OutputFormat::Json => {
            serde_json::to_string(&output::redact(kind, obj)).map_err(Error::Print)? + "\n"
        }
        OutputFormat::Yaml => {
            "---\n".to_string()
                + &serde_yaml::to_string(&output::redact(kind, obj)).map_err(Error::PrintYaml)?
        }
        _ => {
            let table = print(kind, declared, std::slice::from_ref(obj), args, true)?;
            match args.output {
                _ if header => table,
                OutputFormat::Name => table,
                // The row without its header.
                _ => table.lines().skip(1).map(|l| format!("{l}\n")).collect(),
            }
        }
    })
}

fn write(text: &str) -> Result<(), Error> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(Error::Stdout)
}

/// What `get` reads, from its arguments: the kind, the namespace (none: all), the selector.
async fn query(
    platform: &Platform,
    args: &GetArgs<'_>,
) -> Result<(KindInfo, Option<String>, Selector), Error> {
    let kind = platform.resolve_kind(args.kind).await?;
    let namespace = namespace_for(&kind, args.namespace, args.all_namespaces);
    let selector = match args.selector {
        Some(s) => Selector::parse(s)?,
        None => Selector::everything(),
    };
    Ok((kind, namespace, selector))
}

/// Namespaced kinds default to `default`; `-A` lists every namespace.
pub(crate) fn namespace_for(kind: &KindInfo, given: Option<&str>, all: bool) -> Option<String> {
    if !kind.namespaced || all {
        return None;
    }
    Some(given.unwrap_or("default").to_string())
}
