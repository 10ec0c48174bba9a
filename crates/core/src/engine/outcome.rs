//! What a run counted: one tally type for the engine's bookings and a live run's answers alike.

use crate::model::{Kind, PerKind, Pool, Time};
use hdrhistogram::Histogram;

/// Requests served, misses, rejections and response times. The engine keeps one for what it booked
/// (the policy's expectation); the live runtime keeps one for what workers answered.
#[derive(Clone, Debug)]
pub struct Tally {
    /// Requests served, per worker type.
    pub served: PerKind<u64>,
    /// Served after their deadline.
    pub misses: u64,
    /// Rejected: a capped pool with no worker to take them (or, live, an input no kernel accepts).
    pub rejected: u64,
    /// Response times in microseconds (1 us to 30 days at 3 significant digits; above is clamped).
    pub latency_us: Histogram<u64>,
}

impl Default for Tally {
    fn default() -> Self {
        Tally {
            served: PerKind::default(),
            misses: 0,
            rejected: 0,
            latency_us: Histogram::new_with_bounds(1, 30 * 86_400 * 1_000_000, 3)
                .expect("static histogram bounds"),
        }
    }
}

impl Tally {
    /// One request served on `kind` with response time `latency`.
    #[inline]
    pub fn record(&mut self, kind: Kind, latency: Time, missed: bool) {
        self.served[kind] += 1;
        self.misses += u64::from(missed);
        self.latency_us.saturating_record((latency / 1_000).max(1));
    }

    /// Requests served on either type.
    pub fn served_total(&self) -> u64 {
        self.served.total()
    }

    /// `n` as a share of the requests served (0 with none served): the FPGA, CPU and miss shares
    /// every report gives.
    pub fn share(&self, n: u64) -> f64 {
        n as f64 / self.served_total().max(1) as f64
    }

    /// A latency percentile in milliseconds (0 with no samples).
    pub fn percentile_ms(&self, q: f64) -> f64 {
        if self.latency_us.is_empty() { 0.0 } else { self.latency_us.value_at_quantile(q) as f64 / 1e3 }
    }
}

/// Raw results of one run, before metrics are derived.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The pool after draining: its ledgers hold all energy and cost.
    pub pool: Pool,
    /// Requests booked (served, misses, latency as the policy expects them) and rejected.
    pub tally: Tally,
    /// Sum of request sizes (CPU service time), for the idealised FPGA-only reference.
    pub total_size: Time,
    /// Scheduling intervals ticked.
    pub intervals: u64,
    /// Events processed (timers, ticks, arrivals).
    pub events: u64,
    /// When the last worker was released (at least the trace's horizon).
    pub end: Time,
    /// Spin-ups refused by a cap (the request queued on the worker that frees up first instead).
    pub capped: u64,
    /// Requests that arrived with an optional part, and those booked with it (all of those booked,
    /// without brownout).
    pub optional: (u64, u64),
    /// With unknown sizes, the size estimates' mean absolute error relative to the mean size.
    pub size_error: Option<f64>,
    /// With dynamic batching, the batches booked and the requests they carried.
    pub batches: Option<(u64, u64)>,
    /// The board's speedup in force at the end: the platform's, unless a live pool's answers
    /// moved it ([`crate::policy::speed`]).
    pub speedup: f64,
}
