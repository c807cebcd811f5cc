//! How long between two times stored as RFC 3339 (a run's start and end, an object's creation
//! and now), as kubectl prints it.

/// How long from `start` to `end`, kubectl-style (`45s`, `3m4s`, `2h5m`); empty when `end` is not
/// there yet (a run still going), is before `start`, or a time cannot be read.
pub(crate) fn duration(start: &str, end: &str) -> String {
    let (Ok(start), Ok(end)) = (
        start.parse::<jiff::Timestamp>(),
        end.parse::<jiff::Timestamp>(),
    ) else {
        return String::new();
    };
    let secs = end.as_second() - start.as_second();
    if secs < 0 {
        return String::new();
    }
    match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m{}s", s / 60, s % 60),
        s => format!("{}h{}m", s / 3600, (s % 3600) / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_like_kubectls() {
        let cases = [
            ("2026-01-01T10:00:00Z", "2026-01-01T10:00:45Z", "45s"),
            ("2026-01-01T10:00:00Z", "2026-01-01T10:03:04Z", "3m4s"),
            ("2026-01-01T10:00:00Z", "2026-01-01T12:05:59Z", "2h5m"),
            ("2026-01-01T10:00:00Z", "", ""),
            ("", "2026-01-01T10:00:00Z", ""),
            ("2026-01-01T10:00:05Z", "2026-01-01T10:00:00Z", ""),
            ("not a time", "2026-01-01T10:00:00Z", ""),
        ];
        for (start, end, want) in cases {
            assert_eq!(duration(start, end), want, "{start} → {end}");
        }
    }
}
