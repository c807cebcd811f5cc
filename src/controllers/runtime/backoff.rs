//! Retry delays for the controllers' own failures.

use std::time::Duration;

/// Exponential backoff for the controllers' own failures: 100 ms doubling to 30 s.
#[derive(Debug)]
pub(crate) struct Backoff(Duration);

impl Default for Backoff {
    fn default() -> Self {
        Backoff(Duration::from_millis(100))
    }
}

impl Backoff {
    pub(crate) fn next(&mut self) -> Duration {
        let now = self.0;
        self.0 = (self.0 * 2).min(Duration::from_secs(30));
        now
    }
}
