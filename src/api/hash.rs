//! Spec hashes, as Kratix puts them in the `kratix.io/hash` label.
//!
//! Kratix hashes the JSON of an object's `.spec` with Go's `encoding/json`, which sorts map keys,
//! escapes `<`, `>`, `&`, U+2028 and U+2029, and prints numbers the Go way. We write that encoding
//! ourselves rather than rely on `serde_json`'s, so the hash of an object is the same here as in a
//! running Go Kratix (and doesn't change if a dependency turns on `preserve_order`).

use md5::{Digest, Md5};
use serde_json::{Number, Value};

/// md5 hex of the Go JSON encoding of `object.spec` (`null` when there is no spec, as Go encodes a
/// missing map entry).
pub fn spec_hash(object: &Value) -> String {
    md5_hex(go_json(object.get("spec").unwrap_or(&Value::Null)).as_bytes())
}

/// The hash of a resource workflow: md5 of `<promise spec hash>-<request spec hash>`.
pub fn resource_hash(promise_spec_hash: &str, request_spec_hash: &str) -> String {
    md5_hex(format!("{promise_spec_hash}-{request_spec_hash}").as_bytes())
}

/// md5 hex of some bytes.
pub fn md5_hex(bytes: &[u8]) -> String {
    hex::encode(Md5::digest(bytes))
}

/// `value` encoded as Go's `json.Marshal` encodes the same unstructured value.
pub fn go_json(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            // Sorted explicitly: `serde_json::Map` is only sorted without `preserve_order`.
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, key);
                out.push(':');
                write_value(out, item);
            }
            out.push('}');
        }
    }
}

/// Kubernetes decodes JSON numbers that fit an int64 as integers and everything else as float64;
/// Go prints a float64 in the shortest form that round-trips, with an exponent only below 1e-6 or
/// from 1e21 up, written `1e-7` / `1e+21`.
fn write_number(out: &mut String, n: &Number) {
    if let Some(i) = n.as_i64() {
        out.push_str(&i.to_string());
        return;
    }
    let Some(f) = n.as_f64() else {
        out.push_str(&n.to_string());
        return;
    };
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let formatted = format!("{f:e}");
        match formatted.split_once('e') {
            Some((mantissa, exp)) if !exp.starts_with('-') => {
                out.push_str(mantissa);
                out.push_str("e+");
                out.push_str(exp);
            }
            _ => out.push_str(&formatted),
        }
    } else {
        out.push_str(&f.to_string());
    }
}

fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", u32::from(c)));
            }
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn go_json_matches_go_encoding() {
        let cases: Vec<(Value, &str)> = vec![
            (
                json!({"b": 1, "a": {"d": [1, 2], "c": null}}),
                r#"{"a":{"c":null,"d":[1,2]},"b":1}"#,
            ),
            (
                json!("<a href=\"x\">&</a>"),
                r#""\u003ca href=\"x\"\u003e\u0026\u003c/a\u003e""#,
            ),
            (
                json!("line\nnext\ttab\u{1}\u{8}\u{c}"),
                r#""line\nnext\ttab\u0001\b\f""#,
            ),
            (json!("\u{2028}\u{2029}é/"), r#""\u2028\u2029é/""#),
            (json!(1.0), "1"),
            (json!(1.5), "1.5"),
            (json!(-0.25), "-0.25"),
            (json!(0.000_001), "0.000001"),
            (json!(0.000_000_1), "1e-7"),
            (json!(1.5e21), "1.5e+21"),
            (json!(1e20), "100000000000000000000"),
            (json!(u64::MAX), "18446744073709552000"),
            (json!(-42), "-42"),
            (json!(true), "true"),
            (json!([]), "[]"),
            (json!({}), "{}"),
        ];
        for (value, want) in cases {
            assert_eq!(go_json(&value), want, "encoding {value}");
        }
    }

    #[test]
    fn spec_hash_is_md5_of_the_go_json_of_spec() {
        let cases: Vec<(Value, &str)> = vec![
            // md5(`{"a":1}`), the JSON Go writes for map[string]interface{}{"a": 1}.
            (
                json!({"spec": {"a": 1}}),
                "bb6cb5c68df4652941caf652a366f2d8",
            ),
            // md5(`null`): Go marshals the missing map entry as null.
            (
                json!({"metadata": {"name": "x"}}),
                "37a6259cc0c1dae299a7866489dff0bd",
            ),
            // md5(`{}`)
            (json!({"spec": {}}), "99914b932bd37a50b983c5e7c90ae93b"),
        ];
        for (object, want) in cases {
            assert_eq!(spec_hash(&object), want, "hash of {object}");
        }
    }

    #[test]
    fn spec_hash_ignores_everything_but_spec_and_key_order() {
        let a = json!({"metadata": {"labels": {"x": "1"}}, "spec": {"b": 2, "a": 1}, "status": {"s": 1}});
        let b = json!({"spec": {"a": 1, "b": 2}});
        assert_eq!(spec_hash(&a), spec_hash(&b));
        let c = json!({"spec": {"a": 1, "b": 3}});
        assert_ne!(spec_hash(&a), spec_hash(&c));
    }

    #[test]
    fn resource_hash_joins_both_hashes_with_a_dash() {
        let p = "99914b932bd37a50b983c5e7c90ae93b";
        let r = "bb6cb5c68df4652941caf652a366f2d8";
        // md5 of "99914b…93b-bb6cb…2d8", computed with md5sum.
        assert_eq!(resource_hash(p, r), "701671e3c0184513e68fa69e1d7a2091");
        assert_ne!(resource_hash(p, r), resource_hash(r, p));
    }
}
