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
use crate::policy::call_cost::ClientSizes;
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
    clients: Option<ClientSizes>,
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
    /// their sizes spread, at a fixed cost per call plus a cost per item ([`ClientSizes`]).
    pub fn size_clients(&mut self, statistic: Statistic, items_per_sec: f64) {
        self.clients = Some(ClientSizes::new(statistic, items_per_sec));
    }

    /// A client's request of `items`: its estimated CPU time (`None` if clients are not sized here).
    pub fn client_size(&self, items: u64) -> Option<Time> {
        self.clients.as_ref().map(|c| c.size(items))
    }

    /// A client's request of `items` took `took` of CPU time; the estimate's relative error.
    pub fn observe_client(&mut self, items: u64, took: Time) -> Option<f64> {
        self.clients.as_mut()?.observe(items, took)
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

    /// 27 calls of 15,368 items at 1 ms, then 27 of 1-3 items at 200 us (the call itself), as a
    /// served satadd answered on a loaded VM.
    fn large_then_one_item_calls(s: &mut Sizes) {
        for _ in 0..27 {
            s.observe_client(15_368, 1_000_000);
        }
        for i in 0..27 {
            s.observe_client(1 + 2 * (i % 2), 200_000);
        }
    }

    #[test]
    fn clients_of_spread_sizes_are_booked_on_the_line_at_the_mean_and_at_a_percentile() {
        for statistic in [Statistic::Mean, Statistic::Percentile(0.95)] {
            let mut s = Sizes::new(None);
            assert_eq!(s.client_size(100), None, "clients not sized here yet");
            s.size_clients(statistic, 1.5e9);
            large_then_one_item_calls(&mut s);
            let booked = s.client_size(15_368).expect("sized") as f64;
            // The per-item statistic alone had booked it past 1 s.
            assert!((booked / 1e6 - 1.0).abs() < 0.1, "{statistic}: the 1 ms call booked at {booked} ns");
        }
    }

    #[test]
    fn at_a_percentile_the_line_is_raised_by_how_far_answers_ran_past_it() {
        let mut s = Sizes::new(None);
        s.size_clients(Statistic::Percentile(0.95), 1.5e9);
        large_then_one_item_calls(&mut s);
        // Then answers alternate on the line and 50% over it: the p95 of the ratios is 1.5.
        let line = s.client_size(15_368).expect("sized");
        for i in 0..64u64 {
            let took = if i % 2 == 0 { line } else { line * 3 / 2 };
            s.observe_client(15_368, took);
        }
        let raised = s.client_size(15_368).expect("sized") as f64 / line as f64;
        assert!(raised > 1.3 && raised < 1.7, "raised {raised}x");
    }
}
