//! Where a placement's files go in a state store, byte-for-byte as Kratix lays them out:
//! <https://github.com/syntasso/kratix/blob/ae170e22e974e45bb7cfda00986057e01b3ccfde/internal/controller/workplacement_controller.go#L369-L683>
//! (from `generateKratixStateFile` to `getDir`) and the canary files of
//! <https://github.com/syntasso/kratix/blob/ae170e22e974e45bb7cfda00986057e01b3ccfde/internal/controller/destination_controller.go#L353-L392>
//! (`getCanaryWorkloads`).
//!
//! Every path returned here is a full key from the state store's root: the store's `spec.path`,
//! then the Destination's `spec.path`, then Kratix's layout. Paths are joined the way Go's
//! `filepath.Join` joins them (empty segments dropped, `.` and `..` resolved lexically, so a
//! Destination path of `.` or `/` is the root), and a leading `/` is trimmed as Kratix's Git
//! writer trims it. NB: Kratix's bucket writer keeps that leading `/`; we don't, so both store
//! kinds get the same keys. A path that still climbs out of the root (a leading `..`) is left for
//! the store to refuse, which it does when parsing the key.

use serde::Serialize;

use crate::api::destination::FilepathMode;
use crate::api::work::short_group_id;
use crate::api::work::Workload;

/// Errors turning a placement's stored workloads back into files.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    /// A workload's `content` is not base64 of gzip.
    #[error("workload {filepath:?}")]
    Content {
        filepath: String,
        #[source]
        source: crate::api::work::ContentError,
    },
    /// The state file of mode `none` could not be serialised.
    #[error("cannot serialise the state file {path:?}")]
    SerializeStateFile {
        path: String,
        #[source]
        source: serde_yaml::Error,
    },
}

/// A file: its path and its bytes.
pub(crate) type FileBytes = (String, Vec<u8>);
/// A placement's name and its decoded workloads.
pub(crate) type NamedWorkloads = (String, Vec<FileBytes>);

/// The files of one placement, decoded: (filepath relative to the pipeline output, bytes), in
/// the Work's order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PlacementFiles {
    pub(crate) workloads: Vec<FileBytes>,
}

impl PlacementFiles {
    /// Decodes workloads as Works store them: base64 (standard alphabet) of gzip of the bytes.
    pub(crate) fn decode(workloads: &[Workload]) -> Result<Self, Error> {
        let workloads = workloads
            .iter()
            .map(|workload| Ok((workload.filepath.clone(), decode_content(workload)?)))
            .collect::<Result<_, Error>>()?;
        Ok(Self { workloads })
    }
}

fn decode_content(workload: &Workload) -> Result<Vec<u8>, Error> {
    crate::api::work::decode_content(&workload.content).map_err(|source| Error::Content {
        filepath: workload.filepath.clone(),
        source,
    })
}

/// Everything that decides where one placement's files go.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PlacementContext {
    /// The state store's `spec.path`.
    pub(crate) store_path: Option<String>,
    /// The Destination's `spec.path`.
    pub(crate) destination_path: String,
    pub(crate) mode: FilepathMode,
    /// The Destination's `filepath.filename` (mode `aggregatedYAML`).
    pub(crate) aggregated_filename: Option<String>,
    /// The Work's namespace, which is the placement's (normally the request's namespace,
    /// `kratix-platform-system` for promise workflows).
    pub(crate) namespace: String,
    pub(crate) promise: String,
    /// The request's name; `None` (or empty) for dependency Works.
    pub(crate) resource: Option<String>,
    /// The pipeline's name; `None` for a Promise's static dependencies.
    pub(crate) pipeline: Option<String>,
    /// The workload group id (md5 hex of its directory).
    pub(crate) group_id: String,
}

impl PlacementContext {
    fn resource_name(&self) -> Option<&str> {
        self.resource.as_deref().filter(|name| !name.is_empty())
    }
}

/// Default file of mode `aggregatedYAML` when the Destination names none.
pub(crate) const DEFAULT_AGGREGATED_FILENAME: &str = "aggregated.yaml";
/// Where mode `none` keeps each placement's list of files, under the Destination's path.
pub(crate) const STATE_DIR: &str = ".kratix";
/// The canary Namespace, as Kratix writes it (sigs.k8s.io/yaml output).
pub(crate) const CANARY_NAMESPACE_YAML: &str =
    "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: kratix-worker-system\nspec: {}\nstatus: {}\n";
