//! SporkD's needed count: the FPGAs that would have served an interval's arrivals within their
//! deadlines, queueing allowed.
//!
//! Algorithm 1 counts an interval's average work (FPGAs = work / T_s). With deadlines long relative to
//! service times a burst can wait in an FPGA's queue instead of taking more FPGAs (or CPUs), and with
//! short ones the peak inside the interval needs more than the average. So the interval's arrivals
//! are kept as a profile (work and least slack per bin of the interval) and replayed as a fluid through
//! `n` FPGAs serving first come, first served: `n` suffices when every bin's backlog drains within
//! that bin's least slack (`backlog / n <= slack`, the wait of the bin's last arrival). The least such
//! `n` is the needed count; the backlog it leaves carries into the next interval, so deferring work
//! is never free: a rate above `n` for longer than the slack raises the next interval's count.

use crate::model::{Time, time::to_secs};

/// Bins per interval: 50 ms at the paper's 10 s interval, finer than the shortest slack the paper's
/// deadlines give only for short requests at small deadline factors (where the fluid is optimistic
/// within a bin).
pub const BINS: usize = 200;

/// Relative precision of the needed count's bisection.
const PRECISION: f64 = 1e-6;

#[derive(Clone, Copy, Debug, PartialEq)]
struct Bin {
    /// FPGA-seconds arriving in the bin.
    work_s: f64,
    /// The least slack (deadline minus arrival minus FPGA service) of the bin's arrivals, seconds.
    slack_s: f64,
}

impl Default for Bin {
    fn default() -> Self {
        Bin { work_s: 0.0, slack_s: f64::INFINITY }
    }
}

/// What an interval's arrivals needed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Need {
    /// The least FPGA count (fractional) that served them within their deadlines.
    pub fpgas: f64,
    /// The least slack of any of them, seconds (infinite with no arrivals).
    pub least_slack_s: f64,
}

/// One interval's arrivals, binned, and the backlog carried from the interval before.
#[derive(Clone, Debug, PartialEq)]
pub struct ArrivalProfile {
    interval: Time,
    start: Time,
    bins: Vec<Bin>,
    carry_s: f64,
}

impl ArrivalProfile {
    /// An empty profile for intervals of `interval`, the first starting at 0.
    pub fn new(interval: Time) -> Self {
        ArrivalProfile { interval: interval.max(1), start: 0, bins: vec![Bin::default(); BINS], carry_s: 0.0 }
    }

    /// A request arrived at `at` with `fpga_service` on an FPGA and an absolute `deadline`. One that
    /// no FPGA could finish in time, even idle, is not FPGA work and is left out.
    pub fn record(&mut self, at: Time, fpga_service: Time, deadline: Time) {
        let slack = deadline.saturating_sub(at).saturating_sub(fpga_service);
        if slack == 0 {
            return;
        }
        let offset = at.saturating_sub(self.start).min(self.interval - 1);
        let i = ((offset as u128 * BINS as u128) / self.interval as u128) as usize;
        let bin = &mut self.bins[i.min(BINS - 1)];
        bin.work_s += to_secs(fpga_service);
        bin.slack_s = bin.slack_s.min(to_secs(slack));
    }

    /// Closes the interval: the least (fractional) FPGA count that serves its arrivals within their
    /// deadlines, after the carried backlog. The backlog that count leaves carries on; the next
    /// interval starts at `next_start`.
    pub fn close(&mut self, next_start: Time) -> Need {
        let fpgas = self.least_fpgas();
        let least_slack_s = self.bins.iter().map(|b| b.slack_s).fold(f64::INFINITY, f64::min);
        self.carry_s = self.backlog(fpgas).0;
        self.bins.iter_mut().for_each(|b| *b = Bin::default());
        self.start = next_start;
        Need { fpgas, least_slack_s }
    }

    /// The backlog left at the interval's end by `n` FPGAs, and whether every bin's drained in time.
    fn backlog(&self, n: f64) -> (f64, bool) {
        let width = to_secs(self.interval) / BINS as f64;
        let mut q = self.carry_s;
        let mut ok = true;
        for b in &self.bins {
            q = (q + b.work_s - n * width).max(0.0);
            if b.work_s > 0.0 && q > n * b.slack_s {
                ok = false;
            }
        }
        (q, ok)
    }

