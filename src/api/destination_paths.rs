//! Which Destinations may write where: a Destination needs a `spec.path`, and no two
//! Destinations of one state store may share a folder. Kratix's admission webhook refuses both
//! (https://github.com/syntasso/kratix/blob/ae170e22e974e45bb7cfda00986057e01b3ccfde/internal/webhook/v1alpha1/destination_webhook.go);
//! `apply` refuses them here, and the controllers, which may meet Destinations no webhook
//! checked (on Kubernetes), refuse to write for them.

use std::collections::BTreeMap;
use std::fmt;

use super::{Destination, Object};

/// Where a Destination writes, as the rules compare it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PathClaim {
    pub name: String,
    /// `spec.stateStoreRef`'s kind and name (empty when it has none).
    pub store_kind: String,
    pub store_name: String,
    /// `spec.path` as given.
    pub path: String,
}

impl PathClaim {
    /// The claim of a stored or applied Destination.
    pub(crate) fn of(dest: &Destination) -> Self {
        let store = dest.spec.state_store_ref.as_ref();
        PathClaim {
            name: dest.metadata.name.clone().unwrap_or_default(),
            store_kind: store.map(|s| s.kind.clone()).unwrap_or_default(),
            store_name: store.map(|s| s.name.clone()).unwrap_or_default(),
            path: dest.spec.path.clone(),
        }
    }

    /// Both write into one folder of one state store. Paths are compared as the writer joins
    /// them (`a`, `a/` and `./a` are one folder; `.` and `/` are the store's root), which
    /// refuses a few pairs Kratix, comparing the strings, lets through into one folder.
    fn clashes_with(&self, other: &PathClaim) -> bool {
        self.name != other.name
            && self.store_kind == other.store_kind
            && self.store_name == other.store_name
            && folder(&self.path) == folder(&other.path)
    }
}

const REASON_REQUIRED: &str = "PathRequired";
const REASON_IN_USE: &str = "PathInUse";

/// Why a Destination may not write, in Kratix's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PathRefusal {
    /// `spec.path` is empty.
    Required,
    /// Another Destination (`holder`) of the same state store writes to the same folder.
    InUse {
        path: String,
        store: String,
        holder: String,
    },
}

impl PathRefusal {
    /// The reason of the Destination's `Ready` condition and event.
    pub(crate) fn reason(&self) -> &'static str {
        match self {
            PathRefusal::Required => REASON_REQUIRED,
            PathRefusal::InUse { .. } => REASON_IN_USE,
        }
    }

    /// Whether `reason` is one a refusal gives.
    pub(crate) fn is_reason(reason: &str) -> bool {
        matches!(reason, REASON_REQUIRED | REASON_IN_USE)
    }

    /// Kratix's message, with the Destination that holds the path.
    pub(crate) fn message(&self) -> String {
        match self {
            PathRefusal::Required => self.to_string(),
            PathRefusal::InUse { holder, .. } => {
                format!("{self} (Destination {holder:?})")
            }
        }
    }
}

impl fmt::Display for PathRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathRefusal::Required => f.write_str("path field is required"),
            PathRefusal::InUse { path, store, .. } => write!(
                f,
                "destination path '{path}' already exists for state store '{store}'"
            ),
        }
    }
}

/// Admission of `claim` against the Destinations that hold their paths before it (for `apply`:
/// those stored, as updated by the documents before it in the batch; its own name is skipped,
/// so an update keeping its path is not its own duplicate).
pub(crate) fn refusal<'a>(
    claim: &PathClaim,
    before: impl IntoIterator<Item = &'a PathClaim>,
) -> Option<PathRefusal> {
    if claim.path.is_empty() {
        return Some(PathRefusal::Required);
    }
    before
        .into_iter()
        .find(|other| !other.path.is_empty() && claim.clashes_with(other))
        .map(|holder| PathRefusal::InUse {
            path: claim.path.clone(),
            store: claim.store_name.clone(),
            holder: holder.name.clone(),
        })
}

/// The refusals among `all` stored Destinations, by name, where no webhook chose between
/// them: the oldest (by creation, then name) of a clashing group holds the path, and every
/// later one is refused.
pub(crate) fn refusals(all: &[Object]) -> BTreeMap<String, PathRefusal> {
    let mut claims: Vec<(_, PathClaim)> = all
        .iter()
        .filter_map(|obj| {
            let dest = super::object::to_typed::<Destination>(obj).ok()?;
            let created = obj.metadata.creation_timestamp.as_ref().map(|t| t.0);
            Some((created, PathClaim::of(&dest)))
        })
        .collect();
    claims.sort_by(|(a_at, a), (b_at, b)| a_at.cmp(b_at).then_with(|| a.name.cmp(&b.name)));
    claims
        .iter()
        .enumerate()
        .filter_map(|(i, (_, claim))| {
            refusal(claim, claims[..i].iter().map(|(_, c)| c)).map(|r| (claim.name.clone(), r))
        })
        .collect()
}

