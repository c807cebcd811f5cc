//! `label` and `annotate`: kubectl's way of changing an object's labels or annotations. Only
//! metadata changes, so the object's generation stays (the control plane bumps it for spec
//! changes only) and no workflow re-runs because of it; controllers still see the change.
//!
//! Arguments and messages follow kubectl's `label` and `annotate` commands:
//! <https://github.com/kubernetes/kubectl/blob/v0.31.0/pkg/cmd/label/label.go>,
//! <https://github.com/kubernetes/kubectl/blob/v0.31.0/pkg/cmd/annotate/annotate.go>.

use std::collections::BTreeMap;

use crate::api::{names, KindInfo, Object, ObjectKey};
use crate::store::{self, ControlPlane};

/// The API server's limit on the total size of an object's annotations (keys and values).
pub(crate) const ANNOTATIONS_MAX_BYTES: usize = 256 * 1024;

/// How many times a change is re-applied on a fresh read when someone else wrote in between.
const CONFLICT_RETRIES: usize = 20;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A `key=value` or `key-` argument kubectl would refuse.
    #[error("{0}")]
    Invalid(String),
    /// A change of an existing value without `--overwrite`.
    #[error("{0}")]
    WouldOverwrite(String),
    #[error("{key} not found")]
    NotFound { key: ObjectKey },
    #[error("updating {key}")]
    Store {
        key: ObjectKey,
        #[source]
        source: store::Error,
    },
}

/// Labels or annotations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Which {
    Labels,
    Annotations,
}

impl Which {
    fn noun(self) -> &'static str {
        match self {
            Which::Labels => "label",
            Which::Annotations => "annotation",
        }
    }

    fn map(self, obj: &mut Object) -> &mut Option<BTreeMap<String, String>> {
        match self {
            Which::Labels => &mut obj.metadata.labels,
            Which::Annotations => &mut obj.metadata.annotations,
        }
    }
}

/// What one command asks for: values to set and keys to remove.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Changes {
    pub set: BTreeMap<String, String>,
    pub remove: Vec<String>,
}

/// Reads `key=value` and `key-` arguments, checking keys (and label values) as the API server
/// does, so that a refused change is refused before anything is read or written.
pub(crate) fn parse(which: Which, args: &[String]) -> Result<Changes, Error> {
    let noun = which.noun();
    let mut changes = Changes::default();
    for arg in args {
        if let Some((key, value)) = arg.split_once('=') {
            names::qualified_name(key).map_err(|reason| {
                Error::Invalid(format!("invalid {noun} spec {arg:?}: key {key:?} {reason}"))
            })?;
            if which == Which::Labels {
                names::label_value(value).map_err(|reason| {
                    Error::Invalid(format!("invalid label value: {value:?}: {reason}"))
                })?;
            }
            changes.set.insert(key.to_string(), value.to_string());
        } else if let Some(key) = arg.strip_suffix('-') {
            names::qualified_name(key).map_err(|reason| {
                Error::Invalid(format!("invalid {noun} spec {arg:?}: key {key:?} {reason}"))
            })?;
            changes.remove.push(key.to_string());
        } else {
            return Err(Error::Invalid(format!("unknown {noun} spec: {arg}")));
        }
    }
    if changes.set.is_empty() && changes.remove.is_empty() {
        return Err(Error::Invalid(format!(
            "at least one {noun} update is required"
        )));
    }
    let both: Vec<&str> = changes
        .remove
        .iter()
        .filter(|k| changes.set.contains_key(*k))
        .map(String::as_str)
        .collect();
    if !both.is_empty() {
        return Err(Error::Invalid(format!(
            "can not both modify and remove the following {noun}(s) in the same command: {}",
            both.join(", ")
        )));
    }
    Ok(changes)
}

/// What a change did, for the line kubectl prints (`labeled`, `unlabeled`, `not labeled`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Changed,
    OnlyRemoved,
    Unchanged,
}