/// The canary ConfigMap, as Kratix writes it (sigs.k8s.io/yaml output).
pub(crate) const CANARY_CONFIGMAP_YAML: &str = "apiVersion: v1\ndata:\n  canary: this confirms your infrastructure is reading from Kratix state stores\nkind: ConfigMap\nmetadata:\n  name: kratix-info\n  namespace: kratix-worker-system\n";
const CANARY_NAMESPACE_FILE: &str = "kratix-canary-namespace.yaml";
const CANARY_CONFIGMAP_FILE: &str = "kratix-canary-configmap.yaml";

/// The directory a placement owns in mode `nestedByMetadata`:
/// `D/dependencies/<promise>/<pipeline>/<id5>` for dependency Works (the pipeline segment is
/// dropped for static dependencies), `D/resources/<ns>/<promise>/<request>/<pipeline>/<id5>` for
/// requests. `None` in the flat modes, where a placement has no directory of its own.
pub(crate) fn placement_dir(ctx: &PlacementContext) -> Option<String> {
    if ctx.mode != FilepathMode::NestedByMetadata {
        return None;
    }
    let pipeline = ctx.pipeline.as_deref().unwrap_or("");
    let id5 = short_group_id(&ctx.group_id);
    let relative = match ctx.resource_name() {
        None => go_join(&[
            &ctx.destination_path,
            "dependencies",
            &ctx.promise,
            pipeline,
            id5,
        ]),
        Some(resource) => go_join(&[
            &ctx.destination_path,
            "resources",
            &ctx.namespace,
            &ctx.promise,
            resource,
            pipeline,
            id5,
        ]),
    };
    Some(store_key(ctx.store_path.as_deref(), &relative))
}

/// The store keys of a placement's workloads, with their bytes, in the Work's order.
///
/// Mode `nestedByMetadata`: under [`placement_dir`]. Mode `none`: flat under the Destination's
/// path (add [`none_mode_state_file`] to what is written). Mode `aggregatedYAML`: nothing,
/// because a placement has no file of its own there: the Destination's single file, at
/// [`aggregated_file_path`], holds [`aggregated_yaml`] of all its placements.
pub(crate) fn file_paths(ctx: &PlacementContext, workloads: &PlacementFiles) -> Vec<FileBytes> {
    let base = match ctx.mode {
        FilepathMode::AggregatedYaml => return Vec::new(),
        FilepathMode::NestedByMetadata => placement_dir(ctx).unwrap_or_default(),
        FilepathMode::None => store_key(ctx.store_path.as_deref(), &ctx.destination_path),
    };
    workloads
        .workloads
        .iter()
        .map(|(filepath, bytes)| (store_key(None, &go_join(&[&base, filepath])), bytes.clone()))
        .collect()
}

/// The one file of a Destination in mode `aggregatedYAML`: `D/<filename>`, `aggregated.yaml`
/// unless the Destination names another.
pub(crate) fn aggregated_file_path(
    store_path: Option<&str>,
    destination_path: &str,
    filename: Option<&str>,
) -> String {
    let filename = filename
        .filter(|name| !name.is_empty())
        .unwrap_or(DEFAULT_AGGREGATED_FILENAME);
    store_key(store_path, &go_join(&[destination_path, filename]))
}

/// The canary files written when a Destination registers: the `kratix-worker-system`
/// Namespace and the `kratix-info` ConfigMap. Nested mode puts them in `D/dependencies/` and
/// `D/resources/` (so the GitOps agent reading `resources` after `dependencies` finds the
/// namespace first); the flat modes put both directly in `D/`.
pub(crate) fn canary_files(
    destination_path: &str,
    store_path: Option<&str>,
    mode: FilepathMode,
) -> Vec<FileBytes> {
    let (dependencies, resources) = match mode {
        FilepathMode::NestedByMetadata => ("dependencies", "resources"),
        FilepathMode::None | FilepathMode::AggregatedYaml => ("", ""),
    };
    vec![
        (
            store_key(
                store_path,
                &go_join(&[destination_path, dependencies, CANARY_NAMESPACE_FILE]),
            ),
            CANARY_NAMESPACE_YAML.as_bytes().to_vec(),
        ),
        (
            store_key(
                store_path,
                &go_join(&[destination_path, resources, CANARY_CONFIGMAP_FILE]),
            ),
            CANARY_CONFIGMAP_YAML.as_bytes().to_vec(),
        ),
    ]
}

