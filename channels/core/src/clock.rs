//! The one wall clock of Butler and its channel adapters: milliseconds since the Unix epoch,
//! the time unit stored everywhere (event times, inbox and outbox rows, schedules).
//!
//! This must never return a time in another unit or panic: a clock before 1970 reads as 0.

/// Milliseconds since the Unix epoch, the one time unit stored everywhere.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
