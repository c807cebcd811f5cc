//! The discovery documents, made from the kinds the home knows (Kratix's, the core kinds it
//! stores, every Promise's request kind): what kubectl and client libraries read to map a
//! name such as `postgresql` to its group, version, plural and scope.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    APIGroup, APIGroupList, APIResource, APIResourceList, APIVersions, GroupVersionForDiscovery,
    ServerAddressByClientCIDR,
};
use k8s_openapi::apimachinery::pkg::version::Info;

use crate::api::KindInfo;

/// The verbs this API serves on every resource.
pub(crate) const VERBS: [&str; 3] = ["get", "list", "watch"];

/// `/version`: the Kubernetes version whose API this one follows, and kratix-rs's own.
pub(crate) fn version() -> Info {
    Info {
        major: "1".into(),
        minor: "33".into(),
        git_version: format!("v1.33.0-kratix-rs.{}", env!("CARGO_PKG_VERSION")),
        platform: format!("{}/{}", std::env::consts::OS, std::env::consts::ARCH),
        ..Info::default()
    }
}

/// `/api`.
pub(crate) fn core_versions(server: &str) -> APIVersions {
    APIVersions {
        versions: vec!["v1".into()],
        server_address_by_client_cidrs: vec![ServerAddressByClientCIDR {
            client_cidr: "0.0.0.0/0".into(),
            server_address: server.into(),
        }],
    }
}

/// Each named group's versions, in the order the kinds come (the first is preferred).
fn group_versions(kinds: &[KindInfo]) -> BTreeMap<&str, Vec<&str>> {
    let mut groups: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for kind in kinds.iter().filter(|k| !k.group.is_empty()) {
        let versions = groups.entry(kind.group.as_str()).or_default();
        if !versions.contains(&kind.version.as_str()) {
            versions.push(kind.version.as_str());
        }
    }
    groups
}

fn api_group(name: &str, versions: &[&str]) -> APIGroup {
    let of = |v: &&str| GroupVersionForDiscovery {
        group_version: format!("{name}/{v}"),
        version: v.to_string(),
    };
    APIGroup {
        name: name.into(),
        preferred_version: versions.first().map(of),
        versions: versions.iter().map(of).collect(),
        server_address_by_client_cidrs: None,
    }
}

/// `/apis`.
pub(crate) fn groups(kinds: &[KindInfo]) -> APIGroupList {
    APIGroupList {
        groups: group_versions(kinds)
            .iter()
            .map(|(name, versions)| api_group(name, versions))
            .collect(),
    }
}

/// `/apis/<group>`, if the home knows that group.
pub(crate) fn group(kinds: &[KindInfo], name: &str) -> Option<APIGroup> {
    group_versions(kinds)
        .get(name)
        .map(|versions| api_group(name, versions))
}

/// `/api/v1` or `/apis/<group>/<version>`, if the home knows kinds there.
pub(crate) fn resources(kinds: &[KindInfo], group: &str, version: &str) -> Option<APIResourceList> {
    let here: Vec<&KindInfo> = kinds
        .iter()
        .filter(|k| k.group == group && k.version == version)
        .collect();
    if here.is_empty() {
        return None;
    }
    Some(APIResourceList {
        group_version: here[0].api_version(),
        resources: here
            .into_iter()
            .map(|k| APIResource {
                name: k.plural.clone(),
                singular_name: k.singular.clone(),
                namespaced: k.namespaced,
                kind: k.kind.clone(),
                verbs: VERBS.iter().map(std::string::ToString::to_string).collect(),
                short_names: Some(k.short_names.clone()).filter(|s| !s.is_empty()),
                ..APIResource::default()
            })
            .collect(),
    })
}

/// The kind a path names: its group, version and plural.
pub(crate) fn kind<'a>(
    kinds: &'a [KindInfo],
    group: &str,
    version: &str,
    plural: &str,
) -> Option<&'a KindInfo> {
    kinds
        .iter()
        .find(|k| k.group == group && k.version == version && k.plural == plural)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::kinds::builtin_kinds;

    fn request_kind() -> KindInfo {
        KindInfo {
            group: "marketplace.kratix.io".into(),
            version: "v1alpha1".into(),
            kind: "postgresql".into(),
            plural: "postgresqls".into(),
            singular: "postgresql".into(),
            short_names: vec!["pg".into()],
            namespaced: true,
        }
    }

    #[test]
    fn discovery_lists_every_kind_of_the_home() {
        let mut kinds = builtin_kinds();
        kinds.push(request_kind());
        let names: Vec<String> = groups(&kinds).groups.into_iter().map(|g| g.name).collect();
        assert_eq!(names, ["marketplace.kratix.io", "platform.kratix.io"]);
        let kratix = group(&kinds, crate::api::GROUP).expect("kratix group");
        assert_eq!(
            kratix.preferred_version.map(|v| v.group_version).as_deref(),
            Some("platform.kratix.io/v1alpha1")
        );
        assert!(group(&kinds, "apps").is_none());

        let core = resources(&kinds, "", "v1").expect("core");
        assert_eq!(core.group_version, "v1");
        let secret = core
            .resources
            .iter()
            .find(|r| r.kind == "Secret")
            .expect("secrets");
        assert_eq!((secret.name.as_str(), secret.namespaced), ("secrets", true));

        let platform = resources(&kinds, crate::api::GROUP, "v1alpha1").expect("platform");
        let dest = platform
            .resources
            .iter()
            .find(|r| r.kind == "Destination")
            .expect("dest");
        assert_eq!(dest.short_names, Some(vec!["dest".to_string()]));
        assert!(!dest.namespaced);
        assert_eq!(dest.verbs, ["get", "list", "watch"]);
        let promise = platform
            .resources
            .iter()
            .find(|r| r.kind == "Promise")
            .expect("promise");
        assert_eq!(promise.short_names, None);

        let pg = resources(&kinds, "marketplace.kratix.io", "v1alpha1").expect("pg");
        assert_eq!(pg.resources[0].name, "postgresqls");
        assert_eq!(pg.resources[0].short_names, Some(vec!["pg".to_string()]));
        assert!(resources(&kinds, "marketplace.kratix.io", "v2").is_none());
        assert_eq!(
            kind(&kinds, "marketplace.kratix.io", "v1alpha1", "postgresqls")
                .map(|k| k.kind.as_str()),
            Some("postgresql")
        );
        let body = serde_json::to_value(core_versions("127.0.0.1:6443")).expect("json");
        assert_eq!(body["kind"], "APIVersions");
        assert_eq!(body["versions"][0], "v1");
    }
}
