//! Online size estimation: a request's CPU time is not known when it arrives, so it is estimated from
//! its input (items times a statistic of the CPU seconds per item measured so far), and each
//! completed request refines it. The statistic is the exponentially weighted mean, or a high
//! percentile of the recent measurements (a request sized at the p95 rarely overruns its booking, at
//! the price of booking more than it takes). The live runtime, the server and the evaluator's
//! unknown-size runs share this code; the error is measured and reported.

use crate::model::Time;
use crate::model::time::{from_secs, to_secs};
use std::fmt;
use std::str::FromStr;

/// Weight of each new measurement: about the last 20 CPU answers dominate, so the mean follows a
/// machine that slows down under load within a fraction of a second of traffic.
pub const ALPHA: f64 = 0.05;

/// Measurements a percentile is taken over: enough for a p99 to rest on a few samples.
pub const WINDOW: usize = 512;

/// Measurements between two recomputations of the percentile (a partial sort of the window).
const REFRESH: u32 = 32;

/// Which statistic of the measured sizes a request is booked at.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Statistic {
    /// The exponentially weighted mean.
    Mean,
    /// This quantile (0 to 1) of the last [`WINDOW`] measurements.
    Percentile(f64),
}

/// A statistic that is neither `mean` nor `p<percent>`.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("invalid size estimate '{0}': expected mean or a percentile such as p95 (p50 to p99.9)")]
pub struct InvalidStatistic(pub String);

impl FromStr for Statistic {
    type Err = InvalidStatistic;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let lower = s.trim().to_ascii_lowercase();
        if lower == "mean" {
            return Ok(Statistic::Mean);
        }
        lower
            .strip_prefix('p')
            .and_then(|p| p.parse::<f64>().ok())
            .filter(|p| (50.0..=99.9).contains(p))
            .map(|p| Statistic::Percentile(p / 100.0))
            .ok_or_else(|| InvalidStatistic(s.to_string()))
    }
}

impl fmt::Display for Statistic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Statistic::Mean => f.write_str("mean"),
            Statistic::Percentile(q) => write!(f, "p{}", q * 100.0),
        }
    }
}

/// A quantile of the last [`WINDOW`] values, recomputed every [`REFRESH`] values.
#[derive(Clone, Debug, PartialEq)]
pub struct RecentQuantile {
    q: f64,
    /// The last [`WINDOW`] values, oldest overwritten first.
    recent: Vec<f64>,
    next: usize,
    quantile: Option<f64>,
    since_refresh: u32,
}

impl RecentQuantile {
    /// The `q` quantile (0 to 1); none until [`REFRESH`] values came.
    pub fn new(q: f64) -> Self {
        RecentQuantile { q, recent: Vec::new(), next: 0, quantile: None, since_refresh: 0 }
    }

    /// The window a statistic needs: a percentile's, none for the mean.
    pub fn of(statistic: Statistic) -> Option<Self> {
        match statistic {
            Statistic::Mean => None,
            Statistic::Percentile(q) => Some(RecentQuantile::new(q)),
        }
    }

    /// The quantile as last recomputed.
    pub fn get(&self) -> Option<f64> {
        self.quantile
    }

    /// One more value.
    pub fn push(&mut self, value: f64) {
        if self.recent.len() < WINDOW {
            self.recent.push(value);
        } else {
            self.recent[self.next] = value;
        }
        self.next = (self.next + 1) % WINDOW;
        self.since_refresh += 1;
        if self.since_refresh >= REFRESH {
            self.since_refresh = 0;
            let mut sorted = self.recent.clone();
            let rank = ((sorted.len() - 1) as f64 * self.q).round() as usize;
            let (_, v, _) = sorted.select_nth_unstable_by(rank, f64::total_cmp);
            self.quantile = Some(*v);
        }
    }
}

/// The per-kernel (per-application) estimator.
#[derive(Clone, Debug, PartialEq)]
pub struct SizeEstimator {
    secs_per_item: f64,
    /// With a percentile statistic, its window of measurements (seconds per item); none: the mean.
    window: Option<RecentQuantile>,
}

