//! Online size estimation: a served request's CPU time is not known when it arrives, so it is
//! estimated from its input (items times an exponentially weighted mean of the CPU seconds per item
//! measured so far), and each CPU answer refines the mean. The allocator's interval work and the
//! dispatcher's deadline checks read these estimates; the error is measured and reported.

use crate::model::Time;
use crate::model::time::{from_secs, to_secs};

/// Weight of each new measurement: about the last 20 CPU answers dominate, so the mean follows a
/// machine that slows down under load within a fraction of a second of traffic.
pub const ALPHA: f64 = 0.05;

/// The per-kernel estimator.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SizeEstimator {
    secs_per_item: f64,
}

impl SizeEstimator {
    /// Starting from `items_per_sec`, the CPU reference's calibrated speed.
    pub fn new(items_per_sec: f64) -> Self {
        SizeEstimator { secs_per_item: 1.0 / items_per_sec.max(f64::MIN_POSITIVE) }
    }

    /// The estimated CPU time of `items` (at least 1 ns: a request always takes some time).
    pub fn estimate(&self, items: u64) -> Time {
        from_secs(items as f64 * self.secs_per_item).max(1)
    }

    /// A CPU worker took `took` for `items`: the mean moves toward it. Returns the relative error the
    /// estimate had (|estimate - actual| / actual), or `None` for an empty request.
    pub fn observe(&mut self, items: u64, took: Time) -> Option<f64> {
        if items == 0 || took == 0 {
            return None;
        }
        let estimate = self.estimate(items);
        let measured = to_secs(took) / items as f64;
        self.secs_per_item += ALPHA * (measured - self.secs_per_item);
        Some((estimate as f64 - took as f64).abs() / took as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_estimate_follows_a_slower_machine() {
        let mut e = SizeEstimator::new(1e8); // 10 ns per item
        assert_eq!(e.estimate(1_000), 10_000);
        for _ in 0..200 {
            e.observe(1_000, 20_000); // it takes twice as long now
        }
        let after = e.estimate(1_000) as f64;
        assert!((after - 20_000.0).abs() < 20.0, "{after}");
    }

    #[test]
    fn the_error_is_relative_to_the_measurement() {
        let mut e = SizeEstimator::new(1e8);
        assert_eq!(e.observe(1_000, 20_000), Some(0.5));
        assert_eq!(e.observe(0, 20_000), None);
    }

    proptest! {
        /// Whatever it is shown, the estimate stays within the range of what it measured.
        #[test]
        fn the_mean_stays_within_its_measurements(obs in prop::collection::vec((1u64..10_000, 1u64..10_000_000), 1..50)) {
            let mut e = SizeEstimator::new(1e8);
            let rates: Vec<f64> = obs.iter().map(|&(i, t)| t as f64 / i as f64).chain([10.0]).collect();
            for &(items, took) in &obs {
                e.observe(items, took);
            }
            let per_item = e.estimate(1_000_000) as f64 / 1e6;
            let lo = rates.iter().copied().fold(f64::MAX, f64::min);
            let hi = rates.iter().copied().fold(0.0, f64::max);
            prop_assert!(per_item >= lo * 0.999 && per_item <= hi * 1.001, "{per_item} not in [{lo}, {hi}]");
        }
    }
}
