//! Reading YAML documents from files, folders and standard input, each remembered by where it came
//! from so that errors can name it. Input is hostile until read: the whole input, each document,
//! its nesting and what its aliases expand to are bounded before anything is kept.

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// One YAML document and where it came from.
#[derive(Debug, Clone)]
pub(crate) struct Document {
    pub source: String,
    /// 1-based position in its file.
    pub index: usize,
    pub value: Value,
}

impl Document {
    pub(crate) fn kind(&self) -> &str {
        self.value.get("kind").and_then(Value::as_str).unwrap_or("")
    }

    pub(crate) fn api_version(&self) -> &str {
        self.value
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    pub(crate) fn name(&self) -> &str {
        self.value
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
    }
}

impl fmt::Display for Document {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} document {}", self.source, self.index)?;
        match (self.kind(), self.name()) {
            ("", _) => Ok(()),
            (kind, "") => write!(f, " ({kind})"),
            (kind, name) => write!(f, " ({kind} {name})"),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A path given with `-f` could not be read.
    #[error("cannot read {path}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// A document is not valid YAML.
    #[error("{source_name} document {index}: invalid YAML: {reason}")]
    Yaml {
        source_name: String,
        index: usize,
        reason: String,
    },
    /// A document is not a mapping.
    #[error(
        "{source_name} document {index}: expected a mapping with apiVersion, kind and metadata"
    )]
    NotAnObject { source_name: String, index: usize },
    /// `-f` named nothing with YAML in it.
    #[error("{path}: no YAML files found")]
    Empty { path: String },
    /// One document is larger than the limit.
    #[error(
        "{source_name} document {index}: {size} bytes is more than the limit of {limit} bytes per document (set {MAX_DOCUMENT_BYTES_VAR} to change it)"
    )]
    DocumentTooLarge {
        source_name: String,
        index: usize,
        size: usize,
        limit: usize,
    },
    /// Everything given to one command is larger than the limit.
    #[error(
        "{path}: the input is more than the limit of {limit} bytes for one command (set {MAX_INPUT_BYTES_VAR} to change it)"
    )]
    InputTooLarge { path: String, limit: usize },
    /// A document nests mappings and sequences deeper than the limit.
    #[error(
        "{source_name} document {index}: {field} nests mappings and lists more than {MAX_DEPTH} levels deep"
    )]
    TooDeep {
        source_name: String,
        index: usize,
        field: String,
    },
    /// A limit's environment variable is not a positive number of bytes.
    #[error("{name}={value:?}: expected a positive number of bytes")]
    BadLimit { name: &'static str, value: String },
}

/// Environment variable overriding [`Limits::max_document_bytes`].
pub(crate) const MAX_DOCUMENT_BYTES_VAR: &str = "KRATIX_MAX_DOCUMENT_BYTES";
/// Environment variable overriding [`Limits::max_input_bytes`].
pub(crate) const MAX_INPUT_BYTES_VAR: &str = "KRATIX_MAX_INPUT_BYTES";

/// Deepest nesting of mappings and lists a document may have. The control plane keeps objects as
/// JSON, and serde_json refuses to read back anything nested deeper than 128 levels: an object
/// stored deeper could never be read again. Real manifests, CRDs embedded in Promises included,
/// stay far below.
pub(crate) const MAX_DEPTH: usize = 100;

/// How much YAML one command reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    /// Bytes per document: kube-apiserver refuses request bodies over 3 MiB, so no object
    /// Kubernetes could hold is refused here.
    pub max_document_bytes: usize,
    /// Bytes over every file and standard input of one command, so a huge file is refused
    /// before it is read into memory.
    pub max_input_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_document_bytes: 3 * 1024 * 1024,
            max_input_bytes: 64 * 1024 * 1024,
        }
    }
}

