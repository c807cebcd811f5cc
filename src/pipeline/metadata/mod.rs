//! The files a pipeline leaves in `/kratix/metadata`: `status.yaml`, `destination-selectors.yaml`
//! and `workflow-control.yaml`, read as Kratix reads them (see docs/architecture.md).

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use super::output::EntryKind;

pub(crate) const STATUS_FILE: &str = "status.yaml";
// NB: Kratix's contract.md says `destination_selectors.yaml`, but its work-creator reads the
// hyphenated name; pipelines in the wild use the hyphenated one.
pub(crate) const DESTINATION_SELECTORS_FILE: &str = "destination-selectors.yaml";
pub(crate) const WORKFLOW_CONTROL_FILE: &str = "workflow-control.yaml";

/// Largest metadata file read: far more than any status or selector list needs, and below the
/// 1.5 MiB Kubernetes allows a whole object, which `status.yaml` is merged into.
pub(crate) const MAX_FILE_BYTES: u64 = 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    /// A metadata file exists but cannot be read (or is not UTF-8).
    #[error("cannot read metadata/{file}")]
    Read {
        file: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// A link (which could point at any host file), fifo, device or folder.
    #[error("metadata/{file} is a {kind}, not a regular file")]
    NotRegular {
        file: &'static str,
        kind: &'static str,
    },
    /// The metadata folder itself was replaced by a link or something else than a folder.
    #[error("the metadata folder is a {kind}, not a folder")]
    FolderNotFolder { kind: &'static str },
    /// Larger than [`MAX_FILE_BYTES`].
    #[error("metadata/{file} is larger than {limit} bytes")]
    TooLarge { file: &'static str, limit: u64 },
    /// A metadata file is not valid YAML of the expected shape.
    #[error("metadata/{file} is not valid")]
    Parse {
        file: &'static str,
        #[source]
        source: serde_yaml::Error,
    },
    /// `status.yaml` is not a mapping.
    #[error("metadata/{STATUS_FILE} must be a mapping")]
    StatusNotMapping,
    /// `status.yaml` tries to set Kratix's own bookkeeping.
    #[error("metadata/{STATUS_FILE} must not set the reserved top-level key \"kratix\"")]
    StatusReservedKey,
    /// A destination selector without labels would match every destination by accident.
    #[error("metadata/{DESTINATION_SELECTORS_FILE}: entry {index} has no matchLabels")]
    SelectorWithoutLabels { index: usize },
    /// A directory that is not one path element below the output folder.
    #[error("metadata/{DESTINATION_SELECTORS_FILE}: entry {index}: directory {directory:?} must be a single folder name")]
    SelectorDirectory { index: usize, directory: String },
    /// Two entries for the same directory.
    #[error("metadata/{DESTINATION_SELECTORS_FILE}: entry {index}: directory {directory:?} is listed twice")]
    SelectorDuplicate { index: usize, directory: String },
    /// `retryAfter` is not a duration like `30s`, `5m` or `1h30m`.
    #[error("metadata/{WORKFLOW_CONTROL_FILE}: retryAfter {value:?} is not a duration like 30s, 5m or 1h30m")]
    RetryAfter { value: String },
}

impl Error {
    /// The metadata file the error is about, `None` for the folder itself.
    pub(crate) fn file(&self) -> Option<&'static str> {
        match self {
            Error::Read { file, .. }
            | Error::NotRegular { file, .. }
            | Error::TooLarge { file, .. }
            | Error::Parse { file, .. } => Some(file),
            Error::FolderNotFolder { .. } => None,
            Error::StatusNotMapping | Error::StatusReservedKey => Some(STATUS_FILE),
            Error::SelectorWithoutLabels { .. }
            | Error::SelectorDirectory { .. }
            | Error::SelectorDuplicate { .. } => Some(DESTINATION_SELECTORS_FILE),
            Error::RetryAfter { .. } => Some(WORKFLOW_CONTROL_FILE),
        }
    }
}

/// What a pipeline run wrote to its metadata folder.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Metadata {
    /// `status.yaml`, a mapping to merge into the object's status; `None` when absent or empty.
    pub status: Option<Value>,
    pub destination_selectors: Vec<DestinationSelectorEntry>,
    pub workflow_control: WorkflowControl,
}

/// One entry of `destination-selectors.yaml`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DestinationSelectorEntry {
    /// Never empty.
    pub match_labels: BTreeMap<String, String>,
    /// A single folder name below the output folder; `None` for the root (`.` or unset).
    pub directory: Option<String>,
}

/// `workflow-control.yaml`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkflowControl {
    pub suspend: bool,
    pub retry_after: Option<Duration>,
    pub message: Option<String>,
}