/// The new map after `changes`: refuses to change an existing value without `overwrite` (as
/// kubectl words it), and annotations past the API server's size limit.
pub(crate) fn change(
    which: Which,
    current: &BTreeMap<String, String>,
    changes: &Changes,
    overwrite: bool,
) -> Result<(BTreeMap<String, String>, Outcome), Error> {
    if !overwrite {
        let clashes: Vec<String> = changes
            .set
            .iter()
            .filter_map(|(k, v)| {
                current
                    .get(k)
                    .filter(|old| *old != v)
                    .map(|old| format!("'{k}' already has a value ({old})"))
            })
            .collect();
        if !clashes.is_empty() {
            return Err(Error::WouldOverwrite(match which {
                Which::Labels => format!("{}, and --overwrite is false", clashes.join("; ")),
                Which::Annotations => format!(
                    "--overwrite is false but found the following declared annotation(s): {}",
                    clashes.join("; ")
                ),
            }));
        }
    }
    let mut next = current.clone();
    next.extend(changes.set.clone());
    for key in &changes.remove {
        next.remove(key);
    }
    if which == Which::Annotations {
        let size: usize = next.iter().map(|(k, v)| k.len() + v.len()).sum();
        if size > ANNOTATIONS_MAX_BYTES {
            return Err(Error::Invalid(format!(
                "metadata.annotations: Too long: must have at most {ANNOTATIONS_MAX_BYTES} bytes (they would have {size})"
            )));
        }
    }
    let outcome = if &next == current {
        Outcome::Unchanged
    } else if changes.set.iter().all(|(k, v)| current.get(k) == Some(v)) {
        Outcome::OnlyRemoved
    } else {
        Outcome::Changed
    };
    Ok((next, outcome))
}

/// The verb kubectl prints after `<kind>/<name>`.
pub(crate) fn verb(which: Which, outcome: Outcome) -> &'static str {
    match (which, outcome) {
        (Which::Labels, Outcome::Changed) => "labeled",
        (Which::Labels, Outcome::OnlyRemoved) => "unlabeled",
        (Which::Labels, Outcome::Unchanged) => "not labeled",
        (Which::Annotations, _) => "annotated",
    }
}

/// Applies `changes` to the stored object (re-reading it when someone else wrote in between).
pub(crate) async fn apply(
    cp: &dyn ControlPlane,
    kind: &KindInfo,
    key: &ObjectKey,
    which: Which,
    changes: &Changes,
    overwrite: bool,
) -> Result<Outcome, Error> {
    update_with_retries(cp, kind, key, |obj| {
        let current = which.map(obj).clone().unwrap_or_default();
        let (next, outcome) = change(which, &current, changes, overwrite)?;
        *which.map(obj) = (!next.is_empty()).then_some(next);
        Ok(outcome)
    })
    .await
}

