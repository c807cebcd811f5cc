//! Wall-clock time in the forms objects store it. Used for display and for retry delays; the
//! order of runs never comes from it.

use jiff::Timestamp;

/// Now as RFC 3339 in UTC with milliseconds (`2026-01-01T00:00:00.000Z`).
pub(crate) fn now_rfc3339() -> String {
    format!("{:.3}", Timestamp::now())
}

pub(crate) fn now_ms() -> i64 {
    Timestamp::now().as_millisecond()
}

/// Milliseconds since the epoch of an RFC 3339 time.
pub(crate) fn parse_ms(text: &str) -> Option<i64> {
    text.parse::<Timestamp>()
        .ok()
        .map(jiff::Timestamp::as_millisecond)
}

pub(crate) use crate::api::formats::rfc3339_secs;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_and_parses_the_stored_forms() {
        let cases: &[(i64, &str, &str)] = &[
            (0, "1970-01-01T00:00:00Z", "1970-01-01T00:00:00.000Z"),
            (
                1_767_225_600_123,
                "2026-01-01T00:00:00Z",
                "2026-01-01T00:00:00.123Z",
            ),
            (
                1_767_225_601_000,
                "2026-01-01T00:00:01Z",
                "2026-01-01T00:00:01.000Z",
            ),
        ];
        for (ms, secs, millis) in cases {
            assert_eq!(rfc3339_secs(*ms).as_deref(), Some(*secs), "{ms}");
            let t = Timestamp::from_millisecond(*ms).expect("in range");
            assert_eq!(format!("{t:.3}"), *millis, "{ms}");
            assert_eq!(parse_ms(millis), Some(*ms), "{millis}");
        }
        assert_eq!(
            parse_ms("2026-01-01T01:00:00+01:00"),
            Some(1_767_225_600_000)
        );
        assert_eq!(parse_ms("yesterday"), None);
    }
}
