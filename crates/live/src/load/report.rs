//! What a load run saw: answers by worker type, errors by status, deadline misses and the latency
//! distribution (HdrHistogram, from each request's intended send time).

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

use super::check::Verdict;
use super::client::Outcome;
use crate::priority::Priority;

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
    /// The speed that sized the requests (items per second): pass it back as `--items-per-sec` to
    /// send the same requests again.
    pub items_per_sec: f64,
    /// Whose speed it is.
    pub sized_by: SizedBy,
    /// Input items per request sent, on average.
    pub mean_items: f64,
    /// How the load generator's threads were scheduled.
    pub priority: Priority,
    /// Where the answered requests' time went (ms, p50 / p99 / max): `server`, the server's own
    /// part (queue and service, as it reports them); `outside`, the rest of each latency (the load
    /// generator's lag, both transfers, the protocol path), for the answers that carry the server's;
    /// `handler`, the part of `outside` the server's handler saw (its `handled_ms` less its queue and
    /// service: reading and parsing the request, the hand-offs, the answer's head), if it says.
    pub split_ms: BTreeMap<String, BTreeMap<String, f64>>,
    /// Answers over the `deadline_ms` sent whose server part was within it: made late outside the
    /// scheduler (none counted when no deadline is sent: the server's default is not known here).
    pub late_outside: u64,
    /// With `--check`: the answers compared with the model's CPU code.
    pub checks: Option<Checks>,
    #[serde(skip)]
    latency_us: Histogram<u64>,
    #[serde(skip)]
    server_us: Histogram<u64>,
    #[serde(skip)]
    outside_us: Histogram<u64>,
    #[serde(skip)]
    handler_us: Histogram<u64>,
}

/// Answers compared with the model's CPU code (`spork load --check`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Checks {
    /// Equal to the CPU code's, every output.
    pub right: u64,
    /// Different or incomplete.
    pub wrong: u64,
    /// Not compared: the CPU code here could not answer.
    pub unchecked: u64,
    /// The first wrong answer's difference, and the first reason one went unchecked.
    pub first: Vec<String>,
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
            sized_by: SizedBy::Given,
            mean_items: 0.0,
            priority: Priority::Normal,
            split_ms: BTreeMap::new(),
            late_outside: 0,
            checks: None,
            latency_us: histogram(),
            server_us: histogram(),
            outside_us: histogram(),
            handler_us: histogram(),
        }
    }

    /// One answer's verdict under `--check`.
    pub fn checked(&mut self, v: Verdict) {
        let c = self.checks.get_or_insert_with(Checks::default);
        match v {
            Verdict::Right => c.right += 1,
            Verdict::Wrong(why) => {
                if c.wrong == 0 {
                    c.first.push(format!("wrong: {why}"));
                }
                c.wrong += 1;
            }
            Verdict::Unchecked(why) => {
                if c.unchecked == 0 {
                    c.first.push(format!("unchecked: {why}"));
                }
                c.unchecked += 1;
            }
        }
    }

    /// One request ended with `outcome`, `latency` after its intended send time.
    pub fn record(&mut self, outcome: &Outcome, latency: Duration, deadline_ms: Option<f64>) {
        self.sent += 1;
        match outcome {
            Outcome::Ok { kind, missed, server_ms, handled_ms, .. } => {
                self.ok += 1;
                *self.by_kind.entry(kind.clone()).or_default() += 1;
                let ms = latency.as_secs_f64() * 1e3;
                let late = deadline_ms.is_some_and(|d| ms > d);
                self.missed += u64::from(*missed || late);
                self.latency_us.saturating_record((latency.as_micros() as u64).max(1));
                if let Some(server) = server_ms.filter(|s| s.is_finite() && *s >= 0.0) {
                    self.server_us.saturating_record(((server * 1e3) as u64).max(1));
                    self.outside_us.saturating_record((((ms - server) * 1e3).max(0.0) as u64).max(1));
                    self.late_outside += u64::from(late && !*missed);
                    if let Some(handled) = handled_ms.filter(|h| h.is_finite()) {
                        self.handler_us
                            .saturating_record((((handled - server) * 1e3).max(0.0) as u64).max(1));
                    }
                }
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
        for (part, h) in
            [("server", &self.server_us), ("outside", &self.outside_us), ("handler", &self.handler_us)]
        {
            if h.is_empty() {
                continue;
            }
            let at = |q| h.value_at_quantile(q) as f64 / 1e3;
            let v = [("p50", at(0.5)), ("p99", at(0.99)), ("max", at(1.0))];
            self.split_ms.insert(part.into(), v.into_iter().map(|(k, x)| (k.to_string(), x)).collect());
        }
    }

    /// The latency at quantile `q` in milliseconds.
    pub fn percentile_ms(&self, q: f64) -> f64 {
        if self.latency_us.is_empty() { 0.0 } else { self.latency_us.value_at_quantile(q) as f64 / 1e3 }
    }
}

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("static histogram bounds")
}

/// Whose CPU speed sized a load's requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SizedBy {
    /// The server's own: its model's stated CPU speed, so a request's size is its service time there.
    Server,
    /// The model's C code's speed measured on the load generator's machine (the server stated none).
    LoadGenerator,
    /// The caller's (`--items-per-sec`).
    Given,
}

impl std::fmt::Display for SizedBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SizedBy::Server => "server",
            SizedBy::LoadGenerator => "load generator",
            SizedBy::Given => "given",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(server_ms: Option<f64>, missed: bool) -> Outcome {
        Outcome::Ok {
            kind: "cpu".into(),
            missed,
            server_ms,
            handled_ms: server_ms.map(|s| s + 1.5),
            outputs: Vec::new(),
        }
    }

    #[test]
    fn each_latency_splits_into_the_servers_part_and_the_rest() {
        let mut r = LoadReport::new();
        // 12 ms seen, 8 ms of them the server's: late by what happened outside it.
        r.record(&ok(Some(8.0), false), Duration::from_millis(12), Some(10.0));
        // 11 ms seen, the server itself missed: not counted as made late outside.
        r.record(&ok(Some(10.5), true), Duration::from_millis(11), Some(10.0));
        // No server part said (another server): in the latency, not in the split.
        r.record(&ok(None, false), Duration::from_millis(3), Some(10.0));
        r.finish(Duration::from_secs(1), 1.0);
        assert_eq!((r.ok, r.missed, r.late_outside), (3, 2, 1));
        let near = |a: f64, b: f64| (a - b).abs() <= b * 0.01;
        assert!(near(r.split_ms["server"]["max"], 10.5), "{:?}", r.split_ms);
        assert!(near(r.split_ms["outside"]["max"], 4.0), "{:?}", r.split_ms);
        assert!(near(r.split_ms["outside"]["p50"], 0.5), "{:?}", r.split_ms);
        // The handler saw 1.5 ms of each around the scheduler's part.
        assert!(near(r.split_ms["handler"]["max"], 1.5), "{:?}", r.split_ms);
    }

    #[test]
    fn no_split_without_the_servers_part() {
        let mut r = LoadReport::new();
        r.record(&ok(None, false), Duration::from_millis(3), None);
        r.finish(Duration::from_secs(1), 1.0);
        assert!(r.split_ms.is_empty() && r.late_outside == 0);
    }
}
