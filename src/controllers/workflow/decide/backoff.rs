//! How long a failed pipeline waits before it is retried.

/// Delay before the first retry of a failed pipeline.
pub(crate) const RETRY_BACKOFF_BASE_MS: i64 = 5_000;
/// Longest delay between retries of a failed pipeline.
pub(crate) const RETRY_BACKOFF_MAX_MS: i64 = 300_000;

/// Delay before retrying a pipeline that failed `attempts` times in a row:
/// 5 s, 10 s, 20 s, … doubling up to 5 minutes. `attempts` 0 is treated as 1.
pub(crate) fn retry_backoff_ms(attempts: u32) -> i64 {
    let doublings = attempts.saturating_sub(1);
    // 2^6 * 5 s already exceeds the cap; larger shifts would only overflow.
    if doublings >= 6 {
        return RETRY_BACKOFF_MAX_MS;
    }
    (RETRY_BACKOFF_BASE_MS << doublings).min(RETRY_BACKOFF_MAX_MS)
}
