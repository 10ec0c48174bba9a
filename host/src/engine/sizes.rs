//! Unknown request sizes: what the engine books a request at when its size is not known.
//!
//! The dispatcher's deadline checks (and SporkD's arrival profile) read an estimate from the shared
//! estimator ([`crate::policy::estimate`]); the estimator learns a request's size only once it has
//! completed. The pool books the size the request really takes, so the backlog ahead of a request is
//! the real one: what is estimated is the request's own size (a queue of k requests sums k
//! estimates, whose relative error shrinks as 1/sqrt(k); the request's own does not).

use crate::model::{Time, time::to_secs};
use crate::policy::estimate::{SizeEstimator, Statistic};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The estimator, the requests still running, and the error made so far.
#[derive(Clone, Debug)]
pub struct SizeBook {
    estimator: SizeEstimator,
    /// (completion, size) of booked requests not yet learned from.
    running: BinaryHeap<Reverse<(Time, Time)>>,
    /// Sums of |estimate - size| and of sizes, seconds.
    abs_error_s: f64,
    size_s: f64,
}

impl SizeBook {
    /// Booking at `statistic`, starting from `nominal`, the application's stated size (what its
    /// deadline is set from) until measurements come in.
    pub fn new(statistic: Statistic, nominal: Time) -> Self {
        let items_per_sec = 1e9 / nominal.max(1) as f64;
        SizeBook {
            estimator: SizeEstimator::with(statistic, items_per_sec),
            running: BinaryHeap::new(),
            abs_error_s: 0.0,
            size_s: 0.0,
        }
    }

    /// The estimate at `now`, after learning from every request completed by then.
    pub fn estimate(&mut self, now: Time) -> Time {
        while let Some(&Reverse((done, size))) = self.running.peek() {
            if done > now {
                break;
            }
            self.running.pop();
            self.estimator.observe(1, size);
        }
        self.estimator.estimate(1)
    }

    /// A request booked at `estimate` really takes `size` and completes at `finish`.
    pub fn booked(&mut self, estimate: Time, size: Time, finish: Time) {
        self.running.push(Reverse((finish, size)));
        self.abs_error_s += to_secs(estimate.abs_diff(size));
        self.size_s += to_secs(size);
    }

    /// The estimates' mean absolute error relative to the mean size (per request relative errors
    /// would be ruled by the smallest requests of a wide spread).
    pub fn mean_error(&self) -> Option<f64> {
        (self.size_s > 0.0).then(|| self.abs_error_s / self.size_s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_learns_only_from_completed_requests() {
        // Nominal 10 ms; requests really take 20 ms. Until one completes, the estimate stays 10 ms.
        let mut b = SizeBook::new(Statistic::Mean, 10_000_000);
        assert_eq!(b.estimate(0), 10_000_000);
        b.booked(10_000_000, 20_000_000, 50);
        assert_eq!(b.estimate(49), 10_000_000, "still running");
        // At 50 it has completed: the mean moves 5% of the way, 10 ms + 0.05 * 10 ms.
        assert_eq!(b.estimate(50), 10_500_000);
        // |10 - 20| / 20 = 0.5; a second one booked at 10.5 ms that takes 5 ms: (10 + 5.5) / 25.
        assert_eq!(b.mean_error(), Some(0.5));
        b.booked(10_500_000, 5_000_000, 60);
        assert!((b.mean_error().unwrap_or(0.0) - 15.5 / 25.0).abs() < 1e-12);
    }
}
