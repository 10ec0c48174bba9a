//! The paper's baselines and the ideal (oracle) Spork variants.

use super::{Allocator, Demand, IntervalStats, needed_fpgas};
use crate::model::{Platform, time::to_secs};
use crate::policy::objective::Objective;
use std::sync::Arc;

/// CPU-dynamic: no FPGAs; CPU workers are spun up on the dispatch path and idle out.
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuDynamic;

impl Allocator for CpuDynamic {
    fn plan(&mut self, _: &IntervalStats) -> u32 {
        0
    }
}

/// FPGA-static: perfect knowledge of the trace; exactly enough FPGAs for the peak, held from the start
/// (one spin-up each, done before the run). "Enough" is the busiest interval's need plus the least
/// `extra` with which no deadline is missed (the evaluator searches it): at the peak interval's average
/// alone, Poisson bursts within the interval queue past their deadlines.
#[derive(Clone, Copy, Debug)]
pub struct FpgaStatic {
    peak: u32,
}

impl FpgaStatic {
    /// Sized for the busiest interval of `demand`, plus `extra`.
    pub fn new(demand: &Demand, extra: u32) -> Self {
        let peak = (0..demand.len()).map(|t| demand.fpgas_ceil(t)).max().unwrap_or(0);
        FpgaStatic { peak: peak.max(1) + extra }
    }
}

impl Allocator for FpgaStatic {
    fn initial(&mut self) -> u32 {
        self.peak
    }
    fn plan(&mut self, _: &IntervalStats) -> u32 {
        self.peak
    }
}

/// FPGA-dynamic: reactive; the FPGAs the last interval needed plus a headroom of `multiple` times the
/// largest change in needed FPGAs between consecutive intervals of the trace. The evaluator searches
/// the least multiple that meets deadlines (see [`crate::engine::search_headroom`]).
#[derive(Clone, Debug)]
pub struct FpgaDynamic {
    headroom: u32,
    first: u32,
    /// FPGA-seconds one board serves in an interval.
    board_s: f64,
    speedup: f64,
    /// The other reading of "the minimum FPGAs needed to meet current load" (section 5.1): the
    /// known demand of the interval that starts now, where ours counts the work of the one that ended.
    current: Option<Arc<Demand>>,
}

impl FpgaDynamic {
    /// The largest change between consecutive intervals of `demand`, in FPGAs.
    pub fn max_step(demand: &Demand) -> u32 {
        (1..demand.len()).map(|t| demand.fpgas_ceil(t).abs_diff(demand.fpgas_ceil(t - 1))).max().unwrap_or(0)
    }

    /// Headroom `multiple` x the largest step of `demand`; starts warm with interval 0's need.
    pub fn new(demand: &Demand, multiple: u32, platform: &Platform) -> Self {
        let headroom = multiple * Self::max_step(demand).max(1);
        FpgaDynamic {
            headroom,
            first: demand.fpgas_ceil(0),
            board_s: platform.board_capacity_s(),
            speedup: platform.fpga.speedup,
            current: None,
        }
    }

    /// [`Self::new`], counting the FPGAs the interval that starts now needs from `demand` (known
    /// request rates) instead of the work the last one ran.
    pub fn on_current_load(demand: Arc<Demand>, multiple: u32, platform: &Platform) -> Self {
        FpgaDynamic { current: Some(demand.clone()), ..Self::new(&demand, multiple, platform) }
    }
}

impl Allocator for FpgaDynamic {
    fn initial(&mut self) -> u32 {
        (self.first + self.headroom).max(1)
    }
    fn plan(&mut self, s: &IntervalStats) -> u32 {
        if s.index == 0 {
            return self.initial();
        }
        if let Some(d) = &self.current {
            return (d.fpgas_ceil(s.index) + self.headroom).max(1);
        }
        let work = to_secs(s.fpga_work) + to_secs(s.cpu_work) / self.speedup;
        ((work / self.board_s).ceil() as u32 + self.headroom).max(1)
    }
    fn respeed(&mut self, platform: &Platform) {
        self.speedup = platform.fpga.speedup;
    }
}

/// SporkE-ideal / SporkC-ideal: Algorithm 1's NeededFPGAs applied to the next interval's actual work
/// (perfect prediction, no spin-up accounting).
#[derive(Clone, Debug)]
pub struct SporkIdeal {
    demand: Arc<Demand>,
    breakeven_s: f64,
}

impl SporkIdeal {
    /// Perfect predictions from `demand`, rounding with `objective`'s breakeven threshold.
    pub fn new(demand: Arc<Demand>, objective: Objective, platform: &Platform) -> Self {
        SporkIdeal { demand, breakeven_s: objective.breakeven_secs(platform) }
    }

    fn needed(&self, t: usize) -> u32 {
        needed_fpgas(self.demand.work(t), self.demand.board_s, self.breakeven_s)
    }
}

impl Allocator for SporkIdeal {
    fn initial(&mut self) -> u32 {
        self.needed(0)
    }
    fn plan(&mut self, s: &IntervalStats) -> u32 {
        self.needed(s.index + 1)
    }
}