/// Reads the object, lets `edit` change it and writes it back unless it said `Unchanged`;
/// on a conflict, starts again from a fresh read.
pub(crate) async fn update_with_retries(
    cp: &dyn ControlPlane,
    kind: &KindInfo,
    key: &ObjectKey,
    mut edit: impl FnMut(&mut Object) -> Result<Outcome, Error>,
) -> Result<Outcome, Error> {
    let store_err = |source| Error::Store {
        key: key.clone(),
        source,
    };
    for _ in 0..CONFLICT_RETRIES {
        let mut obj = cp
            .get(kind, key.namespace.as_deref(), &key.name)
            .await
            .map_err(store_err)?
            .ok_or_else(|| Error::NotFound { key: key.clone() })?;
        let outcome = edit(&mut obj)?;
        if outcome == Outcome::Unchanged {
            return Ok(outcome);
        }
        match cp.update(kind, &obj).await {
            Ok(_) => return Ok(outcome),
            Err(store::Error::Conflict { .. }) => continue,
            Err(source) => return Err(store_err(source)),
        }
    }
    Err(store_err(store::Error::Conflict {
        key: key.clone(),
        expected: "latest".into(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &[&str]) -> Vec<String> {
        s.iter().map(std::string::ToString::to_string).collect()
    }

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn arguments_are_checked_like_kubectl() {
        type Want<'a> = Result<(&'a [(&'a str, &'a str)], &'a [&'a str]), &'a str>;
        let cases: &[(&str, Which, &[&str], Want)] = &[
            (
                "one label",
                Which::Labels,
                &["a=b"],
                Ok((&[("a", "b")], &[])),
            ),
            (
                "empty value",
                Which::Labels,
                &["a="],
                Ok((&[("a", "")], &[])),
            ),
            (
                "prefixed key and a removal",
                Which::Labels,
                &["kratix.io/paused=true", "x-"],
                Ok((&[("kratix.io/paused", "true")], &["x"])),
            ),
            (
                "bad label value",
                Which::Labels,
                &["a=b c"],
                Err("invalid label value"),
            ),
            (
                "long label value",
                Which::Labels,
                &["a=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"],
                Err("longer than 63"),
            ),
            (
                "annotation values are free",
                Which::Annotations,
                &["note=hello world: {x}"],
                Ok((&[("note", "hello world: {x}")], &[])),
            ),
            (
                "bad key",
                Which::Annotations,
                &["Bad Key=x"],
                Err("invalid annotation spec"),
            ),
            (
                "bad prefix",
                Which::Labels,
                &["Kratix.io/x=1"],
                Err("prefix"),
            ),
            (
                "bad removal",
                Which::Labels,
                &["a/b/c-"],
                Err("invalid label spec"),
            ),
            (
                "neither",
                Which::Labels,
                &["justakey"],
                Err("unknown label spec: justakey"),
            ),
            (
                "nothing",
                Which::Labels,
                &[],
                Err("at least one label update"),
            ),
            (
                "set and remove",
                Which::Labels,
                &["a=1", "a-"],
                Err("can not both modify and remove"),
            ),
        ];
        for (name, which, given, want) in cases {
            let got = parse(*which, &args(given));
            match (got, want) {
                (Ok(c), Ok((set, remove))) => {
                    assert_eq!(c.set, map(set), "{name}");
                    assert_eq!(c.remove, args(remove), "{name}");
                }
                (Err(e), Err(text)) => {
                    assert!(e.to_string().contains(text), "{name}: {e}");
                }
                (got, want) => panic!("{name}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn changes_refuse_overwrites_unless_asked() {
        let current = map(&[("a", "1"), ("b", "2")]);
        let changes = |set: &[(&str, &str)], remove: &[&str]| Changes {
            set: map(set),
            remove: args(remove),
        };
        type Want<'a> = Result<(&'a [(&'a str, &'a str)], Outcome), &'a str>;
        let cases: Vec<(&str, Which, Changes, bool, Want)> = vec![
            (
                "new key",
                Which::Labels,
                changes(&[("c", "3")], &[]),
                false,
                Ok((&[("a", "1"), ("b", "2"), ("c", "3")], Outcome::Changed)),
            ),
            (
                "same value again",
                Which::Labels,
                changes(&[("a", "1")], &[]),
                false,
                Ok((&[("a", "1"), ("b", "2")], Outcome::Unchanged)),
            ),
            (
                "other value without --overwrite",
                Which::Labels,
                changes(&[("a", "9")], &[]),
                false,
                Err("'a' already has a value (1), and --overwrite is false"),
            ),
            (
                "other annotation value without --overwrite",
                Which::Annotations,
                changes(&[("a", "9")], &[]),
                false,
                Err("--overwrite is false but found the following declared annotation(s): 'a' already has a value (1)"),
            ),
            (
                "other value with --overwrite",
                Which::Labels,
                changes(&[("a", "9")], &[]),
                true,
                Ok((&[("a", "9"), ("b", "2")], Outcome::Changed)),
            ),
            (
                "removal needs no --overwrite",
                Which::Labels,
                changes(&[], &["b"]),
                false,
                Ok((&[("a", "1")], Outcome::OnlyRemoved)),
            ),
            (
                "removing what is not there",
                Which::Labels,
                changes(&[], &["z"]),
                false,
                Ok((&[("a", "1"), ("b", "2")], Outcome::Unchanged)),
            ),
            (
                "annotations past the size limit",
                Which::Annotations,
                changes(&[("big", &"x".repeat(ANNOTATIONS_MAX_BYTES))], &[]),
                false,
                Err("Too long"),
            ),
        ];
        for (name, which, changes, overwrite, want) in cases {
            match (change(which, &current, &changes, overwrite), want) {
                (Ok((next, outcome)), Ok((want_map, want_outcome))) => {
                    assert_eq!(next, map(want_map), "{name}");
                    assert_eq!(outcome, want_outcome, "{name}");
                }
                (Err(e), Err(text)) => assert!(e.to_string().contains(text), "{name}: {e}"),
                (got, want) => panic!("{name}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn verbs_are_kubectls() {
        let cases = [
            (Which::Labels, Outcome::Changed, "labeled"),
            (Which::Labels, Outcome::OnlyRemoved, "unlabeled"),
            (Which::Labels, Outcome::Unchanged, "not labeled"),
            (Which::Annotations, Outcome::Changed, "annotated"),
            (Which::Annotations, Outcome::Unchanged, "annotated"),
        ];
        for (which, outcome, want) in cases {
            assert_eq!(verb(which, outcome), want, "{which:?} {outcome:?}");
        }
    }
}