impl WorkflowControl {
    /// Whether the pipeline stops its workflow: `suspend: true`, or a `retryAfter`, which asks
    /// for the pipeline to run again later and so suspends the workflow until then, as in
    /// Kratix (`IfSuspendOrRetry`,
    /// <https://github.com/syntasso/kratix/blob/ae170e22e974e45bb7cfda00986057e01b3ccfde/work-creator/lib/workflow_control.go>).
    pub fn suspends(&self) -> bool {
        self.suspend || self.retry_after.is_some()
    }
}

/// Parses `status.yaml`: a mapping (or nothing), never setting `kratix`.
pub(crate) fn parse_status(text: &str) -> Result<Option<Value>, Error> {
    let value: Value = serde_yaml::from_str(text).map_err(|source| Error::Parse {
        file: STATUS_FILE,
        source,
    })?;
    match value {
        Value::Null => Ok(None),
        Value::Object(map) if map.contains_key("kratix") => Err(Error::StatusReservedKey),
        Value::Object(map) => Ok(Some(Value::Object(map))),
        _ => Err(Error::StatusNotMapping),
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawSelector {
    #[serde(default)]
    match_labels: BTreeMap<String, String>,
    #[serde(default)]
    directory: Option<String>,
}

/// Parses `destination-selectors.yaml`: labels required, directories cleaned (`./a/` is `a`,
/// `.` is the root), one path element each, each at most once.
pub(crate) fn parse_destination_selectors(
    text: &str,
) -> Result<Vec<DestinationSelectorEntry>, Error> {
    let raw: Option<Vec<RawSelector>> =
        serde_yaml::from_str(text).map_err(|source| Error::Parse {
            file: DESTINATION_SELECTORS_FILE,
            source,
        })?;
    let mut entries: Vec<DestinationSelectorEntry> = Vec::new();
    for (index, raw) in raw.unwrap_or_default().into_iter().enumerate() {
        if raw.match_labels.is_empty() {
            return Err(Error::SelectorWithoutLabels { index });
        }
        let directory = match raw.directory.as_deref() {
            None => None,
            Some(dir) => clean_directory(dir).map_err(|()| Error::SelectorDirectory {
                index,
                directory: dir.to_string(),
            })?,
        };
        if entries.iter().any(|e| e.directory == directory) {
            return Err(Error::SelectorDuplicate {
                index,
                directory: directory.unwrap_or_else(|| ".".into()),
            });
        }
        entries.push(DestinationSelectorEntry {
            match_labels: raw.match_labels,
            directory,
        });
    }
    Ok(entries)
}

/// `Ok(None)` for the root, `Ok(Some(name))` for one folder name, `Err` for anything deeper,
/// absolute or climbing, or with a control character (no output folder has one).
fn clean_directory(dir: &str) -> Result<Option<String>, ()> {
    if dir.chars().any(char::is_control) {
        return Err(());
    }
    let parts: Vec<&str> = dir
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    if dir.starts_with('/') {
        return Err(());
    }
    match parts.as_slice() {
        [] => Ok(None),
        [".."] => Err(()),
        [one] => Ok(Some((*one).to_string())),
        _ => Err(()),
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawWorkflowControl {
    #[serde(default)]
    suspend: bool,
    #[serde(default)]
    retry_after: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

/// Parses `workflow-control.yaml`.
pub(crate) fn parse_workflow_control(text: &str) -> Result<WorkflowControl, Error> {
    let raw: Option<RawWorkflowControl> =
        serde_yaml::from_str(text).map_err(|source| Error::Parse {
            file: WORKFLOW_CONTROL_FILE,
            source,
        })?;
    let Some(raw) = raw else {
        return Ok(WorkflowControl::default());
    };
    let retry_after = match raw.retry_after.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(value) => Some(parse_duration(value).ok_or_else(|| Error::RetryAfter {
            value: value.to_string(),
        })?),
    };
    Ok(WorkflowControl {
        suspend: raw.suspend,
        retry_after,
        message: raw.message.filter(|m| !m.is_empty()),
    })
}

/// A Go duration (`time.ParseDuration`, which Kratix uses): a sequence of decimal numbers with
/// units `ns`, `us`/`µs`, `ms`, `s`, `m`, `h`, such as `30s`, `1.5h` or `1h30m`; `0` alone is
/// allowed. Negative durations make no sense for a retry and are refused.
///
/// kube's [`kube::core::Duration`] does the reading. Its parser is laxer than Go's (it takes an
/// empty text, `+-5s` or a trailing `0`) and panics when a number overflows, so the text is
/// checked against Go's grammar, with numbers no longer than Go's limit allows, first.
pub(crate) fn parse_duration(text: &str) -> Option<Duration> {
    if !is_go_duration(text) {
        return None;
    }
    let parsed: kube::core::Duration = text.parse().ok()?;
    let duration = Duration::from(parsed);
    (!parsed.is_negative() && duration <= MAX_GO_DURATION).then_some(duration)
}

/// Go's limit (an `int64` of nanoseconds): about 290 years.
const MAX_GO_DURATION: Duration = Duration::from_nanos(i64::MAX as u64);

/// Far longer than any real duration; with the digit limits below it keeps kube's sum of the
/// parts from overflowing.
const MAX_DURATION_TEXT: usize = 1024;

/// Go's units, each with the most digits a whole number of it may have within
/// [`MAX_GO_DURATION`] (9223372036854775807ns, 2562047h), leading zeros aside.
const DURATION_UNITS: [(&str, usize); 8] = [
    ("ns", 19),
    ("us", 16),
    ("µs", 16),
    ("μs", 16),
    ("ms", 13),
    ("s", 10),
    ("m", 9),
    ("h", 7),
];

/// Whether `text` is `0`, or an optional `+` and one or more numbers (digits with at most one
/// `.`), each followed by a unit.
fn is_go_duration(text: &str) -> bool {
    if text == "0" {
        return true;
    }
    let mut rest = text.strip_prefix('+').unwrap_or(text);
    if rest.is_empty() || text.len() > MAX_DURATION_TEXT {
        return false;
    }
    while !rest.is_empty() {
        let is_numeric = |c: char| c.is_ascii_digit() || c == '.';
        let (number, after) = rest.split_at(rest.find(|c| !is_numeric(c)).unwrap_or(rest.len()));
        let (unit, after) = after.split_at(after.find(is_numeric).unwrap_or(after.len()));
        let Some((_, max_digits)) = DURATION_UNITS.iter().find(|(name, _)| *name == unit) else {
            return false;
        };
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        if whole.len() + fraction.len() == 0
            || fraction.contains('.')
            || whole.trim_start_matches('0').len() > *max_digits
        {
            return false;
        }
        rest = after;
    }
    true
}

/// Reads the three files from `dir`; a missing file means "nothing said".
pub(crate) fn read_metadata(dir: &Path) -> Result<Metadata, Error> {
    let kind = std::fs::symlink_metadata(dir)
        .map(|m| EntryKind::of(m.file_type()))
        .map_err(|source| Error::Read { file: ".", source })?;
    if kind != EntryKind::Dir {
        return Err(Error::FolderNotFolder {
            kind: kind.describe(),
        });
    }
    let status = read_optional(dir, STATUS_FILE)?
        .map(|t| parse_status(&t))
        .transpose()?
        .flatten();
    let destination_selectors = read_optional(dir, DESTINATION_SELECTORS_FILE)?
        .map(|t| parse_destination_selectors(&t))
        .transpose()?
        .unwrap_or_default();
    let workflow_control = read_optional(dir, WORKFLOW_CONTROL_FILE)?
        .map(|t| parse_workflow_control(&t))
        .transpose()?
        .unwrap_or_default();
    Ok(Metadata {
        status,
        destination_selectors,
        workflow_control,
    })
}

/// The text of `dir/file`, `None` when absent. Never follows a link (the pipeline could point
/// it at any host file), never blocks on a fifo, never reads more than [`MAX_FILE_BYTES`].
pub(crate) fn read_optional(dir: &Path, file: &'static str) -> Result<Option<String>, Error> {
    let read_error = |source| Error::Read { file, source };
    let path = dir.join(file);
    let flags = nix::fcntl::OFlag::O_NOFOLLOW | nix::fcntl::OFlag::O_NONBLOCK;
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits())
        .open(&path);
    let mut handle = match opened {
        Ok(handle) => handle,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(nix::libc::ELOOP) => {
            return Err(Error::NotRegular {
                file,
                kind: EntryKind::Symlink.describe(),
            })
        }
        Err(e) => return Err(read_error(e)),
    };
    let meta = handle.metadata().map_err(read_error)?;
    let kind = EntryKind::of(meta.file_type());
    if kind != EntryKind::File {
        return Err(Error::NotRegular {
            file,
            kind: kind.describe(),
        });
    }
    let too_large = Error::TooLarge {
        file,
        limit: MAX_FILE_BYTES,
    };
    if meta.len() > MAX_FILE_BYTES {
        return Err(too_large);
    }
    let mut bytes = Vec::new();
    (&mut handle)
        .take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(read_error)?;
    if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > MAX_FILE_BYTES {
        return Err(too_large);
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|e| read_error(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))
}

#[cfg(test)]
mod tests;