    fn least_fpgas(&self) -> f64 {
        let total: f64 = self.carry_s + self.bins.iter().map(|b| b.work_s).sum::<f64>();
        if total <= 0.0 {
            return 0.0;
        }
        let mut hi = total / to_secs(self.interval);
        while !self.backlog(hi).1 {
            hi *= 2.0;
        }
        let mut lo = 0.0;
        while hi - lo > PRECISION * hi {
            let mid = 0.5 * (lo + hi);
            if self.backlog(mid).1 { hi = mid } else { lo = mid }
        }
        hi
    }
}

#[cfg(test)]
mod tests {
    //! Hand-computed cases on a 10 s interval: bins of 50 ms.
    use super::*;
    use crate::model::time::from_secs;

    fn profile() -> ArrivalProfile {
        ArrivalProfile::new(from_secs(10.0))
    }

    /// `count` requests of `service` s on an FPGA, one per bin from bin `first`, each with `slack` s.
    fn steady(p: &mut ArrivalProfile, first: usize, count: usize, service: f64, slack: f64) {
        for i in first..first + count {
            let at = from_secs(i as f64 * 0.05);
            p.record(at, from_secs(service), at + from_secs(service + slack));
        }
    }

    fn close_to(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-4 * b.max(1.0)
    }

    #[test]
    fn a_steady_stream_needs_about_its_rate() {
        // 0.1 FPGA-s every 50 ms all interval: a rate of 2 FPGAs. Fewer, n, fall behind by
        // 0.1 - 0.05n per bin; the last bin's backlog, 200 (0.1 - 0.05n) = 20 - 10n, must drain
        // within n * slack. Slack 10 ms: n = 20 / 10.01; slack 1 s: n = 20 / 11, the rest deferred.
        for (slack, want) in [(0.01, 20.0 / 10.01), (1.0, 20.0 / 11.0)] {
            let mut p = profile();
            steady(&mut p, 0, BINS, 0.1, slack);
            let n = p.close(from_secs(10.0)).fpgas;
            assert!(close_to(n, want), "slack {slack}: {n} vs {want}");
        }
    }

    #[test]
    fn a_burst_waits_in_the_queue_when_the_slack_allows() {
        // 4 FPGA-s arriving in one 50 ms bin at t = 0. Slack 1 s: n FPGAs drain 0.05n in the bin and
        // must hold the rest (4 - 0.05n) within n * 1 s: n = 4 / 1.05 = 3.8095.
        let mut p = profile();
        p.record(0, from_secs(4.0), from_secs(5.0));
        assert!(close_to(p.close(from_secs(10.0)).fpgas, 4.0 / 1.05));
        // Slack 3 s: n = 4 / 3.05 = 1.3115; against Algorithm 1's 0.4 FPGAs of average work.
        let mut p = profile();
        p.record(0, from_secs(4.0), from_secs(7.0));
        assert!(close_to(p.close(from_secs(10.0)).fpgas, 4.0 / 3.05));
    }

    #[test]
    fn the_backlog_carries_into_the_next_interval() {
        // 12 FPGA-s in the last bin of the interval with slack 4 s: n = 12 / 4.05 = 2.963, which
        // leaves 12 - 0.05n = 11.852 FPGA-s queued at the interval's end.
        let mut p = profile();
        let at = from_secs(9.96);
        p.record(at, from_secs(12.0), at + from_secs(16.0));
        let n = p.close(from_secs(10.0)).fpgas;
        assert!(close_to(n, 12.0 / 4.05), "{n}");
        // The next interval's first request (slack 100 s) waits behind what is left, 12 - 0.05n:
        // m FPGAs need (12 - 0.05n + 0.001 - 0.05m) <= 100m.
        let carried = 12.0 - 0.05 * n;
        let mut later = p.clone();
        later.record(from_secs(10.0), from_secs(0.001), from_secs(110.001));
        let m = later.close(from_secs(20.0)).fpgas;
        assert!(close_to(m, (carried + 0.001) / 100.05), "{m}");
    }

    #[test]
    fn requests_no_fpga_can_meet_are_not_fpga_work() {
        let mut p = profile();
        p.record(0, from_secs(2.0), from_secs(1.0)); // deadline before the service ends
        assert_eq!(p.close(from_secs(10.0)), Need { fpgas: 0.0, least_slack_s: f64::INFINITY });
    }
}
