//! Virtual and wall time share one unit: integer nanoseconds since the start of a run.
//!
//! Integers keep event ordering exact and runs bit-for-bit reproducible; 2^64 ns is 584 years.

/// A point in time or a duration, in nanoseconds.
pub type Time = u64;

/// Nanoseconds per second.
pub const NANOS_PER_SEC: f64 = 1e9;

/// Seconds (non-negative, finite) to [`Time`], rounded to the nearest nanosecond.
#[inline]
pub fn from_secs(s: f64) -> Time {
    debug_assert!(s.is_finite() && s >= 0.0, "negative or non-finite duration {s}");
    round(s * NANOS_PER_SEC)
}

/// `x.round() as Time` (half away from zero, saturating; NaN and negatives are 0) without the call
/// into libm that `f64::round` is on the x86-64 baseline: the evaluator rounds two service times and
/// a deadline per request. A cast truncates; the fraction it dropped, exact below 2^52 (above, `x`
/// is whole), says whether to add one.
#[inline]
pub fn round(x: f64) -> Time {
    let t = x as Time;
    t.saturating_add(u64::from(x - t as f64 >= 0.5))
}

/// [`Time`] to seconds.
pub fn to_secs(t: Time) -> f64 {
    t as f64 / NANOS_PER_SEC
}

/// A std duration to [`Time`], saturating.
pub fn from_duration(d: std::time::Duration) -> Time {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn round_is_std_round_at_the_edges() {
        let edges = [
            0.0,
            -0.0,
            0.5,
            0.49999999999999994,
            1.5,
            2.5,
            -0.5,
            -2.7,
            4503599627370495.5,
            4503599627370497.0,
            9007199254740993.0,
            1.8446744073709552e19,
            1e30,
            f64::MAX,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            f64::MIN_POSITIVE,
        ];
        for x in edges {
            assert_eq!(round(x), x.round() as Time, "{x}");
        }
    }

    proptest! {
        /// Any bit pattern rounds as `f64::round` then a saturating cast does.
        #[test]
        fn round_is_std_round(bits in any::<u64>(), small in 0.0..1e12f64) {
            let x = f64::from_bits(bits);
            prop_assert_eq!(round(x), x.round() as Time, "{}", x);
            prop_assert_eq!(round(small), small.round() as Time, "{}", small);
        }
    }
}
