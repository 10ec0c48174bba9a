//! What a run is: the scheduler and its settings, and what an oracle scheduler is told in advance.

use super::brownout::PoolBrownout;
use super::hardware::EngineKind;
use crate::model::{Platform, Request, Time};
use crate::policy::batching::Batching;
use crate::policy::estimate::Statistic;
use crate::policy::release::ReleaseTiming;
use crate::policy::{Admission, Caps, Demand, DispatcherKind, Scheduler};
use std::sync::Arc;

/// How to run: the scheduler, an optional dispatcher override, caps, brownout and search limits.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// The scheduler.
    pub scheduler: Scheduler,
    /// Dispatcher; `None` takes the scheduler's own.
    pub dispatcher: Option<DispatcherKind>,
    /// FPGA-dynamic and FPGA-static: the largest headroom to try (see [`super::search_headroom`]).
    pub max_headroom: u32,
    /// Caps on the pool.
    pub caps: Caps,
    /// Brownout on requests' optional parts.
    pub brownout: Option<PoolBrownout>,
    /// What becomes of a request that would queue into a miss (the paper's rule, or rejected).
    pub admission: Admission,
    /// Seed of the brownout dimmer's draws. A live run and its evaluator prediction share it, so the
    /// prediction makes the same draws.
    pub seed: u64,
    /// Unknown sizes: requests are dispatched at this statistic of the sizes measured so far
    /// ([`super::sizes`]); `None` dispatches at each request's own size, known in advance (the paper).
    pub sizes: Option<Statistic>,
    /// When surplus FPGAs may start their idle countdown (ours so far, or the paper's reading).
    pub release: ReleaseTiming,
    /// Who takes efficient-first's first step in a live pool: the software rule, or the hardware
    /// dispatch engine (RTL or golden model). The evaluator always decides in software.
    pub dispatch_engine: EngineKind,
    /// Dynamic batching of requests bound for a board (`None`: each request is its own job, the
    /// paper's).
    pub batching: Option<Batching>,
    /// CPU workers held from the start and never released below (0: the paper's, which keeps none
    /// idle past its timeout); within the CPU cap.
    pub min_cpu: u32,
    /// Dispatch plans each request whose client states its deadline to finish this long before it
    /// (the time the request spends outside the server, which the client's deadline counts and the
    /// server's clock does not; 0: none). Misses are still counted against the deadline itself.
    pub margin: Time,
}

impl Plan {
    /// `scheduler` with its own dispatcher, uncapped, no brownout, seed 0.
    pub fn new(scheduler: Scheduler) -> Self {
        Plan {
            scheduler,
            dispatcher: None,
            max_headroom: 64,
            caps: Caps::NONE,
            brownout: None,
            admission: Admission::QueueLate,
            seed: 0,
            sizes: None,
            release: ReleaseTiming::Drained,
            dispatch_engine: EngineKind::Software,
            batching: None,
            min_cpu: 0,
            margin: 0,
        }
    }

    /// The dispatcher the run uses.
    pub fn dispatcher(&self) -> DispatcherKind {
        self.dispatcher.unwrap_or(self.scheduler.default_dispatcher())
    }
}

/// What an oracle scheduler knows of the trace before it runs: its per-interval demand
/// (FPGA-static, FPGA-dynamic, MArk-ideal, the ideal Spork variants) and the headroom the search
/// found (FPGA-static, FPGA-dynamic). Empty for the others.
#[derive(Clone, Debug, Default)]
pub struct Oracle {
    /// The trace's per-interval demand.
    pub demand: Option<Arc<Demand>>,
    /// FPGA-dynamic's multiple of the largest step, FPGA-static's FPGAs above the busiest interval.
    pub headroom: u32,
}

impl Oracle {
    /// The demand of `requests` over `horizon` if `plan`'s scheduler is given it; headroom 0.
    pub fn demand_of(
        platform: &Platform,
        plan: &Plan,
        horizon: Time,
        requests: impl Iterator<Item = Request>,
    ) -> Oracle {
        let demand = plan
            .scheduler
            .needs_demand()
            .then(|| Arc::new(Demand::from_requests(platform, horizon, requests)));
        Oracle { demand, headroom: 0 }
    }

    /// The same knowledge with another headroom.
    pub fn with_headroom(&self, headroom: u32) -> Oracle {
        Oracle { demand: self.demand.clone(), headroom }
    }
}
