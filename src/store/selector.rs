//! Label selectors as `kubectl -l` writes them: `a=b`, `a==b`, `a!=b`, `a in (x,y)`,
//! `a notin (x)`, `a`, `!a`, joined by commas.
//!
//! They are parsed into kube's [`kube::core::Selector`], which matches labels and converts to a
//! `LabelSelector`, so a Kubernetes backend can hand them to the API server as they are. kube
//! reads no text form, hence the parser here.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use kube::core::{Expression, SelectorExt};

/// A parsed label selector; the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selector(kube::core::Selector);

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Error {
    /// The selector text is not a valid label selector.
    #[error("invalid label selector {text:?}: {reason} in {part:?}")]
    Invalid {
        text: String,
        part: String,
        reason: &'static str,
    },
}

impl Selector {
    /// The selector that matches everything.
    pub fn everything() -> Self {
        Self::default()
    }

    /// A selector requiring every given label to equal its value.
    pub(crate) fn from_labels<'a>(labels: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        Self(
            labels
                .into_iter()
                .map(|(k, v)| Expression::Equal(k.to_string(), v.to_string()))
                .collect(),
        )
    }

    pub fn parse(text: &str) -> Result<Self, Error> {
        split_top_level(text)
            .into_iter()
            .map(str::trim)
            .filter(|part| !part.is_empty())
            .map(|part| {
                parse_requirement(part).map_err(|reason| Error::Invalid {
                    text: text.to_string(),
                    part: part.to_string(),
                    reason,
                })
            })
            .collect::<Result<_, _>>()
            .map(Self)
    }

    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.0.matches(labels)
    }

    /// The `label = value` requirements (a selector requiring two values of one label selects
    /// nothing, and still lists both).
    pub(crate) fn equalities(&self) -> Vec<(String, String)> {
        self.0
            .clone()
            .into_iter()
            .filter_map(|expression| match expression {
                Expression::Equal(label, value) => Some((label, value)),
                _ => None,
            })
            .collect()
    }

    pub(crate) fn is_everything(&self) -> bool {
        self.0.selects_all()
    }
}

/// The selector as kube holds it, for the API server (`LabelSelector::from`, `ListParams`).
impl From<Selector> for kube::core::Selector {
    fn from(selector: Selector) -> Self {
        selector.0
    }
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// One requirement, already trimmed and not empty.
fn parse_requirement(part: &str) -> Result<Expression, &'static str> {
    const BAD_KEY: &str = "bad key";
    const BAD_SET: &str = "bad set";
    let key = |k: &str| valid_key(k.trim()).ok_or(BAD_KEY);
    Ok(if let Some(k) = part.strip_prefix('!') {
        Expression::DoesNotExist(key(k)?)
    } else if let Some((k, v)) = part.split_once("!=") {
        Expression::NotEqual(key(k)?, v.trim().to_string())
    } else if let Some((k, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
        Expression::Equal(key(k)?, v.trim().to_string())
    } else if let Some((k, rest)) = part.split_once(" notin ") {
        Expression::NotIn(key(k)?, parse_set(rest.trim()).ok_or(BAD_SET)?)
    } else if let Some((k, rest)) = part.split_once(" in ") {
        Expression::In(key(k)?, parse_set(rest.trim()).ok_or(BAD_SET)?)
    } else {
        Expression::Exists(key(part)?)
    })
}

/// Splits on commas that are not inside parentheses.
fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

fn parse_set(text: &str) -> Option<BTreeSet<String>> {
    let inner = text.strip_prefix('(')?.strip_suffix(')')?;
    Some(
        inner
            .split(',')
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .collect(),
    )
}

fn valid_key(key: &str) -> Option<String> {
    let ok = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'));
    ok.then(|| key.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn selectors_match_as_kubectl_does() {
        let l = labels(&[("env", "dev"), ("team", "a")]);
        let cases: &[(&str, bool)] = &[
            ("", true),
            ("env=dev", true),
            ("env==dev", true),
            ("env=prod", false),
            ("env!=prod", true),
            ("env!=dev", false),
            ("env in (dev,prod)", true),
            ("env in (prod)", false),
            ("env notin (prod)", true),
            ("missing notin (prod)", true),
            ("team", true),
            ("!team", false),
            ("!missing", true),
            ("env=dev,team=a", true),
            ("env=dev,team=b", false),
            ("env in (dev, prod),team", true),
        ];
        for (text, want) in cases {
            let sel = Selector::parse(text).expect(text);
            assert_eq!(sel.matches(&l), *want, "{text}");
        }
    }

    /// A requirement as plain data, with its own obviously-correct meaning, to check the parser
    /// and matcher against.
    #[derive(Debug, Clone)]
    enum Model {
        Equals(String, String),
        NotEquals(String, String),
        In(String, Vec<String>),
        NotIn(String, Vec<String>),
        Exists(String),
        NotExists(String),
    }

    impl Model {
        fn text(&self) -> String {
            match self {
                Model::Equals(k, v) => format!("{k}={v}"),
                Model::NotEquals(k, v) => format!("{k} != {v}"),
                Model::In(k, vs) => format!("{k} in ({})", vs.join(", ")),
                Model::NotIn(k, vs) => format!("{k} notin ({})", vs.join(",")),
                Model::Exists(k) => k.clone(),
                Model::NotExists(k) => format!("!{k}"),
            }
        }

        fn holds(&self, labels: &BTreeMap<String, String>) -> bool {
            let value = |k: &String| labels.iter().find(|(lk, _)| *lk == k).map(|(_, v)| v);
            match self {
                Model::Equals(k, v) => value(k) == Some(v),
                Model::NotEquals(k, v) => value(k) != Some(v),
                Model::In(k, vs) => value(k).is_some_and(|l| vs.iter().any(|v| v == l)),
                Model::NotIn(k, vs) => !value(k).is_some_and(|l| vs.iter().any(|v| v == l)),
                Model::Exists(k) => value(k).is_some(),
                Model::NotExists(k) => value(k).is_none(),
            }
        }
    }

    // Few keys and values, so that generated labels and selectors often meet.
    fn key() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("env".to_string()),
            Just("team".to_string()),
            Just("kratix.io/promise-name".to_string()),
            Just("in".to_string()),
            Just("notin".to_string()),
            "[a-z][a-z0-9._-]{0,6}[a-z0-9]",
        ]
    }

