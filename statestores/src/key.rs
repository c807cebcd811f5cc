//! Validated relative paths inside a store.

use std::fmt;

/// A relative, normalised, UTF-8 path: no empty, `.` or `..` segments, no leading or trailing `/`.
/// The empty key is the store's root (useful as a `list` prefix).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Key(String);

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum KeyError {
    /// The path leaves the store or is not normal.
    #[error("invalid path {path:?}: {reason}")]
    Invalid { path: String, reason: &'static str },
}

impl Key {
    /// Parses a path; `a//b`, `./a` and a leading `/` are normalised, `..` is refused.
    pub fn parse(path: &str) -> Result<Self, KeyError> {
        let mut segments = Vec::new();
        for seg in path.split('/') {
            match seg {
                "" | "." => {}
                ".." => {
                    return Err(KeyError::Invalid {
                        path: path.to_string(),
                        reason: "`..` is not allowed",
                    })
                }
                s if s.contains('\0') => {
                    return Err(KeyError::Invalid {
                        path: path.to_string(),
                        reason: "NUL is not allowed",
                    })
                }
                s => segments.push(s),
            }
        }
        Ok(Self(segments.join("/")))
    }

    /// The root of the store.
    pub fn root() -> Self {
        Self(String::new())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }

    /// `self/child`, where `child` is parsed like [`Key::parse`].
    pub fn join(&self, child: &str) -> Result<Self, KeyError> {
        Self::parse(&format!("{}/{}", self.0, child))
    }

    /// Is `self` equal to `prefix` or inside it?
    pub fn starts_with(&self, prefix: &Key) -> bool {
        prefix.is_root()
            || self.0 == prefix.0
            || (self.0.starts_with(&prefix.0)
                && self.0.as_bytes().get(prefix.0.len()) == Some(&b'/'))
    }

    pub fn segments(&self) -> impl Iterator<Item = &str> {
        self.0.split('/').filter(|s| !s.is_empty())
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_normalised_and_cannot_escape() {
        let cases: &[(&str, Option<&str>)] = &[
            ("a/b", Some("a/b")),
            ("/a//b/", Some("a/b")),
            ("./a/./b", Some("a/b")),
            ("", Some("")),
            ("a/../b", None),
            ("..", None),
        ];
        for (input, want) in cases {
            let got = Key::parse(input).ok().map(|k| k.as_str().to_string());
            assert_eq!(got.as_deref(), *want, "{input}");
        }
    }

    #[test]
    fn starts_with_respects_segment_boundaries() {
        let k = Key::parse("dest/resources/x").expect("valid");
        assert!(k.starts_with(&Key::parse("dest").expect("valid")));
        assert!(k.starts_with(&Key::root()));
        assert!(!k.starts_with(&Key::parse("des").expect("valid")));
    }
}
