//! A YAML document read straight into JSON with a budget on its expanded size.
//!
//! serde_yaml replays an anchor's events for every alias and limits only how many aliases are
//! followed, not how much they hold: a few hundred kilobytes of YAML with one wide anchor and
//! thousands of aliases to it expand to billions of values. Counting what is built, and stopping
//! when it passes the budget, bounds memory whatever the aliases do.

use std::cell::Cell;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// The error when the budget runs out.
pub(super) const EXHAUSTED: &str = "aliases expand the document beyond its size limit";

/// Reads one value with `budget` units to spend: one per value, plus the length of every string
/// and key. Without aliases a document costs about its size in bytes at most.
pub(super) fn value<'de, D: Deserializer<'de>>(de: D, budget: usize) -> Result<Value, D::Error> {
    Seed {
        left: &Cell::new(budget),
    }
    .deserialize(de)
}

#[derive(Clone, Copy)]
struct Seed<'a> {
    left: &'a Cell<usize>,
}

impl Seed<'_> {
    fn charge<E: de::Error>(&self, units: usize) -> Result<(), E> {
        match self.left.get().checked_sub(units.saturating_add(1)) {
            Some(left) => {
                self.left.set(left);
                Ok(())
            }
            None => Err(E::custom(EXHAUSTED)),
        }
    }
}

impl<'de> DeserializeSeed<'de> for Seed<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Value, D::Error> {
        de.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        self.charge(0)?;
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        self.charge(0)?;
        Ok(Value::from(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        self.charge(0)?;
        Ok(Value::from(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        self.charge(0)?;
        // As Kubernetes: JSON has no infinities or NaN.
        Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom(format!("{v} is not a JSON number")))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        self.charge(v.len())?;
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        self.charge(v.len())?;
        Ok(Value::String(v))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        self.charge(0)?;
        Ok(Value::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        self.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, de: D) -> Result<Value, D::Error> {
        self.deserialize(de)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        self.charge(0)?;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        self.charge(0)?;
        let mut out = Map::new();
        while let Some(key) = map.next_key_seed(self)? {
            let key = key_text(key).map_err(de::Error::custom)?;
            let value = map.next_value_seed(self)?;
            // As Kubernetes' YAML reader: a key given twice is an error, not "last one wins".
            if out.contains_key(&key) {
                return Err(de::Error::custom(format!("duplicate key {key:?}")));
            }
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }

    fn visit_enum<A: de::EnumAccess<'de>>(self, data: A) -> Result<Value, A::Error> {
        let (tag, _) = data.variant::<String>()?;
        Err(de::Error::custom(format!(
            "the YAML tag !{tag} is not supported: Kubernetes objects are plain JSON"
        )))
    }
}

/// A mapping key as JSON's string key, converted as Kubernetes' YAML reader converts scalars.
fn key_text(key: Value) -> Result<String, String> {
    match key {
        Value::String(s) => Ok(s),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        Value::Null => Ok("null".into()),
        other => Err(format!(
            "a mapping key must be a scalar, not {}",
            if other.is_array() {
                "a list"
            } else {
                "a mapping"
            }
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(text: &str, budget: usize) -> Result<Value, String> {
        value(serde_yaml::Deserializer::from_str(text), budget).map_err(|e| e.to_string())
    }

    #[test]
    fn reads_yaml_as_json() {
        // (yaml, json)
        let cases = [
            ("a: 1", json!({"a": 1})),
            (
                "a: [x, 2.5, true, null, ~]",
                json!({"a": ["x", 2.5, true, null, null]}),
            ),
            (
                "1: a\ntrue: b\n~: c",
                json!({"1": "a", "true": "b", "null": "c"}),
            ),
            ("a: !!str 12", json!({"a": "12"})),
            (
                "a: &x {k: v}\nb: *x",
                json!({"a": {"k": "v"}, "b": {"k": "v"}}),
            ),
            ("a: |\n  two\n  lines\n", json!({"a": "two\nlines\n"})),
            (
                "a: -9223372036854775808\nb: 18446744073709551615",
                json!({"a": i64::MIN, "b": u64::MAX}),
            ),
        ];
        for (yaml, want) in cases {
            assert_eq!(read(yaml, 1000), Ok(want), "{yaml}");
        }
    }

    #[test]
    fn refuses_what_json_cannot_hold() {
        // (yaml, error start)
        let cases = [
            ("a: .inf", "inf is not a JSON number"),
            ("a: .nan", "NaN is not a JSON number"),
            ("? [a]\n: b", "a mapping key must be a scalar, not a list"),
            ("a: !custom x", "the YAML tag !custom is not supported"),
            ("a: 1\nb: 2\na: 3", "duplicate key \"a\""),
            ("1: a\n\"1\": b", "duplicate key \"1\""),
        ];
        for (yaml, want) in cases {
            let err = read(yaml, 1000).expect_err(yaml);
            assert!(err.contains(want), "{yaml}: {err}");
        }
    }

    #[test]
    fn the_budget_counts_expanded_values_and_bytes() {
        // `{a: "xyz"}`: the mapping, the key (1 + 1 byte) and the value (1 + 3 bytes).
        assert!(read("a: xyz", 7).is_ok());
        let err = read("a: xyz", 6).expect_err("one unit short");
        assert!(err.contains(EXHAUSTED), "{err}");
        // A wide anchor named many times: small text, large expansion.
        let anchor: Vec<String> = (0..1000).map(|i| format!("v{i}")).collect();
        let aliases = vec!["*w"; 1000].join(", ");
        let text = format!("w: &w [{}]\nmany: [{aliases}]\n", anchor.join(", "));
        assert!(text.len() < 16 * 1024);
        let err = read(&text, 1_000_000).expect_err("a million values");
        assert!(err.contains(EXHAUSTED), "{err}");
    }
}
