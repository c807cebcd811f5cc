//! Checks of scalar values: strings (length, pattern, format), numbers (bounds, multiples),
//! enums, and whether a value has its declared type.

use base64::Engine as _;
use serde_json::Value;

use super::{flag, show, show_str, Walk};

impl Walk {
    pub(super) fn string(&mut self, schema: &Value, s: &str, path: &str) {
        let length = s.chars().count() as u64;
        if let Some(min) = schema.get("minLength").and_then(Value::as_u64) {
            if length < min {
                self.violation(
                    path,
                    format!("{} is shorter than the minimum length {min}", show_str(s)),
                );
            }
        }
        if let Some(max) = schema.get("maxLength").and_then(Value::as_u64) {
            if length > max {
                self.violation(
                    path,
                    format!("{} is longer than the maximum length {max}", show_str(s)),
                );
            }
        }
        if let Some(pattern) = schema.get("pattern").and_then(Value::as_str) {
            match regex::Regex::new(pattern) {
                Ok(re) if !re.is_match(s) => self.violation(
                    path,
                    format!(
                        "{} does not match the pattern {}",
                        show_str(s),
                        show_str(pattern)
                    ),
                ),
                Ok(_) => {}
                Err(_) => self.violation(
                    path,
                    format!(
                        "the schema's pattern {} is not a valid regular expression",
                        show_str(pattern)
                    ),
                ),
            }
        }
        if let Some(format) = schema.get("format").and_then(Value::as_str) {
            if !format_matches(format, s) {
                self.violation(path, format!("{} is not a valid {format}", show_str(s)));
            }
        }
    }

    pub(super) fn number(&mut self, schema: &Value, n: f64, value: &Value, path: &str) {
        let shown = show(value);
        let bound = |key: &str| schema.get(key).filter(|v| v.is_number());
        if let Some(max) = bound("maximum") {
            let limit = max.as_f64().unwrap_or(f64::INFINITY);
            if flag(schema, "exclusiveMaximum") {
                if n >= limit {
                    self.violation(
                        path,
                        format!("{shown} is greater than or equal to the exclusive maximum {max}"),
                    );
                }
            } else if n > limit {
                self.violation(path, format!("{shown} is greater than the maximum {max}"));
            }
        }
        if let Some(min) = bound("minimum") {
            let limit = min.as_f64().unwrap_or(f64::NEG_INFINITY);
            if flag(schema, "exclusiveMinimum") {
                if n <= limit {
                    self.violation(
                        path,
                        format!("{shown} is less than or equal to the exclusive minimum {min}"),
                    );
                }
            } else if n < limit {
                self.violation(path, format!("{shown} is less than the minimum {min}"));
            }
        }
        if let Some(multiple) = bound("multipleOf") {
            let m = multiple.as_f64().unwrap_or(1.0);
            if m > 0.0 && (n / m).fract() != 0.0 {
                self.violation(path, format!("{shown} is not a multiple of {multiple}"));
            }
        }
    }

    pub(super) fn check_enum(&mut self, schema: &Value, value: &Value, path: &str) {
        let Some(Value::Array(allowed)) = schema.get("enum") else {
            return;
        };
        if !allowed.iter().any(|a| a == value) {
            let listed: Vec<String> = allowed.iter().map(show).collect();
            self.violation(
                path,
                format!("{} is not one of [{}]", show(value), listed.join(", ")),
            );
        }
    }
}

/// The declared type `value` fails to be, if any.
pub(super) fn type_mismatch(schema: &Value, value: &Value) -> Option<String> {
    if flag(schema, "x-kubernetes-int-or-string") {
        return (!(value.is_string() || is_integer(value))).then(|| "integer or string".into());
    }
    let expected = schema.get("type")?.as_str()?;
    let matches = match expected {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "integer" => is_integer(value),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        // An unknown type is the schema's fault; the API server refuses such CRDs up front.
        _ => true,
    };
    (!matches).then(|| expected.to_string())
}

/// Whole-number floats count as integers, as in the API server's validator.
pub(super) fn is_integer(value: &Value) -> bool {
    match value {
        Value::Number(n) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => false,
    }
}

pub(super) fn format_matches(format: &str, s: &str) -> bool {
    match format {
        "date-time" => crate::api::formats::is_date_time(s),
        "date" => crate::api::formats::is_date(s),
        "byte" => base64::engine::general_purpose::STANDARD.decode(s).is_ok(),
        "uuid" => uuid::Uuid::parse_str(s).is_ok(),
        "ipv4" => s.parse::<std::net::Ipv4Addr>().is_ok(),
        "ipv6" => s.parse::<std::net::Ipv6Addr>().is_ok(),
        _ => true,
    }
}
