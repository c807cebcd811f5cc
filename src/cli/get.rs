//! `get`: one object or a list, as a table, YAML or JSON.

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
}

pub struct GetArgs<'a> {
    pub kind: &'a str,
    pub name: Option<&'a str>,
    pub namespace: Option<&'a str>,
    pub all_namespaces: bool,
    pub selector: Option<&'a str>,
    pub output: OutputFormat,
    pub show_labels: bool,
}

pub async fn run(platform: &Platform, args: GetArgs<'_>) -> Result<String, Error> {
    let kind = platform.resolve_kind(args.kind).await?;
    let namespace = namespace_for(&kind, args.namespace, args.all_namespaces);
    let selector = match args.selector {
        Some(s) => Selector::parse(s)?,
        None => Selector::everything(),
    };
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
        return print(&kind, std::slice::from_ref(&obj), &args, false);
    }
    let objs = cp
        .list(&kind, namespace.as_deref(), &selector)
        .await
        .map_err(store_err)?;
    print(&kind, &objs, &args, true)
}

/// Prints `objs` in the requested format; `list` prints JSON and YAML as a `List`.
fn print(
    kind: &KindInfo,
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

/// Namespaced kinds default to `default`; `-A` lists every namespace.
pub fn namespace_for(kind: &KindInfo, given: Option<&str>, all: bool) -> Option<String> {
    if !kind.namespaced || all {
        return None;
    }
    Some(given.unwrap_or("default").to_string())
}
