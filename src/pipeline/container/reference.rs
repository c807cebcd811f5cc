//! The parts of an image reference that pulls and credentials need: the registry host and
//! whether a tag (or digest) is given.

/// Docker Hub's registry, the host of references that name none.
pub(crate) const DOCKER_HUB: &str = "docker.io";

/// The registry host of `image`: the first path component when it looks like a host (has a `.`
/// or `:`, or is `localhost`), else Docker Hub.
pub(crate) fn registry_host(image: &str) -> &str {
    match image.split_once('/') {
        Some((first, _)) if first.contains('.') || first.contains(':') || first == "localhost" => {
            first
        }
        _ => DOCKER_HUB,
    }
}

/// The tag of `image`, `None` when it has none; a digest counts as a tag (it is just as fixed).
pub(crate) fn tag(image: &str) -> Option<&str> {
    if let Some((_, digest)) = image.split_once('@') {
        return Some(digest);
    }
    let last = image.rsplit('/').next().unwrap_or(image);
    last.split_once(':').map(|(_, tag)| tag)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_references() {
        let cases = [
            ("redis", DOCKER_HUB, None),
            ("library/redis:7", DOCKER_HUB, Some("7")),
            ("ghcr.io/syntasso/x:v0.1.0", "ghcr.io", Some("v0.1.0")),
            ("localhost:5000/x", "localhost:5000", None),
            ("localhost/x:latest", "localhost", Some("latest")),
            ("172.30.254.1:5000/a/b:1", "172.30.254.1:5000", Some("1")),
            ("ghcr.io/x@sha256:abc", "ghcr.io", Some("sha256:abc")),
        ];
        for (image, host, want_tag) in cases {
            assert_eq!(registry_host(image), host, "{image}");
            assert_eq!(tag(image), want_tag, "{image}");
        }
    }
}
