//! Reading YAML documents from files, folders and standard input, each remembered by where it came
//! from so that errors can name it.

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

/// One YAML document and where it came from.
#[derive(Debug, Clone)]
pub struct Document {
    pub source: String,
    /// 1-based position in its file.
    pub index: usize,
    pub value: Value,
}

impl Document {
    pub fn kind(&self) -> &str {
        self.value.get("kind").and_then(Value::as_str).unwrap_or("")
    }

    pub fn api_version(&self) -> &str {
        self.value
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    pub fn name(&self) -> &str {
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
}

/// Reads every document from the given paths: files, folders (all `*.yaml`/`*.yml` inside,
/// recursively, in sorted order) or `-` for standard input. Empty documents are skipped.
pub fn load(paths: &[PathBuf]) -> Result<Vec<Document>, Error> {
    let mut docs = Vec::new();
    for path in paths {
        if path.as_os_str() == "-" {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|source| Error::Read {
                    path: "-".into(),
                    source,
                })?;
            docs.extend(parse("<stdin>", &text)?);
            continue;
        }
        let files = yaml_files(path)?;
        if files.is_empty() {
            return Err(Error::Empty {
                path: path.display().to_string(),
            });
        }
        for file in files {
            let text = std::fs::read_to_string(&file).map_err(|source| Error::Read {
                path: file.display().to_string(),
                source,
            })?;
            docs.extend(parse(&file.display().to_string(), &text)?);
        }
    }
    Ok(docs)
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
            } else if matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("yaml") | Some("yml")
            ) {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Splits a multi-document YAML text into documents.
pub fn parse(source_name: &str, text: &str) -> Result<Vec<Document>, Error> {
    let mut docs = Vec::new();
    for (i, de) in serde_yaml::Deserializer::from_str(text).enumerate() {
        let index = i + 1;
        let value = serde_yaml::Value::deserialize(de).map_err(|e| Error::Yaml {
            source_name: source_name.to_string(),
            index,
            reason: e.to_string(),
        })?;
        if value.is_null() {
            continue;
        }
        let json: Value = serde_json::to_value(&value).map_err(|e| Error::Yaml {
            source_name: source_name.to_string(),
            index,
            reason: e.to_string(),
        })?;
        if !json.is_object() {
            return Err(Error::NotAnObject {
                source_name: source_name.to_string(),
                index,
            });
        }
        docs.push(Document {
            source: source_name.to_string(),
            index,
            value: json,
        });
    }
    Ok(docs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_documents_and_skips_empty_ones() {
        let docs =
            parse("f.yaml", "a: 1\n---\n---\nkind: X\nmetadata: {name: n}\n").expect("parses");
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[1].index, 3);
        assert_eq!(docs[1].to_string(), "f.yaml document 3 (X n)");
    }

    #[test]
    fn invalid_yaml_names_the_document() {
        let err = parse("f.yaml", "a: 1\n---\nb: [\n").expect_err("must fail");
        assert!(
            err.to_string()
                .starts_with("f.yaml document 2: invalid YAML"),
            "{err}"
        );
        let err = parse("f.yaml", "- 1\n").expect_err("must fail");
        assert!(err.to_string().contains("expected a mapping"), "{err}");
    }
}
