//! The rules Kubernetes applies to names, label keys and values, and the rule for paths inside
//! a state store. Every check returns the reason a value is refused, worded like the API server's.
//!
//! Kubernetes' rules: `k8s.io/apimachinery/pkg/util/validation` (`IsDNS1123Label`,
//! `IsDNS1123Subdomain`, `IsQualifiedName`, `IsValidLabelValue`),
//! <https://github.com/kubernetes/apimachinery/blob/v0.31.0/pkg/util/validation/validation.go>.

/// Longest DNS-1123 label (namespaces, container names, label names).
pub(crate) const DNS1123_LABEL_MAX: usize = 63;
/// Longest DNS-1123 subdomain (most objects' `metadata.name`).
pub(crate) const DNS1123_SUBDOMAIN_MAX: usize = 253;
/// Longest label value.
pub(crate) const LABEL_VALUE_MAX: usize = 63;

/// The name Kratix gives an object it derives from others (a PromiseRevision, a
/// ResourceBinding): `name` cut to 56 characters without trailing punctuation, `-`, and the
/// first five hex digits of the md5 of `inputs` joined by `-` (of `name` when none), as
/// `objectutil.GenerateDeterministicObjectName` does:
/// <https://github.com/syntasso/kratix/blob/ae170e22e974e45bb7cfda00986057e01b3ccfde/lib/objectutil/name.go>.
pub(crate) fn deterministic_name(name: &str, inputs: &[&str]) -> String {
    let hashed = if inputs.is_empty() {
        name.to_string()
    } else {
        inputs.join("-")
    };
    let id = super::hash::md5_hex(hashed.as_bytes());
    let mut base: String = name.chars().take(DNS1123_LABEL_MAX - 1 - 5 - 1).collect();
    while base.ends_with(|c: char| !c.is_ascii_alphanumeric()) {
        base.pop();
    }
    format!("{base}-{}", &id[..5])
}

fn is_alnum_lower(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, without the length limit.
fn label_shape(s: &str) -> bool {
    s.starts_with(is_alnum_lower)
        && s.ends_with(is_alnum_lower)
        && s.chars().all(|c| is_alnum_lower(c) || c == '-')
}

/// A DNS-1123 label: namespaces, container names, pipeline names.
pub(crate) fn dns1123_label(s: &str) -> Result<(), String> {
    if s.len() > DNS1123_LABEL_MAX {
        return Err(format!(
            "is longer than {DNS1123_LABEL_MAX} characters (it has {})",
            s.len()
        ));
    }
    if !label_shape(s) {
        return Err(
            "is not a lowercase RFC 1123 label (lower case alphanumeric characters or \
                    '-', starting and ending with an alphanumeric character)"
                .into(),
        );
    }
    Ok(())
}

/// A DNS-1035 label (a CRD's plural, singular, short names and lower-cased kind): a DNS-1123
/// label that starts with a letter.
pub(crate) fn dns1035_label(s: &str) -> Result<(), String> {
    dns1123_label(s)?;
    if !s.starts_with(|c: char| c.is_ascii_lowercase()) {
        return Err("is not a DNS-1035 label (it must start with a letter)".into());
    }
    Ok(())
}

/// A DNS-1123 subdomain: labels joined by dots, 253 characters at most.
pub(crate) fn dns1123_subdomain(s: &str) -> Result<(), String> {
    if s.len() > DNS1123_SUBDOMAIN_MAX {
        return Err(format!(
            "is longer than {DNS1123_SUBDOMAIN_MAX} characters (it has {})",
            s.len()
        ));
    }
    if !s.split('.').all(label_shape) {
        return Err(
            "is not a lowercase RFC 1123 subdomain (lower case alphanumeric characters, \
                    '-' or '.', starting and ending with an alphanumeric character)"
                .into(),
        );
    }
    Ok(())
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, without the length limit.
fn name_shape(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphanumeric())
        && s.ends_with(|c: char| c.is_ascii_alphanumeric())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// A label or annotation key: an optional DNS subdomain prefix and `/`, then a name of 63
/// characters at most.
pub(crate) fn qualified_name(s: &str) -> Result<(), String> {
    let (prefix, name) = match s.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, s),
    };
    if let Some(prefix) = prefix {
        if prefix.is_empty() {
            return Err("has an empty prefix before '/'".into());
        }
        dns1123_subdomain(prefix).map_err(|reason| format!("has a prefix that {reason}"))?;
    }
    if name.is_empty() {
        return Err("has an empty name part".into());
    }
    if name.len() > DNS1123_LABEL_MAX {
        return Err(format!(
            "has a name part longer than {DNS1123_LABEL_MAX} characters"
        ));
    }
    if !name_shape(name) {
        return Err(
            "has a name part that is not alphanumeric characters, '-', '_' or '.', \
                    starting and ending with an alphanumeric character"
                .into(),
        );
    }
    Ok(())
}

