//! The string formats `date-time` and `date` of OpenAPI schemas, as request validation checks
//! them, read with jiff; and the RFC 3339 form in which statuses store times.

/// RFC 3339 in UTC with whole seconds (`2026-01-01T00:00:00Z`), as Kubernetes stores condition
/// and status times, of milliseconds since the epoch.
pub(crate) fn rfc3339_secs(ms: i64) -> Option<String> {
    jiff::Timestamp::from_millisecond(ms)
        .ok()
        .map(|t| format!("{t:.0}"))
}

/// RFC 3339's `date-time`: `YYYY-MM-DD`, `T` (or `t` or a space), `hh:mm:ss` with an optional
/// fraction, then `Z` (or `z`) or an offset `±hh:mm`. Leap seconds (`:60`) pass, as in RFC 3339.
/// jiff's own timestamp parser takes more than RFC 3339 does (no seconds, basic format, bracketed
/// time zones), so the shape is checked here and jiff only checks the values.
pub(crate) fn is_date_time(text: &str) -> bool {
    let Some((local, offset)) = split_offset(text) else {
        return false;
    };
    let (whole, fraction) = local.split_once('.').unwrap_or((local, "0"));
    let offset_ok = offset.is_none_or(|offset| {
        fits(offset, "+dd:dd") && &offset[1..3] <= "23" && &offset[4..] <= "59"
    });
    offset_ok
        && !fraction.is_empty()
        && fraction.bytes().all(|b| b.is_ascii_digit())
        && fits(whole, "dddd-dd-ddTdd:dd:dd")
        && is_date(&whole[..10])
        && is_time(&whole[11..])
}

/// A date as `%Y-%m-%d` reads it: a year of up to four digits with an optional sign, a month and
/// a day of one or two digits, and the day within the month.
pub(crate) fn is_date(text: &str) -> bool {
    jiff::civil::Date::strptime("%Y-%m-%d", text).is_ok()
}

/// `hh:mm:ss`, with second 60 for a leap second.
fn is_time(text: &str) -> bool {
    let without_leap_second = match text.strip_suffix(":60") {
        Some(hours_minutes) => format!("{hours_minutes}:59"),
        None => text.to_string(),
    };
    jiff::civil::Time::strptime("%H:%M:%S", &without_leap_second).is_ok()
}

/// The local part and the offset (`None` for `Z`), or `None` when the text ends in neither.
fn split_offset(text: &str) -> Option<(&str, Option<&str>)> {
    if let Some(local) = text.strip_suffix(['Z', 'z']) {
        return Some((local, None));
    }
    let at = text.len().checked_sub("+hh:mm".len())?;
    Some((text.get(..at)?, Some(text.get(at..)?)))
}

/// Whether `text` has the shape of `template`: `d` a digit, `+` a sign, `T` a date and time
/// separator, anything else itself.
fn fits(text: &str, template: &str) -> bool {
    text.len() == template.len()
        && text.bytes().zip(template.bytes()).all(|(c, t)| match t {
            b'd' => c.is_ascii_digit(),
            b'+' => matches!(c, b'+' | b'-'),
            b'T' => matches!(c, b'T' | b't' | b' '),
            _ => c == t,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn date_times_are_rfc_3339() {
        let cases = [
            ("2024-01-02T03:04:05Z", true),
            ("2024-01-02t03:04:05z", true),
            ("2024-01-02 03:04:05Z", true),
            ("2024-01-02T03:04:05.5+02:00", true),
            ("2024-01-02T03:04:05.123456789123-00:00", true),
            ("2024-02-29T23:59:60Z", true),
            ("0000-01-01T00:00:00Z", true),
            ("9999-12-31T23:59:59+14:00", true),
            ("2024-01-02T03:04:05+23:59", true),
            ("yesterday", false),
            ("2024-01-02", false),
            ("2024-01-02T03:04:05", false),
            ("2024-01-02T03:04Z", false),
            ("20240102T030405Z", false),
            ("2024-01-02T03:04:05+0200", false),
            ("2024-01-02T03:04:05+24:00", false),
            ("2024-01-02T03:04:05+02:60", false),
            ("2024-01-02T03:04:05Z[UTC]", false),
            ("2024-01-02T03:04:05.Z", false),
            ("2024-01-02T03:04:05,5Z", false),
            ("2024-01-02T03:04:05.5.5Z", false),
            ("+002024-01-02T03:04:05Z", false),
            ("2024-1-2T03:04:05Z", false),
            ("2024-13-02T03:04:05Z", false),
            ("2023-02-29T03:04:05Z", false),
            ("2024-01-02T24:00:00Z", false),
            ("2024-01-02T03:60:00Z", false),
            (" 2024-01-02T03:04:05Z", false),
            ("2024-01-02T03:04:0é+00:00", false),
            ("", false),
        ];
        for (text, want) in cases {
            assert_eq!(is_date_time(text), want, "{text:?}");
        }
    }

    #[test]
    fn dates_are_year_month_day() {
        let cases = [
            ("2024-01-02", true),
            ("2024-1-2", true),
            ("24-01-02", true),
            ("+2024-01-02", true),
            ("-0001-01-01", true),
            ("2024-02-29", true),
            ("2023-02-29", false),
            ("2024-13-01", false),
            ("2024-01-02T00:00:00", false),
            ("2024/01/02", false),
            ("20240102", false),
            ("2024-01-02 ", false),
            ("", false),
        ];
        for (text, want) in cases {
            assert_eq!(is_date(text), want, "{text:?}");
        }
    }
}
