//! Core `v1` Secret, the source of state-store credentials.

use std::collections::BTreeMap;

use base64::Engine;
use serde_json::Value;

pub use k8s_openapi::api::core::v1::Secret;

/// Why a Secret's values cannot be stored. Messages name the field, never its value: a parser's
/// own message may quote the value (`invalid type: integer 1234`) or part of it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// `data` or `stringData` is not a mapping.
    #[error("{field}: must be a mapping of keys to strings")]
    NotAMapping { field: &'static str },
    /// A value is a number, a list, … instead of a string.
    #[error("{field}.{key}: must be a string")]
    NotAString { field: &'static str, key: String },
    /// `data.<key>` is not valid base64.
    #[error("data.{key}: is not valid base64")]
    BadBase64 { key: String },
    /// A key that Kubernetes would refuse.
    #[error("{field}: key {key:?} is not valid (use letters, digits, '-', '_' and '.')")]
    BadKey { field: &'static str, key: String },
}

/// Checks the shape of a Secret's `data` and `stringData` (as parsed from YAML or JSON) before
/// it is read as a typed Secret, so that refusals never echo a value.
pub fn check_values(secret: &Value) -> Result<(), Error> {
    for field in ["data", "stringData"] {
        let map = match secret.get(field) {
            None | Some(Value::Null) => continue,
            Some(Value::Object(map)) => map,
            Some(_) => return Err(Error::NotAMapping { field }),
        };
        for (key, value) in map {
            if !valid_key(key) {
                return Err(Error::BadKey {
                    field,
                    key: key.clone(),
                });
            }
            let Value::String(text) = value else {
                return Err(Error::NotAString {
                    field,
                    key: key.clone(),
                });
            };
            if field == "data"
                && base64::engine::general_purpose::STANDARD
                    .decode(text)
                    .is_err()
            {
                return Err(Error::BadBase64 { key: key.clone() });
            }
        }
    }
    Ok(())
}

/// Kubernetes' rule for Secret keys: `[-._a-zA-Z0-9]+`.
fn valid_key(key: &str) -> bool {
    !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// The Secret's values by key: `stringData` overrides `data`, as the API server does on write.
/// Values are never logged or shown.
pub fn values(secret: &Secret) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for (k, v) in secret.data.iter().flatten() {
        out.insert(k.clone(), v.0.clone());
    }
    for (k, v) in secret.string_data.iter().flatten() {
        out.insert(k.clone(), v.clone().into_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_are_checked_without_being_echoed() {
        let cases = [
            (json!({}), Ok(())),
            (
                json!({"data": {"a": "aHVudGVyMg=="}, "stringData": {"b.c_d-e": "x"}}),
                Ok(()),
            ),
            (json!({"data": null}), Ok(())),
            (
                json!({"data": {"password": "!hunter2!"}}),
                Err(Error::BadBase64 {
                    key: "password".into(),
                }),
            ),
            (
                json!({"stringData": {"pin": 98_765_432_109_876_i64}}),
                Err(Error::NotAString {
                    field: "stringData",
                    key: "pin".into(),
                }),
            ),
            (
                json!({"data": {"list": ["aGk="]}}),
                Err(Error::NotAString {
                    field: "data",
                    key: "list".into(),
                }),
            ),
            (
                json!({"stringData": "hunter2"}),
                Err(Error::NotAMapping {
                    field: "stringData",
                }),
            ),
            (
                json!({"data": {"a/b": "aGk="}}),
                Err(Error::BadKey {
                    field: "data",
                    key: "a/b".into(),
                }),
            ),
        ];
        for (secret, want) in cases {
            let got = check_values(&secret);
            assert_eq!(got, want, "{secret}");
            if let Err(e) = got {
                let shown = e.to_string();
                for value in ["hunter2", "98765432109876", "aGk="] {
                    assert!(!shown.contains(value), "{shown}");
                }
            }
        }
    }
}