impl Limits {
    /// The defaults, overridden by `KRATIX_MAX_DOCUMENT_BYTES` and `KRATIX_MAX_INPUT_BYTES`.
    pub(crate) fn from_env() -> Result<Self, Error> {
        let defaults = Self::default();
        let var = |name| std::env::var(name).ok();
        Ok(Self {
            max_document_bytes: limit(
                MAX_DOCUMENT_BYTES_VAR,
                var(MAX_DOCUMENT_BYTES_VAR).as_deref(),
                defaults.max_document_bytes,
            )?,
            max_input_bytes: limit(
                MAX_INPUT_BYTES_VAR,
                var(MAX_INPUT_BYTES_VAR).as_deref(),
                defaults.max_input_bytes,
            )?,
        })
    }
}

/// The value of a limit's variable: a positive number of bytes, or the default when unset.
fn limit(name: &'static str, value: Option<&str>, default: usize) -> Result<usize, Error> {
    match value {
        None => Ok(default),
        Some(text) => match text.trim().parse::<usize>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(Error::BadLimit {
                name,
                value: text.to_string(),
            }),
        },
    }
}

/// [`load_with`] the limits of the environment ([`Limits::from_env`]).
pub(crate) fn load(paths: &[PathBuf]) -> Result<Vec<Document>, Error> {
    load_with(paths, &Limits::from_env()?)
}

/// Reads every document from the given paths: files, folders (all `*.yaml`/`*.yml` inside,
/// recursively, in sorted order) or `-` for standard input. Empty documents are skipped.
pub(crate) fn load_with(paths: &[PathBuf], limits: &Limits) -> Result<Vec<Document>, Error> {
    let mut docs = Vec::new();
    let mut budget = limits.max_input_bytes;
    for path in paths {
        if path.as_os_str() == "-" {
            let text = read_limited(std::io::stdin().lock(), "-", &mut budget)?;
            docs.extend(parse("<stdin>", &text, limits)?);
            continue;
        }
        let files = yaml_files(path)?;
        if files.is_empty() {
            return Err(Error::Empty {
                path: path.display().to_string(),
            });
        }
        for file in files {
            let name = file.display().to_string();
            let opened = std::fs::File::open(&file).map_err(|source| Error::Read {
                path: name.clone(),
                source,
            })?;
            let text = read_limited(opened, &name, &mut budget)?;
            docs.extend(parse(&name, &text, limits)?);
        }
    }
    Ok(docs)
}

/// Reads at most `budget` bytes (and takes them off it); more is an error.
fn read_limited(reader: impl Read, path: &str, budget: &mut usize) -> Result<String, Error> {
    let limit = *budget;
    let mut text = String::new();
    reader
        .take(limit as u64 + 1)
        .read_to_string(&mut text)
        .map_err(|source| Error::Read {
            path: path.to_string(),
            source,
        })?;
    if text.len() > limit {
        return Err(Error::InputTooLarge {
            path: path.to_string(),
            limit,
        });
    }
    *budget -= text.len();
    Ok(text)
}