/// The folder of a Destination's path under its store's: cleaned as Go's `path.Clean` would,
/// without leading or trailing `/` ("" for the store's root). `..` is refused by admission.
fn folder(path: &str) -> String {
    path.split('/')
        .filter(|segment| !segment.is_empty() && *segment != ".")
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn claim(name: &str, store: &str, path: &str) -> PathClaim {
        PathClaim {
            name: name.into(),
            store_kind: "GitStateStore".into(),
            store_name: store.into(),
            path: path.into(),
        }
    }

    #[test]
    fn a_destination_needs_a_path_of_its_own_in_its_store() {
        let same = claim("a", "default", "same");
        let in_use = |holder: &str| {
            Some(PathRefusal::InUse {
                path: "same".into(),
                store: "default".into(),
                holder: holder.into(),
            })
        };
        let bucket = PathClaim {
            store_kind: "BucketStateStore".into(),
            ..same.clone()
        };
        let cases: Vec<(&str, PathClaim, Vec<PathClaim>, Option<PathRefusal>)> = vec![
            ("alone", claim("b", "default", "same"), vec![], None),
            (
                "no path",
                claim("b", "default", ""),
                vec![],
                Some(PathRefusal::Required),
            ),
            (
                "same path, same store",
                claim("b", "default", "same"),
                vec![same.clone()],
                in_use("a"),
            ),
            (
                "same folder written differently",
                claim("b", "default", "./same/"),
                vec![same.clone()],
                Some(PathRefusal::InUse {
                    path: "./same/".into(),
                    store: "default".into(),
                    holder: "a".into(),
                }),
            ),
            (
                "both at the root",
                claim("b", "default", "/"),
                vec![claim("a", "default", ".")],
                Some(PathRefusal::InUse {
                    path: "/".into(),
                    store: "default".into(),
                    holder: "a".into(),
                }),
            ),
            (
                "its own stored self (an update keeping its path)",
                claim("a", "default", "same"),
                vec![same.clone()],
                None,
            ),
            (
                "another store of the same kind",
                claim("b", "other", "same"),
                vec![same.clone()],
                None,
            ),
            (
                "a store of the other kind and the same name",
                claim("b", "default", "same"),
                vec![bucket],
                None,
            ),
            (
                "a nested folder is not the same folder",
                claim("b", "default", "same/inner"),
                vec![same.clone()],
                None,
            ),
            (
                "a pathless one holds nothing",
                claim("b", "default", "same"),
                vec![claim("a", "default", "")],
                None,
            ),
        ];
        for (name, c, before, want) in cases {
            assert_eq!(refusal(&c, &before), want, "{name}");
        }
    }

    #[test]
    fn refusals_are_in_kratix_words() {
        let in_use = PathRefusal::InUse {
            path: "same".into(),
            store: "default".into(),
            holder: "a".into(),
        };
        assert_eq!(
            in_use.to_string(),
            "destination path 'same' already exists for state store 'default'"
        );
        assert_eq!(
            in_use.message(),
            "destination path 'same' already exists for state store 'default' (Destination \"a\")"
        );
        assert_eq!(PathRefusal::Required.message(), "path field is required");
    }

    fn stored(name: &str, created: &str, path: &str) -> Object {
        serde_json::from_value(json!({
            "apiVersion": "platform.kratix.io/v1alpha1",
            "kind": "Destination",
            "metadata": {"name": name, "creationTimestamp": created},
            "spec": {"path": path, "stateStoreRef": {"kind": "GitStateStore", "name": "default"}},
        }))
        .expect("a Destination")
    }

    #[test]
    fn among_stored_destinations_the_oldest_holds_the_path() {
        let all = [
            stored("late", "2026-01-01T00:00:09Z", "same"),
            stored("b-early", "2026-01-01T00:00:01Z", "same"),
            stored("a-early", "2026-01-01T00:00:01Z", "same"),
            stored("pathless", "2026-01-01T00:00:00Z", ""),
            stored("elsewhere", "2026-01-01T00:00:05Z", "other"),
        ];
        let cases = [
            ("a-early", None),
            ("b-early", Some("a-early")),
            ("late", Some("a-early")),
            ("elsewhere", None),
            ("missing", None),
        ];
        let refused = refusals(&all);
        for (name, holder) in cases {
            let want = holder.map(|h| PathRefusal::InUse {
                path: "same".into(),
                store: "default".into(),
                holder: h.into(),
            });
            assert_eq!(refused.get(name).cloned(), want, "{name}");
        }
        assert_eq!(refused.get("pathless"), Some(&PathRefusal::Required));
    }
}
