//! Evaluating schedulers on traces in virtual time.

pub mod brownout;
pub mod engine;
pub mod pool_brownout;
pub mod report;

pub use engine::{Engine, Outcome, Probe};
pub use pool_brownout::PoolBrownout;
pub use report::Report;

use crate::model::{Platform, Request, Time};
use crate::policy::{Demand, DispatcherKind, Scheduler};
use crate::trace::RateTrace;
use std::sync::Arc;

/// A source of requests that can be replayed from the start any number of times.
pub trait Workload: Sync {
    /// The requests in arrival order.
    fn requests(&self) -> impl Iterator<Item = Request> + '_;
    /// The trace length.
    fn horizon(&self) -> Time;
}

impl Workload for RateTrace {
    fn requests(&self) -> impl Iterator<Item = Request> + '_ {
        RateTrace::requests(self)
    }
    fn horizon(&self) -> Time {
        self.duration
    }
}

impl Workload for Vec<Request> {
    fn requests(&self) -> impl Iterator<Item = Request> + '_ {
        self.iter().copied()
    }
    fn horizon(&self) -> Time {
        self.last().map_or(0, |r| r.arrival + 1)
    }
}

/// How to evaluate: the scheduler, an optional dispatcher override, and search limits.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// The scheduler.
    pub scheduler: Scheduler,
    /// Dispatcher; `None` takes the scheduler's own.
    pub dispatcher: Option<DispatcherKind>,
    /// FPGA-dynamic: the largest headroom multiple to try.
    pub max_headroom: u32,
    /// Caps on the pool, per worker type (CPU, FPGA).
    pub max_workers: [Option<u32>; 2],
    /// Brownout on requests' optional parts.
    pub brownout: Option<PoolBrownout>,
}

impl Plan {
    /// `scheduler` with its own dispatcher.
    pub fn new(scheduler: Scheduler) -> Self {
        Plan { scheduler, dispatcher: None, max_headroom: 64, max_workers: [None, None], brownout: None }
    }
}

/// Per-interval demand of a workload (the oracle some schedulers get).
pub fn demand<W: Workload>(platform: &Platform, workload: &W) -> Demand {
    Demand::from_requests(platform, workload.horizon(), workload.requests())
}

/// Runs one scheduler with a given headroom multiple and probe.
pub fn run_with<W: Workload, P: Probe>(
    platform: &Platform,
    workload: &W,
    plan: &Plan,
    demand: Option<&Arc<Demand>>,
    headroom: u32,
    probe: P,
) -> (Report, P) {
    let (report, probe, _) = run_inner(platform, workload, plan, demand, headroom, probe, false);
    (report, probe)
}

/// One run; with `stop_at_miss` it ends at the first deadline miss and says so (the last value).
fn run_inner<W: Workload, P: Probe>(
    platform: &Platform,
    workload: &W,
    plan: &Plan,
    demand: Option<&Arc<Demand>>,
    headroom: u32,
    probe: P,
    stop_at_miss: bool,
) -> (Report, P, bool) {
    let dispatcher = plan.dispatcher.unwrap_or(plan.scheduler.default_dispatcher());
    let mut allocator = plan.scheduler.allocator(platform, demand, headroom);
    let engine = Engine::new(
        platform,
        allocator.as_mut(),
        dispatcher.build(plan.scheduler.fleet(), platform.fpga.spin_up),
        probe,
    )
    .drain_surplus(plan.scheduler.drains_surplus())
    .max_workers(plan.max_workers)
    .brownout(plan.brownout, 0)
    .stop_at_first_miss(stop_at_miss);
    let (outcome, probe) = engine.run(workload.requests(), workload.horizon());
    let mut report =
        Report::new(plan.scheduler.to_string(), dispatcher.name().to_string(), platform, &outcome);
    report.brownout = plan.brownout.map(|b| b.controller.name().to_string());
    (report, probe, outcome.aborted)
}

/// Evaluates `plan` on `workload`. FPGA-dynamic and FPGA-static get the least headroom (up to
/// `plan.max_headroom`) with no deadline misses, found by doubling then bisection; if none meets every
/// deadline, the largest is reported with its misses. Candidates that miss stop at their first miss,
/// so the search costs about one full run per candidate that meets every deadline.
pub fn evaluate<W: Workload>(platform: &Platform, workload: &W, plan: &Plan) -> Report {
    let demand = plan.scheduler.needs_demand().then(|| Arc::new(demand(platform, workload)));
    let full = |k: u32| run_inner(platform, workload, plan, demand.as_ref(), k, (), false).0;
    if !plan.scheduler.searches_headroom() {
        return full(0);
    }
    // A full report if headroom `k` meets every deadline, None at its first miss.
    let meets = |k: u32| {
        let (r, _, aborted) = run_inner(platform, workload, plan, demand.as_ref(), k, (), true);
        (!aborted && r.deadline_misses == 0).then_some(r)
    };
    // Misses fall as headroom grows: find the least multiple with none.
    let mut lo_fail: Option<u32> = None;
    let mut k = 0;
    let mut best = loop {
        if let Some(r) = meets(k) {
            break (k, r);
        }
        if k >= plan.max_headroom {
            break (k, full(k)); // nothing meets every deadline: report the largest with its misses
        }
        lo_fail = Some(k);
        k = if k == 0 { 1 } else { (k * 2).min(plan.max_headroom) };
    };
    if best.1.deadline_misses == 0
        && let Some(mut lo) = lo_fail
    {
        let mut hi = best.0;
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            match meets(mid) {
                Some(r) => {
                    hi = mid;
                    best = (mid, r);
                }
                None => lo = mid,
            }
        }
    }
    let (k, mut report) = best;
    report.headroom = Some(k);
    report
}