impl SizeEstimator {
    /// The mean, starting from `items_per_sec` (the CPU reference's calibrated speed).
    pub fn new(items_per_sec: f64) -> Self {
        Self::with(Statistic::Mean, items_per_sec)
    }

    /// `statistic`, starting from `items_per_sec`; a percentile reads the mean until it has
    /// [`REFRESH`] measurements.
    pub fn with(statistic: Statistic, items_per_sec: f64) -> Self {
        let secs_per_item = 1.0 / items_per_sec.max(f64::MIN_POSITIVE);
        SizeEstimator { secs_per_item, window: RecentQuantile::of(statistic) }
    }

    /// The estimated CPU time of `items` (at least 1 ns: a request always takes some time).
    pub fn estimate(&self, items: u64) -> Time {
        // A percentile reads the mean until its window has a quantile.
        let per_item = self.window.as_ref().and_then(RecentQuantile::get).unwrap_or(self.secs_per_item);
        from_secs(items as f64 * per_item).max(1)
    }

    /// A request of `items` took `took`: the statistic moves toward it. Returns the relative error
    /// the estimate had (|estimate - actual| / actual), or `None` for an empty request.
    pub fn observe(&mut self, items: u64, took: Time) -> Option<f64> {
        if items == 0 || took == 0 {
            return None;
        }
        let estimate = self.estimate(items);
        let measured = to_secs(took) / items as f64;
        self.secs_per_item += ALPHA * (measured - self.secs_per_item);
        if let Some(window) = self.window.as_mut() {
            window.push(measured);
        }
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

    #[test]
    fn a_percentile_books_the_high_sizes_by_hand() {
        // One item per request; sizes 1..=64 us, each once, in a scrambled order (37 is coprime
        // with 64); the percentile is recomputed at the 32nd and 64th. The p95 by the nearest rank
        // on (n - 1) q: round(63 * 0.95) = 60, the 61st smallest: 61 us.
        let scrambled = |i: u64| ((i * 37) % 64 + 1) * 1_000;
        let mut e = SizeEstimator::with(Statistic::Percentile(0.95), 1e5);
        assert_eq!(e.estimate(1), 10_000, "before any measurement: the starting mean");
        (0..64).for_each(|i| _ = e.observe(1, scrambled(i)));
        assert_eq!(e.estimate(1), 61_000);
        assert_eq!(e.estimate(3), 183_000, "per item, times the items");
        // The mean of the same samples is pulled from 10 us toward them, well below the p95.
        let mut m = SizeEstimator::new(1e5);
        (0..64).for_each(|i| _ = m.observe(1, scrambled(i)));
        assert!(m.estimate(1) < 50_000, "{}", m.estimate(1));
    }

    #[test]
    fn statistics_parse_and_print() {
        assert_eq!("mean".parse(), Ok(Statistic::Mean));
        assert_eq!("P95".parse(), Ok(Statistic::Percentile(0.95)));
        assert_eq!("p99.9".parse::<Statistic>().map(|s| s.to_string()), Ok("p99.9".to_string()));
        assert!("p100".parse::<Statistic>().is_err());
        assert!("median".parse::<Statistic>().unwrap_err().to_string().contains("p95"));
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

        /// Right after a recomputation a p90 estimate is one of the window's measurements, at or
        /// above the window's median.
        #[test]
        fn a_percentile_is_a_recent_measurement(batches in 1usize..20, seed in prop::collection::vec(1u64..1_000_000, 32)) {
            let sizes: Vec<u64> = (0..batches * 32).map(|i| seed[i % 32] * (1 + (i / 32) as u64 % 3)).collect();
            let mut e = SizeEstimator::with(Statistic::Percentile(0.9), 1e3);
            for &s in &sizes {
                e.observe(1, s * 1_000);
            }
            let mut recent = sizes[sizes.len().saturating_sub(WINDOW)..].to_vec();
            recent.sort_unstable();
            let est = e.estimate(1);
            prop_assert!(recent.iter().any(|&s| s * 1_000 == est), "{est} not measured");
            prop_assert!(est >= recent[recent.len() / 2] * 1_000);
        }
    }
}
