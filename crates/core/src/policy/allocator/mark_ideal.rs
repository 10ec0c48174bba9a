//! MArk-ideal, the paper's stand-in for MArk (Zhang et al., ATC'19), whole in one place.
//!
//! MArk provisions the instances a predictor says pay for themselves, serves bursts from a tier that
//! scales per request, and dispatches round robin over what it holds. The paper's ideal variant gets
//! perfect predictions two intervals ahead. As a Spork scheduler it is three rules:
//!
//! - allocation ([`MarkIdeal`]): an FPGA spun up now lives at least two intervals (spin-up, then its idle
//!   timeout), so hold only the FPGAs that pay for themselves (cost breakeven) in both of the next two
//!   intervals; bursts go to CPUs;
//! - dispatch ([`MarkIdeal::DISPATCHER`]): round robin over the provisioned instances (the FPGAs); the
//!   rest is the burst tier's, CPUs that scale per request: packed onto the busiest CPU that meets the
//!   deadline, else a new one, each idling out on its own timer (a round robin over CPUs too would keep
//!   every CPU just busy enough never to idle out, so the burst tier would never shrink);
//! - surplus ([`MarkIdeal::SURPLUS`]): FPGAs above the target are terminated, i.e. taken out of
//!   dispatch at the tick and released once their queue is done, rather than idling out under the
//!   dispatcher as Spork's surplus does.

use super::{Allocator, Demand, IntervalStats, needed_fpgas};
use crate::model::Platform;
use crate::policy::dispatch::DispatcherKind;
use crate::policy::fleet::Surplus;
use crate::policy::objective::Objective;
use std::sync::Arc;

/// MArk-ideal's allocator: perfect two-interval predictions, cost breakeven.
#[derive(Clone, Debug)]
pub struct MarkIdeal {
    demand: Arc<Demand>,
    breakeven_s: f64,
}

impl MarkIdeal {
    /// MArk dispatches round robin over its instances, bursts to a tier that scales per request.
    pub const DISPATCHER: DispatcherKind = DispatcherKind::RoundRobinTiered;
    /// MArk terminates surplus instances.
    pub const SURPLUS: Surplus = Surplus::Drain;

    /// Perfect two-interval predictions from `demand`.
    pub fn new(demand: Arc<Demand>, platform: &Platform) -> Self {
        MarkIdeal { demand, breakeven_s: Objective::COST.breakeven_secs(platform) }
    }

    fn needed(&self, t: usize) -> u32 {
        let work = self.demand.work(t).min(self.demand.work(t + 1));
        needed_fpgas(work, self.demand.board_s, self.breakeven_s)
    }
}

impl Allocator for MarkIdeal {
    fn initial(&mut self) -> u32 {
        self.needed(0)
    }
    fn plan(&mut self, s: &IntervalStats) -> u32 {
        self.needed(s.index + 1)
    }
}
