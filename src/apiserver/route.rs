//! What a request asks for, read from its method, path and query as the Kubernetes API lays
//! them out: discovery documents, or objects of one resource (one, a collection, a watch).

/// The object paths of one resource: `/api/v1/...` (core) or `/apis/<group>/<version>/...`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Target {
    pub(crate) group: String,
    pub(crate) version: String,
    pub(crate) plural: String,
    /// The namespace in the path; `None` for cluster-scoped kinds and every namespace.
    pub(crate) namespace: Option<String>,
    pub(crate) name: Option<String>,
    pub(crate) subresource: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Route {
    Version,
    /// `/healthz`, `/livez`, `/readyz`.
    Health,
    /// `/api`: the core group's versions.
    CoreVersions,
    /// `/apis`: every group.
    Groups,
    /// `/apis/<group>`.
    Group(String),
    /// `/api/v1` or `/apis/<group>/<version>`: the resources of a group version.
    Resources {
        group: String,
        version: String,
    },
    Objects(Target),
    Unknown,
}

/// What the client does with a resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verb {
    Get,
    List,
    Watch,
    /// Any method that changes something: refused, the API is read-only.
    Write,
}

impl Verb {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Write => "write",
        }
    }
}

/// The query parameters the API reads.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Query {
    pub(crate) label_selector: String,
    pub(crate) field_selector: String,
    pub(crate) watch: bool,
    pub(crate) resource_version: String,
    pub(crate) timeout_seconds: Option<u64>,
    /// What a `Table`'s rows carry (`None`, `Metadata`, `Object`).
    pub(crate) include_object: String,
}

pub(crate) fn route(path: &str) -> Route {
    let parts: Vec<String> = path
        .split('/')
        .filter(|p| !p.is_empty())
        .map(decode)
        .collect();
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    match parts.as_slice() {
        ["version"] => Route::Version,
        ["healthz" | "livez" | "readyz", ..] => Route::Health,
        ["api"] => Route::CoreVersions,
        ["apis"] => Route::Groups,
        ["apis", group] => Route::Group(group.to_string()),
        ["api", version] => Route::Resources {
            group: String::new(),
            version: version.to_string(),
        },
        ["apis", group, version] => Route::Resources {
            group: group.to_string(),
            version: version.to_string(),
        },
        ["api", version, rest @ ..] => objects("", version, rest),
        ["apis", group, version, rest @ ..] => objects(group, version, rest),
        _ => Route::Unknown,
    }
}

fn objects(group: &str, version: &str, rest: &[&str]) -> Route {
    let target = |namespace: Option<&str>, plural: &str, name: Option<&str>, sub: Option<&str>| {
        Route::Objects(Target {
            group: group.to_string(),
            version: version.to_string(),
            plural: plural.to_string(),
            namespace: namespace.map(str::to_string),
            name: name.map(str::to_string),
            subresource: sub.map(str::to_string),
        })
    };
    match rest {
        // A Namespace is itself a cluster-scoped object under `namespaces`.
        ["namespaces", ns, plural] => target(Some(ns), plural, None, None),
        ["namespaces", ns, plural, name] => target(Some(ns), plural, Some(name), None),
        ["namespaces", ns, plural, name, sub] => target(Some(ns), plural, Some(name), Some(sub)),
        [plural] => target(None, plural, None, None),
        [plural, name] => target(None, plural, Some(name), None),
        [plural, name, sub] => target(None, plural, Some(name), Some(sub)),
        _ => Route::Unknown,
    }
}

/// The verb of a request for objects.
pub(crate) fn verb(method: &str, target: &Target, query: &Query) -> Verb {
    match method {
        "GET" | "HEAD" if query.watch => Verb::Watch,
        "GET" | "HEAD" if target.name.is_some() => Verb::Get,
        "GET" | "HEAD" => Verb::List,
        _ => Verb::Write,
    }
}

pub(crate) fn query(text: Option<&str>) -> Query {
    let mut q = Query::default();
    for pair in text
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
    {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let value = decode(&value.replace('+', " "));
        match key {
            "labelSelector" => q.label_selector = value,
            "fieldSelector" => q.field_selector = value,
            "watch" => q.watch = matches!(value.as_str(), "true" | "1"),
            "resourceVersion" => q.resource_version = value,
            "timeoutSeconds" => q.timeout_seconds = value.parse().ok(),
            "includeObject" => q.include_object = value,
            _ => {}
        }
    }
    q
}

