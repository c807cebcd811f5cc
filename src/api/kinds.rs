//! What the control plane knows about a kind: its names (for `get` and friends) and its scope.

use serde::{Deserialize, Serialize};

/// Names and scope of a kind: Kratix's own, core Secret, ConfigMap and Namespace, and kinds
/// that Promises define.
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
            short_names: short.iter().map(std::string::ToString::to_string).collect(),
            namespaced,
        }
    }
}

/// The kinds that exist before any Promise is applied, by name: a misspelt kind does not compile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Builtin {
    Promise,
    Destination,
    GitStateStore,
    BucketStateStore,
    Work,
    WorkPlacement,
    PipelineRun,
    Secret,
    PromiseRevision,
    ResourceBinding,
    PromiseRelease,
    HealthRecord,
    ConfigMap,
    Namespace,
}

impl Builtin {
    pub const ALL: [Builtin; 14] = [
        Builtin::Promise,
        Builtin::Destination,
        Builtin::GitStateStore,
        Builtin::BucketStateStore,
        Builtin::Work,
        Builtin::WorkPlacement,
        Builtin::PipelineRun,
        Builtin::Secret,
        Builtin::PromiseRevision,
        Builtin::ResourceBinding,
        Builtin::PromiseRelease,
        Builtin::HealthRecord,
        Builtin::ConfigMap,
        Builtin::Namespace,
    ];

    /// The state-store kind named `kind` (a Destination's `stateStoreRef.kind`), if it is one.
    pub fn state_store(kind: &str) -> Option<Builtin> {
        match kind {
            "GitStateStore" => Some(Builtin::GitStateStore),
            "BucketStateStore" => Some(Builtin::BucketStateStore),
            _ => None,
        }
    }

    /// The built-in kind of `group` named `kind`, if it is one (a request's kind is not).
    pub fn of(group: &str, kind: &str) -> Option<Builtin> {
        Builtin::ALL
            .into_iter()
            .find(|b| b.group() == group && format!("{b:?}") == kind)
    }

    /// The kind's API group (`""` for Kubernetes' core kinds).
    fn group(self) -> &'static str {
        match self {
            Builtin::Secret | Builtin::ConfigMap | Builtin::Namespace => "",
            _ => super::GROUP,
        }
    }

    /// The kind's names, version and scope.
    pub fn info(self) -> KindInfo {
        use super::{GROUP, VERSION};
        let kratix = |kind, plural, short: &[&str], namespaced| {
            KindInfo::builtin(GROUP, VERSION, kind, plural, short, namespaced)
        };
        match self {
            Builtin::Promise => kratix("Promise", "promises", &[], false),
            Builtin::Destination => kratix("Destination", "destinations", &["dest"], false),
            Builtin::GitStateStore => kratix("GitStateStore", "gitstatestores", &[], false),
            Builtin::BucketStateStore => {
                kratix("BucketStateStore", "bucketstatestores", &[], false)
            }
            Builtin::Work => kratix("Work", "works", &[], true),
            Builtin::WorkPlacement => kratix("WorkPlacement", "workplacements", &["wp"], true),
            Builtin::PipelineRun => kratix("PipelineRun", "pipelineruns", &["pr"], true),
            Builtin::Secret => KindInfo::builtin("", "v1", "Secret", "secrets", &[], true),
            Builtin::PromiseRevision => kratix("PromiseRevision", "promiserevisions", &[], false),
            Builtin::ResourceBinding => kratix("ResourceBinding", "resourcebindings", &[], true),
            Builtin::PromiseRelease => kratix("PromiseRelease", "promisereleases", &[], false),
            Builtin::HealthRecord => kratix("HealthRecord", "healthrecords", &[], true),
            // Core kinds platforms keep data in: held as given (on Kubernetes, the cluster's).
            Builtin::ConfigMap => {
                KindInfo::builtin("", "v1", "ConfigMap", "configmaps", &["cm"], true)
            }
            Builtin::Namespace => {
                KindInfo::builtin("", "v1", "Namespace", "namespaces", &["ns"], false)
            }
        }
    }
}

/// The kinds of state store.
pub const STATE_STORES: [Builtin; 2] = [Builtin::GitStateStore, Builtin::BucketStateStore];

/// The kinds that exist before any Promise is applied.
pub fn builtin_kinds() -> Vec<KindInfo> {
    Builtin::ALL.iter().map(|k| k.info()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_builtin_kind_is_named_once_and_state_stores_are_recognised() {
        let names: Vec<String> = builtin_kinds().into_iter().map(|k| k.kind).collect();
        let unique: std::collections::BTreeSet<&String> = names.iter().collect();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        for kind in Builtin::ALL {
            assert_eq!(format!("{kind:?}"), kind.info().kind);
        }
        let cases = [
            ("GitStateStore", Some(Builtin::GitStateStore)),
            ("BucketStateStore", Some(Builtin::BucketStateStore)),
            ("gitstatestore", None),
            ("Destination", None),
            ("", None),
        ];
        for (name, want) in cases {
            assert_eq!(Builtin::state_store(name), want, "{name:?}");
        }
        for kind in Builtin::ALL {
            let info = kind.info();
            assert_eq!(Builtin::of(&info.group, &info.kind), Some(kind), "{kind:?}");
        }
        let not_builtin = [
            ("example.com", "Promise"),
            ("", "Promise"),
            (crate::api::GROUP, "Secret"),
            (crate::api::GROUP, "Thing"),
        ];
        for (group, kind) in not_builtin {
            assert_eq!(Builtin::of(group, kind), None, "{group}/{kind}");
        }
        let stores: Vec<String> = STATE_STORES.iter().map(|k| k.info().kind).collect();
        assert_eq!(stores, ["GitStateStore", "BucketStateStore"]);
    }
}
