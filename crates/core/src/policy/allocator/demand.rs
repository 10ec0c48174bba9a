//! Turning work into FPGA counts: Algorithm 1's NeededFPGAs, and per-interval demand for oracles.

use crate::model::{Platform, Time, time::to_secs};

/// Algorithm 1's NeededFPGAs: boards that would have served `work_s` FPGA-seconds in one interval,
/// each serving `board_s` of them (the interval, times its compute units), rounding the remainder up
/// only when it exceeds the breakeven threshold.
///
/// One rule for every board, full or not: a board is worth holding only for more work than the
/// breakeven. A fully used board serves `board_s`, so when even that does not exceed the breakeven
/// (`S x rate(CPU busy) <= rate(FPGA busy)` for a one-CU board, see
/// [`crate::policy::objective::Objective::board_pays`]) no board pays and the count is 0: the
/// paper's Algorithm 1 holds `floor(work / T_s)` boards whatever they cost, which spends more than
/// CPUs alone once a board is slow enough.
pub fn needed_fpgas(work_s: f64, board_s: f64, breakeven_s: f64) -> u32 {
    if work_s.is_nan() || work_s <= 0.0 || breakeven_s >= board_s {
        return 0;
    }
    let full = (work_s / board_s).floor();
    let rem = work_s - full * board_s;
    full as u32 + u32::from(rem > breakeven_s)
}

/// Work arriving in each scheduling interval of a trace, in FPGA-seconds: the perfect knowledge the
/// ideal schedulers and the static/dynamic FPGA baselines are given.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Demand {
    /// FPGA-seconds of work arriving in interval `t`.
    pub work_s: Vec<f64>,
    /// Interval length in seconds.
    pub interval_s: f64,
    /// FPGA-seconds one board serves in an interval ([`Platform::board_capacity_s`]).
    pub board_s: f64,
}

impl Demand {
    /// Accumulates arrivals (arrival, CPU size) into intervals of `platform`.
    pub fn from_requests(
        platform: &Platform,
        horizon: Time,
        requests: impl Iterator<Item = crate::model::Request>,
    ) -> Self {
        let interval = platform.interval();
        let n = horizon.div_ceil(interval).max(1) as usize;
        let mut work = vec![0.0; n];
        for r in requests {
            let t = ((r.arrival / interval) as usize).min(n - 1);
            // Offered work: the optional part counts too (brownout may later skip it); with a board
            // link, each request as one invocation (what it costs unbatched).
            let size = r.size + r.optional;
            work[t] += match platform.fpga.link {
                None => to_secs(size) / platform.fpga.speedup,
                Some(_) => to_secs(platform.fpga.service(size)),
            };
        }
        Demand { work_s: work, interval_s: to_secs(interval), board_s: platform.board_capacity_s() }
    }

    /// Work in interval `t` (zero past the end).
    pub fn work(&self, t: usize) -> f64 {
        self.work_s.get(t).copied().unwrap_or(0.0)
    }

    /// Boards needed to run interval `t`'s work entirely on FPGAs (rounded up).
    pub fn fpgas_ceil(&self, t: usize) -> u32 {
        (self.work(t) / self.board_s).ceil() as u32
    }

    /// Number of intervals.
    pub fn len(&self) -> usize {
        self.work_s.len()
    }

    /// Whether there are no intervals.
    pub fn is_empty(&self) -> bool {
        self.work_s.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn needed_rounds_up_only_past_breakeven() {
        assert_eq!(needed_fpgas(0.0, 10.0, 1.0), 0);
        assert_eq!(needed_fpgas(0.9, 10.0, 1.0), 0);
        assert_eq!(needed_fpgas(1.1, 10.0, 1.0), 1);
        assert_eq!(needed_fpgas(21.0, 10.0, 1.0), 2);
        assert_eq!(needed_fpgas(21.5, 10.0, 1.0), 3);
        // A board that does not pay even fully used is never held.
        assert_eq!(needed_fpgas(25.0, 10.0, f64::INFINITY), 0);
        assert_eq!(needed_fpgas(25.0, 10.0, 10.0), 0);
        assert_eq!(needed_fpgas(25.0, 10.0, 9.99), 2);
        assert_eq!(needed_fpgas(29.995, 10.0, 9.99), 3);
    }
}
