//! Field selectors as the API server reads them for every kind: `metadata.name` and
//! `metadata.namespace`, with `=`, `==` and `!=`, joined by commas.

use crate::api::Object;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Error {
    #[error("invalid field selector {text:?}: {part:?} is not FIELD=VALUE or FIELD!=VALUE")]
    Malformed { text: String, part: String },
    #[error("field label not supported: {field}")]
    Unsupported { field: String },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Name,
    Namespace,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct FieldSelector(Vec<(Field, bool, String)>);

impl FieldSelector {
    pub(crate) fn parse(text: &str) -> Result<Self, Error> {
        let mut out = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (field, equal, value) = if let Some((f, v)) = part.split_once("!=") {
                (f, false, v)
            } else if let Some((f, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
                (f, true, v)
            } else {
                return Err(Error::Malformed {
                    text: text.into(),
                    part: part.into(),
                });
            };
            let field = match field.trim() {
                "metadata.name" => Field::Name,
                "metadata.namespace" => Field::Namespace,
                other => {
                    return Err(Error::Unsupported {
                        field: other.into(),
                    })
                }
            };
            out.push((field, equal, value.trim().to_string()));
        }
        Ok(Self(out))
    }

    /// Whether an object named `name` in `namespace` (`""` for cluster-scoped) is selected.
    pub(crate) fn matches_key(&self, namespace: &str, name: &str) -> bool {
        self.0.iter().all(|(field, equal, value)| {
            let actual = match field {
                Field::Name => name,
                Field::Namespace => namespace,
            };
            (actual == value) == *equal
        })
    }

    pub(crate) fn matches(&self, obj: &Object) -> bool {
        self.matches_key(
            obj.metadata.namespace.as_deref().unwrap_or_default(),
            obj.metadata.name.as_deref().unwrap_or_default(),
        )
    }

    /// The one name the selector requires, if it requires one (`metadata.name=x`).
    pub(crate) fn name(&self) -> Option<&str> {
        self.0
            .iter()
            .find(|(f, equal, _)| *f == Field::Name && *equal)
            .map(|(_, _, v)| v.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_selectors_match_name_and_namespace() {
        let cases = [
            ("", "ns", "a", Some(true)),
            ("metadata.name=a", "ns", "a", Some(true)),
            ("metadata.name==a", "ns", "b", Some(false)),
            ("metadata.name!=a", "ns", "b", Some(true)),
            (
                "metadata.namespace=ns,metadata.name=a",
                "ns",
                "a",
                Some(true),
            ),
            ("metadata.namespace=other", "ns", "a", Some(false)),
            ("metadata.namespace=", "", "a", Some(true)),
            ("status.phase=Running", "ns", "a", None),
            ("metadata.name", "ns", "a", None),
        ];
        for (text, ns, name, want) in cases {
            let got = FieldSelector::parse(text)
                .ok()
                .map(|s| s.matches_key(ns, name));
            assert_eq!(got, want, "{text:?}");
        }
        assert_eq!(
            FieldSelector::parse("status.phase=Running")
                .expect_err("unsupported")
                .to_string(),
            "field label not supported: status.phase"
        );
        let s = FieldSelector::parse("metadata.namespace=x,metadata.name=db").expect("parses");
        assert_eq!(s.name(), Some("db"));
        assert_eq!(
            FieldSelector::parse("metadata.name!=db")
                .expect("parses")
                .name(),
            None
        );
    }
}