/// Percent-decoding of a path segment or query value; a malformed escape stays as it is.
fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(
        group: &str,
        plural: &str,
        ns: Option<&str>,
        name: Option<&str>,
        sub: Option<&str>,
    ) -> Route {
        Route::Objects(Target {
            group: group.into(),
            version: if group.is_empty() { "v1" } else { "v1alpha1" }.into(),
            plural: plural.into(),
            namespace: ns.map(Into::into),
            name: name.map(Into::into),
            subresource: sub.map(Into::into),
        })
    }

    #[test]
    fn paths_route_as_the_kubernetes_api_lays_them_out() {
        let g = "platform.kratix.io";
        let cases = [
            ("/version", Route::Version),
            ("/version/", Route::Version),
            ("/healthz", Route::Health),
            ("/api", Route::CoreVersions),
            ("/apis", Route::Groups),
            ("/apis/platform.kratix.io", Route::Group(g.into())),
            (
                "/api/v1",
                Route::Resources {
                    group: String::new(),
                    version: "v1".into(),
                },
            ),
            (
                "/apis/platform.kratix.io/v1alpha1",
                Route::Resources {
                    group: g.into(),
                    version: "v1alpha1".into(),
                },
            ),
            ("/api/v1/secrets", t("", "secrets", None, None, None)),
            ("/api/v1/namespaces", t("", "namespaces", None, None, None)),
            (
                "/api/v1/namespaces/default",
                t("", "namespaces", None, Some("default"), None),
            ),
            (
                "/api/v1/namespaces/default/secrets",
                t("", "secrets", Some("default"), None, None),
            ),
            (
                "/api/v1/namespaces/default/secrets/db",
                t("", "secrets", Some("default"), Some("db"), None),
            ),
            (
                "/apis/platform.kratix.io/v1alpha1/promises/redis",
                t(g, "promises", None, Some("redis"), None),
            ),
            (
                "/apis/platform.kratix.io/v1alpha1/promises/redis/status",
                t(g, "promises", None, Some("redis"), Some("status")),
            ),
            (
                "/apis/platform.kratix.io/v1alpha1/namespaces/a/works/w%2Dx/status",
                t(g, "works", Some("a"), Some("w-x"), Some("status")),
            ),
            (
                "/apis/platform.kratix.io/v1alpha1/namespaces/a/works/w/status/more",
                Route::Unknown,
            ),
            ("/openapi/v2", Route::Unknown),
            ("/", Route::Unknown),
        ];
        for (path, want) in cases {
            assert_eq!(route(path), want, "{path}");
        }
    }

    #[test]
    fn queries_and_verbs() {
        let q = query(Some(
            "labelSelector=app%3Dweb%2Ctier+in+%28a%29&fieldSelector=metadata.name%3Dx&watch=true&resourceVersion=42&timeoutSeconds=30&allowWatchBookmarks=true&includeObject=None",
        ));
        assert_eq!(q.include_object, "None");
        assert_eq!(q.label_selector, "app=web,tier in (a)");
        assert_eq!(q.field_selector, "metadata.name=x");
        assert!(q.watch);
        assert_eq!(q.resource_version, "42");
        assert_eq!(q.timeout_seconds, Some(30));
        assert_eq!(query(None), Query::default());
        assert!(!query(Some("watch=0&bad%zz=1")).watch);
        let named = Target {
            name: Some("x".into()),
            ..Target::default()
        };
        let all = Target::default();
        let cases = [
            ("GET", &named, false, Verb::Get),
            ("GET", &all, false, Verb::List),
            ("GET", &all, true, Verb::Watch),
            ("GET", &named, true, Verb::Watch),
            ("POST", &all, false, Verb::Write),
            ("DELETE", &named, false, Verb::Write),
            ("PATCH", &named, false, Verb::Write),
        ];
        for (method, target, watch, want) in cases {
            let q = Query {
                watch,
                ..Query::default()
            };
            assert_eq!(
                verb(method, target, &q),
                want,
                "{method} {target:?} {watch}"
            );
        }
    }
}
