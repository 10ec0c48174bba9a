//! The evaluator: the engine driven in virtual time, and the paper's metrics of each run.
//!
//! A driver of [`crate::engine`] like the live runtime, with a virtual clock: each arrival's time is
//! the clock. It carries out nothing (`()` effects) and turns the engine's [`Outcome`] into a
//! [`Report`]. `brownout` is the single-server scenario of the brownout papers.

pub mod brownout;
pub mod report;

pub use crate::engine::{Plan, PoolBrownout};
pub use report::Report;

use crate::engine::boards::SharedBoards;
use crate::engine::{Effects, Engine, Oracle, Outcome, replay, replay_shared, told};
use crate::model::{Platform, Request, Time};
use crate::policy::Demand;
use crate::policy::arbitrate::Sharing;
use crate::trace::RateTrace;

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

/// Per-interval demand of a workload (the oracle some schedulers get).
pub fn demand<W: Workload>(platform: &Platform, workload: &W) -> Demand {
    Demand::from_requests(platform, workload.horizon(), workload.requests())
}

/// What `plan`'s scheduler is told of `workload` in advance (its demand, if an oracle), headroom 0.
fn oracle<W: Workload>(platform: &Platform, workload: &W, plan: &Plan) -> Oracle {
    Oracle::demand_of(platform, plan, workload.horizon(), workload.requests())
}

/// Runs `plan` once with a given `headroom`, reporting the engine's effects to `fx` (tests record
/// every booking this way).
pub fn run_with<W: Workload>(
    platform: &Platform,
    workload: &W,
    plan: &Plan,
    headroom: u32,
    fx: &mut impl Effects,
) -> Report {
    let oracle = oracle(platform, workload, plan).with_headroom(headroom);
    let engine = Engine::new(*platform, plan, &oracle);
    report(platform, plan, &replay(engine, workload.requests(), workload.horizon(), fx))
}

/// Evaluates `plan` on `workload`. FPGA-dynamic and FPGA-static run with the least headroom that
/// meets every deadline ([`crate::engine::search_headroom`]), reported beside their figures.
pub fn evaluate<W: Workload>(platform: &Platform, workload: &W, plan: &Plan) -> Report {
    let oracle = oracle(platform, workload, plan);
    match told(platform, plan, oracle, || workload.requests(), workload.horizon()) {
        (oracle, None) => {
            let engine = Engine::new(*platform, plan, &oracle);
            report(platform, plan, &replay(engine, workload.requests(), workload.horizon(), &mut ()))
        }
        (_, Some(found)) => {
            let mut report = report(platform, plan, &found.outcome);
            report.headroom = Some(found.headroom);
            report
        }
    }
}

/// Several applications, one pool each under `plan` (an online scheduler), on one machine with
/// `boards` boards shared by `sharing` (`None`: as many as they want), replayed in one virtual clock
/// ([`replay_shared`]). One report per application, in order; the traces' length is the longest.
pub fn evaluate_shared<W: Workload>(
    platform: &Platform,
    workloads: &[W],
    plan: &Plan,
    boards: Option<u32>,
    sharing: Sharing,
) -> Vec<Report> {
    let shared = boards.map(|n| SharedBoards::new(n, workloads.len(), sharing));
    let engines = (0..workloads.len())
        .map(|i| {
            let mut e = Engine::new(*platform, plan, &oracle(platform, &workloads[i], plan));
            if let Some(s) = &shared {
                e.share_boards(s.handle(i));
            }
            e
        })
        .collect();
    let horizon = workloads.iter().map(Workload::horizon).max().unwrap_or(0);
    let traces = workloads.iter().map(Workload::requests).collect();
    let mut sinks = vec![(); workloads.len()];
    let outcomes = replay_shared(engines, traces, horizon, &mut sinks);
    outcomes.iter().map(|o| report(platform, plan, o)).collect()
}

fn report(platform: &Platform, plan: &Plan, outcome: &Outcome) -> Report {
    let mut report =
        Report::new(plan.scheduler.to_string(), plan.dispatcher().name().to_string(), platform, outcome);
    report.brownout = plan.brownout.map(|b| b.controller.name().to_string());
    report
}
