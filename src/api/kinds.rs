//! What the control plane knows about a kind: its names (for `get` and friends) and its scope.

use serde::{Deserialize, Serialize};

/// Names and scope of a kind: Kratix's own, core Secret, and kinds that Promises define.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KindInfo {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub plural: String,
    pub singular: String,
    pub short_names: Vec<String>,
    pub namespaced: bool,
}

impl KindInfo {
    /// `group/version`, or `version` for the core group.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// Does `name` (any case) name this kind: kind, plural, singular, short name, or
    /// `plural.group` as kubectl accepts?
    pub fn is_named(&self, name: &str) -> bool {
        let name = name.to_ascii_lowercase();
        let (name, group) = match name.split_once('.') {
            Some((n, g)) => (n.to_string(), Some(g.to_string())),
            None => (name, None),
        };
        if let Some(group) = group {
            if group != self.group.to_ascii_lowercase() {
                return false;
            }
        }
        name == self.kind.to_ascii_lowercase()
            || name == self.plural
            || name == self.singular
            || self.short_names.contains(&name)
    }

    fn builtin(
        group: &str,
        version: &str,
        kind: &str,
        plural: &str,
        short: &[&str],
        namespaced: bool,
    ) -> Self {
        Self {
            group: group.to_string(),
            version: version.to_string(),
            kind: kind.to_string(),
            plural: plural.to_string(),
            singular: kind.to_ascii_lowercase(),
            short_names: short.iter().map(|s| s.to_string()).collect(),
            namespaced,
        }
    }
}

/// The kinds that exist before any Promise is applied.
pub fn builtin_kinds() -> Vec<KindInfo> {
    use super::{GROUP, VERSION};
    vec![
        KindInfo::builtin(GROUP, VERSION, "Promise", "promises", &[], false),
        KindInfo::builtin(
            GROUP,
            VERSION,
            "Destination",
            "destinations",
            &["dest"],
            false,
        ),
        KindInfo::builtin(
            GROUP,
            VERSION,
            "GitStateStore",
            "gitstatestores",
            &[],
            false,
        ),
        KindInfo::builtin(
            GROUP,
            VERSION,
            "BucketStateStore",
            "bucketstatestores",
            &[],
            false,
        ),
        KindInfo::builtin(GROUP, VERSION, "Work", "works", &[], true),
        KindInfo::builtin(
            GROUP,
            VERSION,
            "WorkPlacement",
            "workplacements",
            &["wp"],
            true,
        ),
        KindInfo::builtin(GROUP, VERSION, "PipelineRun", "pipelineruns", &["pr"], true),
        KindInfo::builtin("", "v1", "Secret", "secrets", &[], true),
    ]
}