#[derive(Serialize)]
struct StateFile<'a> {
    files: Vec<&'a str>,
}

/// Mode `none`'s record of what a placement wrote: key `D/.kratix/<ns>-<placement>.yaml`,
/// content `files:` followed by `D/<filepath>` for each of `filepaths` (paths relative to the
/// store's root without its `spec.path`, exactly as Kratix lists them, so Kratix can take over
/// a store we wrote). We never read it back: deletions come from our own ownership records.
pub(crate) fn none_mode_state_file(
    ctx: &PlacementContext,
    placement_namespace: &str,
    placement_name: &str,
    filepaths: &[String],
) -> Result<FileBytes, Error> {
    let prefix = format!("{}/", ctx.destination_path);
    let listed: Vec<String> = filepaths
        .iter()
        .map(|filepath| go_join(&[&prefix, filepath]))
        .collect();
    let relative = go_join(&[
        &ctx.destination_path,
        STATE_DIR,
        &format!("{placement_namespace}-{placement_name}.yaml"),
    ]);
    let path = store_key(ctx.store_path.as_deref(), &relative);
    let content = serde_yaml::to_string(&StateFile {
        files: listed.iter().map(String::as_str).collect(),
    })
    .map_err(|source| Error::SerializeStateFile {
        path: path.clone(),
        source,
    })?;
    Ok((path, content.into_bytes()))
}

/// The content of a Destination's aggregated file: the workloads of every placement, placements
/// sorted by name and workloads in their order, joined with `\n---\n` (no trailing newline added).
pub(crate) fn aggregated_yaml(placements: &[NamedWorkloads]) -> Vec<u8> {
    let mut sorted: Vec<&NamedWorkloads> = placements.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out = Vec::new();
    for (i, (_, bytes)) in sorted
        .iter()
        .flat_map(|(_, workloads)| workloads.iter())
        .enumerate()
    {
        if i > 0 {
            out.extend_from_slice(b"\n---\n");
        }
        out.extend_from_slice(bytes);
    }
    out
}

/// `relative` under the store's `spec.path`, as Kratix's Git writer roots it.
/// The key under which every file of a Destination lies: the store's `spec.path`, then the
/// Destination's (empty: the store's root).
pub(crate) fn destination_root(store_path: Option<&str>, destination_path: &str) -> String {
    store_key(store_path, &go_join(&[destination_path]))
}

fn store_key(store_path: Option<&str>, relative: &str) -> String {
    let joined = go_join(&[store_path.unwrap_or(""), relative]);
    let key = joined.trim_start_matches('/');
    if key == "." {
        String::new()
    } else {
        key.to_string()
    }
}

/// Go's `filepath.Join` on Unix: non-empty parts joined with `/`, then cleaned; "" when every
/// part is empty.
fn go_join(parts: &[&str]) -> String {
    let non_empty: Vec<&str> = parts.iter().copied().filter(|p| !p.is_empty()).collect();
    if non_empty.is_empty() {
        return String::new();
    }
    go_clean(&non_empty.join("/"))
}

/// Go's `path.Clean`: the shortest equivalent path, lexically.
fn go_clean(path: &str) -> String {
    if path.is_empty() {
        return ".".to_string();
    }
    let rooted = path.starts_with('/');
    let mut segments: Vec<&str> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => match segments.last() {
                Some(&last) if last != ".." => {
                    segments.pop();
                }
                // `/..` is `/`; a relative path keeps climbing.
                _ if rooted => {}
                _ => segments.push(".."),
            },
            other => segments.push(other),
        }
    }
    let body = segments.join("/");
    match (rooted, body.is_empty()) {
        (true, _) => format!("/{body}"),
        (false, true) => ".".to_string(),
        (false, false) => body,
    }
}

#[cfg(test)]
mod tests;