/// A label value: empty, or 63 characters at most shaped like a qualified name's name part.
pub(crate) fn label_value(s: &str) -> Result<(), String> {
    if s.is_empty() {
        return Ok(());
    }
    if s.len() > LABEL_VALUE_MAX {
        return Err(format!(
            "is longer than {LABEL_VALUE_MAX} characters (it has {})",
            s.len()
        ));
    }
    if !name_shape(s) {
        return Err(
            "is not a label value (empty, or alphanumeric characters, '-', '_' or '.', \
                    starting and ending with an alphanumeric character)"
                .into(),
        );
    }
    Ok(())
}

/// A path inside a state store (`spec.path` of Destinations and state stores): never climbing
/// up with `..` (a Destination's files would land in another's folder, or outside the store's
/// `spec.path`), no control characters. A leading `/` is allowed: Kratix documents `/` as the
/// root, and its Git writer reads `/platform` as `platform`, which the layout does too.
pub(crate) fn store_path(s: &str) -> Result<(), String> {
    if s.chars().any(char::is_control) {
        return Err("contains control characters".into());
    }
    if s.split('/').any(|segment| segment == "..") {
        return Err("climbs out of its folder with \"..\"".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(f: fn(&str) -> Result<(), String>, cases: &[(&str, bool)]) {
        for (s, ok) in cases {
            assert_eq!(f(s).is_ok(), *ok, "{s:?}: {:?}", f(s));
        }
    }

    #[test]
    fn dns1123_labels() {
        let long = "a".repeat(63);
        let too_long = "a".repeat(64);
        check(
            dns1123_label,
            &[
                ("a", true),
                ("a-1", true),
                ("0a", true),
                (&long, true),
                (&too_long, false),
                ("", false),
                ("A", false),
                ("-a", false),
                ("a-", false),
                ("a.b", false),
                ("a_b", false),
                ("a/b", false),
                ("..", false),
                ("é", false),
            ],
        );
    }

    #[test]
    fn dns1035_labels() {
        check(
            dns1035_label,
            &[
                ("webapps", true),
                ("web-app2", true),
                ("2apps", false),
                ("../x", false),
                ("Apps", false),
                ("", false),
            ],
        );
    }

    #[test]
    fn dns1123_subdomains() {
        let long = [
            "a".repeat(63),
            "b".repeat(63),
            "c".repeat(63),
            "d".repeat(61),
        ]
        .join(".");
        assert_eq!(long.len(), 253);
        let too_long = format!("{long}e");
        check(
            dns1123_subdomain,
            &[
                ("a", true),
                ("a.b-c.d", true),
                (&long, true),
                (&too_long, false),
                ("", false),
                ("a..b", false),
                (".a", false),
                ("a.", false),
                ("a.-b", false),
                ("a-.b", false),
                ("..", false),
                ("../x", false),
                ("a/b", false),
                ("Upper", false),
                ("a b", false),
                ("a\nb", false),
            ],
        );
    }

    #[test]
    fn qualified_names_and_label_values() {
        check(
            qualified_name,
            &[
                ("app", true),
                ("kratix.io/promise-name", true),
                ("A_b.c", true),
                ("a/b/c", false),
                ("/a", false),
                ("a/", false),
                ("Kratix.io/x", false),
                ("-a", false),
                (&"a".repeat(64), false),
                ("", false),
            ],
        );
        check(
            label_value,
            &[
                ("", true),
                ("v1.2_3-x", true),
                (&"a".repeat(63), true),
                (&"a".repeat(64), false),
                ("a b", false),
                ("a/b", false),
                ("-a", false),
                ("a\n", false),
            ],
        );
    }

    #[test]
    fn deterministic_names_are_kratix_s() {
        // md5("v1") = "6654c734ccab8f440ff0825eb443dc7f", md5("a-db") = "b5c8c7a5…"
        let long = "a".repeat(70);
        let cases: Vec<(&str, Vec<&str>, String)> = vec![
            ("db", vec!["v1"], "db-6654c".into()),
            (
                "db",
                vec![],
                format!("db-{}", &crate::api::hash::md5_hex(b"db")[..5]),
            ),
            (
                "a-db",
                vec![],
                format!("a-db-{}", &crate::api::hash::md5_hex(b"a-db")[..5]),
            ),
            (
                &long,
                vec!["x"],
                format!(
                    "{}-{}",
                    "a".repeat(56),
                    &crate::api::hash::md5_hex(b"x")[..5]
                ),
            ),
            ("db--", vec!["v1"], "db-6654c".into()),
        ];
        for (name, inputs, want) in cases {
            assert_eq!(deterministic_name(name, &inputs), want, "{name} {inputs:?}");
        }
    }

    #[test]
    fn store_paths() {
        check(
            store_path,
            &[
                ("", true),
                (".", true),
                ("/", true),
                ("dev", true),
                ("clusters/dev", true),
                ("a/./b", true),
                ("..a/b..", true),
                ("../x", false),
                ("a/../../x", false),
                ("a/..", false),
                ("..", false),
                ("/etc", true),
                ("/platform/", true),
                ("/../x", false),
                ("a\0b", false),
                ("a\nb", false),
            ],
        );
    }
}
