//! Virtual and wall time share one unit: integer nanoseconds since the start of a run.
//!
//! Integers keep event ordering exact and runs bit-for-bit reproducible; 2^64 ns is 584 years.

/// A point in time or a duration, in nanoseconds.
pub type Time = u64;

/// Nanoseconds per second.
pub const NANOS_PER_SEC: f64 = 1e9;

/// Seconds (non-negative, finite) to [`Time`], rounded to the nearest nanosecond.
pub fn from_secs(s: f64) -> Time {
    debug_assert!(s.is_finite() && s >= 0.0, "negative or non-finite duration {s}");
    (s * NANOS_PER_SEC).round() as Time
}

/// [`Time`] to seconds.
pub fn to_secs(t: Time) -> f64 {
    t as f64 / NANOS_PER_SEC
}

/// A std duration to [`Time`], saturating.
pub fn from_duration(d: std::time::Duration) -> Time {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