    fn value() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("dev".to_string()),
            Just("prod".to_string()),
            Just(String::new()),
            "[A-Za-z0-9][A-Za-z0-9._-]{0,4}",
        ]
    }

    fn model() -> impl Strategy<Value = Model> {
        let values = || prop::collection::vec("[A-Za-z0-9][A-Za-z0-9._-]{0,4}|dev|prod", 1..4);
        prop_oneof![
            (key(), value()).prop_map(|(k, v)| Model::Equals(k, v)),
            (key(), value()).prop_map(|(k, v)| Model::NotEquals(k, v)),
            (key(), values()).prop_map(|(k, vs)| Model::In(k, vs)),
            (key(), values()).prop_map(|(k, vs)| Model::NotIn(k, vs)),
            key().prop_map(Model::Exists),
            key().prop_map(Model::NotExists),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(
            if std::env::var_os("KRATIX_LONG_TESTS").is_some() { 10_000 } else { 512 }
        ))]

        #[test]
        fn matching_agrees_with_the_model(
            models in prop::collection::vec(model(), 0..5),
            labels in prop::collection::btree_map(key(), value(), 0..5),
        ) {
            let text: Vec<String> = models.iter().map(Model::text).collect();
            let text = text.join(" , ");
            let selector = Selector::parse(&text).expect("generated selectors are valid");
            let want = models.iter().all(|m| m.holds(&labels));
            prop_assert_eq!(selector.matches(&labels), want, "{}", text);
        }

        #[test]
        fn display_round_trips_through_parse(models in prop::collection::vec(model(), 0..5)) {
            let text: Vec<String> = models.iter().map(Model::text).collect();
            let selector = Selector::parse(&text.join(",")).expect("valid");
            let shown = selector.to_string();
            let again = Selector::parse(&shown).expect("Display output parses");
            prop_assert_eq!(&again, &selector);
            prop_assert_eq!(again.to_string(), shown);
        }

        #[test]
        fn parse_never_panics(text in "[a-z!=(), ]{0,40}|.{0,40}") {
            let _ = Selector::parse(&text);
        }
    }

    #[test]
    fn bad_selectors_are_refused_naming_the_requirement() {
        let cases = [
            ("=dev", "=dev", "bad key"),
            ("env in dev", "env in dev", "bad set"),
            ("e nv=x", "e nv=x", "bad key"),
            ("env=dev, tier in (a,b", "tier in (a,b", "bad set"),
            ("env=dev,!", "!", "bad key"),
        ];
        for (text, part, reason) in cases {
            let want = Error::Invalid {
                text: text.to_string(),
                part: part.to_string(),
                reason,
            };
            assert_eq!(Selector::parse(text), Err(want), "{text}");
        }
    }

    #[test]
    fn selectors_become_the_label_selectors_the_api_server_takes() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
            LabelSelector, LabelSelectorRequirement,
        };
        let requirement =
            |key: &str, operator: &str, values: Option<&[&str]>| LabelSelectorRequirement {
                key: key.to_string(),
                operator: operator.to_string(),
                values: values.map(|vs| vs.iter().map(std::string::ToString::to_string).collect()),
            };
        let selector = Selector::parse("env=dev, tier in (b,a), zone notin (x), team, !gone, k!=v")
            .expect("valid");
        let got = LabelSelector::from(kube::core::Selector::from(selector));
        let want = LabelSelector {
            match_labels: Some(labels(&[("env", "dev")])),
            match_expressions: Some(vec![
                requirement("tier", "In", Some(&["a", "b"])),
                requirement("zone", "NotIn", Some(&["x"])),
                requirement("team", "Exists", None),
                requirement("gone", "DoesNotExist", None),
                requirement("k", "NotIn", Some(&["v"])),
            ]),
        };
        assert_eq!(got, want);
    }
}