fn yaml_files(path: &Path) -> Result<Vec<PathBuf>, Error> {
    let meta = std::fs::metadata(path).map_err(|source| Error::Read {
        path: path.display().to_string(),
        source,
    })?;
    if meta.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut out = Vec::new();
    let mut stack = vec![path.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|source| Error::Read {
            path: dir.display().to_string(),
            source,
        })?;
        for entry in entries {
            let entry = entry.map_err(|source| Error::Read {
                path: dir.display().to_string(),
                source,
            })?;
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else if matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml")) {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Splits a multi-document YAML text into documents, each checked against `limits` before it
/// is parsed.
pub(crate) fn parse(
    source_name: &str,
    text: &str,
    limits: &Limits,
) -> Result<Vec<Document>, Error> {
    let mut docs = Vec::new();
    for (i, chunk) in split(text).into_iter().enumerate() {
        let index = i + 1;
        if chunk.len() > limits.max_document_bytes {
            return Err(Error::DocumentTooLarge {
                source_name: source_name.to_string(),
                index,
                size: chunk.len(),
                limit: limits.max_document_bytes,
            });
        }
        let Some(value) = parse_one(source_name, index, chunk, limits)? else {
            continue;
        };
        if !value.is_object() {
            return Err(Error::NotAnObject {
                source_name: source_name.to_string(),
                index,
            });
        }
        if let Some(field) = too_deep(&value, MAX_DEPTH) {
            return Err(Error::TooDeep {
                source_name: source_name.to_string(),
                index,
                field,
            });
        }
        docs.push(Document {
            source: source_name.to_string(),
            index,
            value,
        });
    }
    Ok(docs)
}

/// One document's text as JSON; `None` when it is empty.
fn parse_one(
    source_name: &str,
    index: usize,
    chunk: &str,
    limits: &Limits,
) -> Result<Option<Value>, Error> {
    let yaml_error = |reason: String| Error::Yaml {
        source_name: source_name.to_string(),
        index,
        reason,
    };
    // Twice what any document within the size limit costs without aliases.
    let budget = limits.max_document_bytes.saturating_mul(2);
    let mut values = Vec::new();
    for de in serde_yaml::Deserializer::from_str(chunk) {
        let value = bounded::value(de, budget).map_err(|e| {
            let reason = e.to_string();
            // serde_yaml's guard against nesting bombs.
            if reason.contains("recursion limit exceeded") {
                return Error::TooDeep {
                    source_name: source_name.to_string(),
                    index,
                    field: "the document".into(),
                };
            }
            // serde_yaml's guard and ours against alias ("billion laughs") bombs.
            if reason.contains("repetition limit exceeded") || reason.contains(bounded::EXHAUSTED) {
                return yaml_error(format!("{reason} (a \"billion laughs\" document?)"));
            }
            yaml_error(reason)
        })?;
        values.push(value);
    }
    // `split` cuts at every document marker, so a chunk holds one document at most.
    Ok(values.into_iter().find(|v| !v.is_null()))
}

/// The path of the first value nested deeper than `limit` levels (a scalar at the top is level 0).
fn too_deep(value: &Value, limit: usize) -> Option<String> {
    fn walk(value: &Value, depth: usize, limit: usize, path: &mut Vec<String>) -> bool {
        let children: Box<dyn Iterator<Item = (String, &Value)>> = match value {
            Value::Object(map) => Box::new(map.iter().map(|(k, v)| (format!(".{k}"), v))),
            Value::Array(items) => {
                Box::new(items.iter().enumerate().map(|(i, v)| (format!("[{i}]"), v)))
            }
            _ => return false,
        };
        if depth >= limit {
            return true;
        }
        for (step, child) in children {
            path.push(step);
            if walk(child, depth + 1, limit, path) {
                return true;
            }
            path.pop();
        }
        false
    }
    let mut path = Vec::new();
    // Enough of the path to find the place; the rest is the same bomb.
    const SHOWN: usize = 8;
    walk(value, 0, limit, &mut path).then(|| {
        let mut shown: String = path.iter().take(SHOWN).map(String::as_str).collect();
        if path.len() > SHOWN {
            shown.push_str("...");
        }
        shown.trim_start_matches('.').to_string()
    })
}

/// Cuts a YAML stream at its document markers: a line starting with `---` begins a document
/// (unless only comments and directives came before it in the current one), a line starting
/// with `...` ends one. YAML forbids both markers at the start of a line inside content, so no
/// document is ever cut in two. Returns every document's text, markers included, in order;
/// trailing comments after the last document are not a document.
pub(crate) fn split(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    // Nothing but blank lines, comments and directives in the current piece so far.
    let mut preamble = true;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let line_start = offset;
        offset += line.len();
        if is_marker(line, "---") {
            if !preamble {
                out.push(&text[start..line_start]);
                start = line_start;
            }
            preamble = false;
        } else if is_marker(line, "...") {
            out.push(&text[start..offset]);
            start = offset;
            preamble = true;
        } else {
            let trimmed = line.trim_start();
            let insignificant = trimmed.is_empty()
                || trimmed.starts_with('#')
                || (preamble && line.starts_with('%'));
            if !insignificant {
                preamble = false;
            }
        }
    }
    if !preamble {
        out.push(&text[start..]);
    }
    out
}

fn is_marker(line: &str, marker: &str) -> bool {
    line.strip_prefix(marker)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t', '\r', '\n']))
}

mod bounded;

#[cfg(test)]
mod tests;
