//! Unknown request sizes: what the engine books a request at when its size is not known.
//!
//! The dispatcher's deadline checks (and SporkD's arrival profile) read an estimate from the shared
//! estimator ([`crate::policy::estimate`]); the estimator learns a request's size only once it has
//! completed. The pool books the size the request really takes, so the backlog ahead of a request is
//! the real one: what is estimated is the request's own size (a queue of k requests sums k
//! estimates, whose relative error shrinks as 1/sqrt(k); the request's own does not).
//!
//! A live pool's clients state no size at all, only their inputs: [`Sizes`] also holds the estimator
//! of CPU time per input item that sizes them, learned from their measured CPU service. Both go
//! through the same estimator (`policy::estimate`), here, in the engine.

use crate::model::{Request, Time, time::to_secs};
use crate::policy::call_cost::CallCost;
use crate::policy::estimate::{SizeEstimator, Statistic};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Unknown sizes of both kinds: a trace's requests booked at `statistic` of the sizes completed so far
/// (the book, opened at the first arrival from its nominal size), and a live pool's clients sized from
/// their items (opened by the pool).
#[derive(Clone, Debug, Default)]
pub struct Sizes {
    statistic: Option<Statistic>,
    book: Option<SizeBook>,
    clients: Option<(SizeEstimator, CallCost)>,
}

impl Sizes {
    /// Trace requests booked at `statistic` (`None`: at their own size, known in advance).
    pub fn new(statistic: Option<Statistic>) -> Self {
        Sizes { statistic, ..Sizes::default() }
    }

    /// With unknown sizes, what `r` is booked at: the estimate at its arrival.
    pub fn estimate(&mut self, r: &Request) -> Option<Time> {
        let statistic = self.statistic?;
        let book = self.book.get_or_insert_with(|| SizeBook::new(statistic, r.nominal));
        Some(book.estimate(r.arrival))
    }

    /// A request estimated at `estimate` (if its size was unknown) really takes `size` and completes
    /// at `finish`.
    pub fn booked(&mut self, estimate: Option<Time>, size: Time, finish: Time) {
        if let (Some(e), Some(book)) = (estimate, self.book.as_mut()) {
            book.booked(e, size, finish);
        }
    }

    /// The trace estimates' mean absolute error relative to the mean size.
    pub fn mean_error(&self) -> Option<f64> {
        self.book.as_ref().and_then(SizeBook::mean_error)
    }

    /// Sizes clients at `statistic` of the CPU time per item measured, from `items_per_sec`; once
    /// their sizes spread, at a fixed cost per call plus a cost per item ([`CallCost`]).
    pub fn size_clients(&mut self, statistic: Statistic, items_per_sec: f64) {
        self.clients = Some((SizeEstimator::with(statistic, items_per_sec), CallCost::new()));
    }

    /// A client's request of `items`: its estimated CPU time (`None` if clients are not sized here).
    pub fn client_size(&self, items: u64) -> Option<Time> {
        let (per_item, line) = self.clients.as_ref()?;
        Some(line.estimate(items).unwrap_or_else(|| per_item.estimate(items)))
    }

    /// A client's request of `items` took `took` of CPU time; the estimate's relative error.
    pub fn observe_client(&mut self, items: u64, took: Time) -> Option<f64> {
        let estimate = self.client_size(items)?;
        let (per_item, line) = self.clients.as_mut()?;
        per_item.observe(items, took);
        line.observe(items, took);
        (items > 0 && took > 0).then(|| estimate.abs_diff(took) as f64 / took as f64)
    }
}

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
