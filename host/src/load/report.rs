//! What a load run saw: answers by worker type, errors by status, deadline misses and the latency
//! distribution (HdrHistogram, from each request's intended send time).

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

use super::client::Outcome;

/// The report.
#[derive(Clone, Serialize)]
pub struct LoadReport {
    /// Requests sent.
    pub sent: u64,
    /// Answered.
    pub ok: u64,
    /// Answered after their deadline (the server's word, or a latency over the deadline sent).
    pub missed: u64,
    /// Answers by worker type.
    pub by_kind: BTreeMap<String, u64>,
    /// Failures by status.
    pub errors: BTreeMap<String, u64>,
    /// Latency percentiles of answered requests (ms): p50, p95, p99, p99.9, max.
    pub latency_ms: BTreeMap<String, f64>,
    /// Answers per second over the run.
    pub throughput: f64,
    /// Requests per second offered (the trace's).
    pub offered_rate: f64,
    /// Wall time of the run (s).
    pub wall_s: f64,
    /// The speed that sized the requests (items per second of the CPU reference): pass it back as
    /// `--items-per-sec` to send the same requests again.
    pub items_per_sec: f64,
    /// Input items per request sent, on average.
    pub mean_items: f64,
    #[serde(skip)]
    latency_us: Histogram<u64>,
}

/// The figures, without the histogram's buckets.
impl std::fmt::Debug for LoadReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadReport")
            .field("sent", &self.sent)
            .field("ok", &self.ok)
            .field("missed", &self.missed)
            .field("by_kind", &self.by_kind)
            .field("errors", &self.errors)
            .field("latency_ms", &self.latency_ms)
            .finish_non_exhaustive()
    }
}

impl Default for LoadReport {
    fn default() -> Self {
        Self::new()
    }
}

impl LoadReport {
    /// Empty.
    pub fn new() -> LoadReport {
        LoadReport {
            sent: 0,
            ok: 0,
            missed: 0,
            by_kind: BTreeMap::new(),
            errors: BTreeMap::new(),
            latency_ms: BTreeMap::new(),
            throughput: 0.0,
            offered_rate: 0.0,
            wall_s: 0.0,
            items_per_sec: 0.0,
            mean_items: 0.0,
            latency_us: Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("static histogram bounds"),
        }
    }

    /// One request ended with `outcome`, `latency` after its intended send time.
    pub fn record(&mut self, outcome: &Outcome, latency: Duration, deadline_ms: Option<f64>) {
        self.sent += 1;
        match outcome {
            Outcome::Ok { kind, missed } => {
                self.ok += 1;
                *self.by_kind.entry(kind.clone()).or_default() += 1;
                let late = deadline_ms.is_some_and(|d| latency.as_secs_f64() * 1e3 > d);
                self.missed += u64::from(*missed || late);
                self.latency_us.saturating_record((latency.as_micros() as u64).max(1));
            }
            Outcome::Error(e) => *self.errors.entry(e.clone()).or_default() += 1,
        }
    }

    /// The run ended after `wall`, its trace spanning `span_s`.
    pub fn finish(&mut self, wall: Duration, span_s: f64) {
        self.wall_s = wall.as_secs_f64();
        self.throughput = self.ok as f64 / self.wall_s.max(1e-9);
        self.offered_rate = self.sent as f64 / span_s.max(1e-9);
        for (name, q) in [("p50", 0.5), ("p95", 0.95), ("p99", 0.99), ("p99.9", 0.999), ("max", 1.0)] {
            let v = if self.latency_us.is_empty() { 0 } else { self.latency_us.value_at_quantile(q) };
            self.latency_ms.insert(name.into(), v as f64 / 1e3);
        }
    }

    /// The latency at quantile `q` in milliseconds.
    pub fn percentile_ms(&self, q: f64) -> f64 {
        if self.latency_us.is_empty() { 0.0 } else { self.latency_us.value_at_quantile(q) as f64 / 1e3 }
    }
}
