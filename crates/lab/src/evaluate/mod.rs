//! The evaluator: the engine driven in virtual time, and the paper's metrics of each run.
//!
//! A driver of [`spork_core::engine`] like the live runtime, with a virtual clock: each arrival's time is
//! the clock. It carries out nothing (`()` effects) and turns the engine's [`Outcome`] into a
//! [`Report`]. `brownout` is the single-server scenario of the brownout papers.

pub mod brownout;
pub mod report;

pub use report::Report;
pub use spork_core::engine::{Plan, PoolBrownout};

use spork_core::engine::boards::SharedBoards;
use spork_core::engine::{Effects, Engine, Hint, Oracle, Outcome, replay, replay_shared, told_near};
use spork_core::model::{Platform, Request, Time};
use spork_core::policy::Demand;
use spork_core::policy::arbitrate::Sharing;
use spork_core::trace::RateTrace;

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

/// A trace's requests generated once and replayed from memory: runs that share a trace (every
/// scheduler of a point, every candidate of a headroom search) skip drawing its arrivals again.
/// Replays exactly what the trace's own iterator gives, with the trace's length.
#[derive(Clone, Debug)]
pub struct Recorded {
    requests: Vec<Request>,
    horizon: Time,
}

impl Recorded {
    /// Draws `trace`'s requests.
    pub fn of(trace: &RateTrace) -> Self {
        Recorded { requests: trace.requests().collect(), horizon: trace.duration }
    }
}

impl Workload for Recorded {
    fn requests(&self) -> impl Iterator<Item = Request> + '_ {
        self.requests.iter().copied()
    }
    fn horizon(&self) -> Time {
        self.horizon
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
/// meets every deadline ([`spork_core::engine::search_headroom`]), reported beside their figures.
pub fn evaluate<W: Workload>(platform: &Platform, workload: &W, plan: &Plan) -> Report {
    evaluate_near(platform, workload, plan, None).0
}

/// [`evaluate`], a headroom search started near `hint` when given (a like run's, the second of what
/// this returns; [`spork_core::engine::told_near`]): the same report, found in fewer replays when the hint
/// is close, and this run's hint for the next (`None` if it searched no headroom).
pub fn evaluate_near<W: Workload>(
    platform: &Platform,
    workload: &W,
    plan: &Plan,
    hint: Option<Hint>,
) -> (Report, Option<Hint>) {
    let (run, hint) = run_near(platform, workload, plan, hint);
    (run.report(platform, plan), hint)
}

/// A run's outcome and the headroom it ran with (if searched), before a report is derived: runs
/// that share an outcome ([`spork_core::policy::Scheduler::outcome_platform`]) report it on their own
/// platforms.
#[derive(Clone, Debug)]
pub struct Run {
    /// What the run counted.
    pub outcome: Outcome,
    /// The headroom searched, if any.
    pub headroom: Option<u32>,
}

impl Run {
    /// Its report as a run of `plan` on `platform`.
    pub fn report(&self, platform: &Platform, plan: &Plan) -> Report {
        let mut report = report(platform, plan, &self.outcome);
        report.headroom = self.headroom;
        report
    }
}

/// [`evaluate_near`]'s run, before its report.
pub fn run_near<W: Workload>(
    platform: &Platform,
    workload: &W,
    plan: &Plan,
    hint: Option<Hint>,
) -> (Run, Option<Hint>) {
    let oracle = oracle(platform, workload, plan);
    match told_near(platform, plan, oracle, || workload.requests(), workload.horizon(), hint) {
        (oracle, None) => {
            let engine = Engine::new(*platform, plan, &oracle);
            let outcome = replay(engine, workload.requests(), workload.horizon(), &mut ());
            (Run { outcome, headroom: None }, None)
        }
        (oracle, Some(found)) => {
            let hint = found.hint(platform, plan, &oracle);
            (Run { outcome: found.outcome, headroom: Some(found.headroom) }, Some(hint))
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
    evaluate_shared_at(platform, workloads, &[], plan, boards, sharing)
}

/// [`evaluate_shared`] with each application's own board speedup: `speedups[i]` for application
/// `i` (the platform's where the slice ends). The boards' powers and prices are the machine's; how
/// fast a board runs an application's kernel is that application's, so its allocator, its bids for
/// shared boards and its report all use its own S.
pub fn evaluate_shared_at<W: Workload>(
    platform: &Platform,
    workloads: &[W],
    speedups: &[f64],
    plan: &Plan,
    boards: Option<u32>,
    sharing: Sharing,
) -> Vec<Report> {
    let platforms: Vec<Platform> = (0..workloads.len())
        .map(|i| {
            let mut p = *platform;
            p.fpga.speedup = speedups.get(i).copied().unwrap_or(p.fpga.speedup);
            p
        })
        .collect();
    let shared = boards.map(|n| SharedBoards::new(n, workloads.len(), sharing));
    let engines = (0..workloads.len())
        .map(|i| {
            let mut e = Engine::new(platforms[i], plan, &oracle(&platforms[i], &workloads[i], plan));
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
    outcomes.iter().zip(&platforms).map(|(o, p)| report(p, plan, o)).collect()
}

fn report(platform: &Platform, plan: &Plan, outcome: &Outcome) -> Report {
    let mut report =
        Report::new(plan.scheduler.to_string(), plan.dispatcher().name().to_string(), platform, outcome);
    report.brownout = plan.brownout.map(|b| b.controller.name().to_string());
    report.fpga_never_pays = plan.scheduler.fpga_never_pays(platform);
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use spork_core::model::time::from_secs;
    use spork_core::policy::{Objective, Scheduler};
    use spork_core::trace::Synthetic;

    fn at_speedup(s: f64) -> Platform {
        let mut p = Platform::default();
        p.fpga.speedup = s;
        p
    }

    /// Below S = 1/3 at the paper's powers a board loses even fully used: SporkE, SporkC and SporkB
    /// hold none, say so in the report, and spend what CPU-dynamic spends (within 2%).
    #[test]
    fn where_a_board_loses_spork_holds_none_and_spends_what_cpus_alone_spend() {
        let trace = Synthetic { duration: from_secs(900.0), ..Synthetic::paper_default(7) }
            .generate()
            .expect("trace");
        let platform = at_speedup(0.19);
        let cpus = evaluate(&platform, &trace, &Plan::new(Scheduler::CpuDynamic));
        for o in [Objective::ENERGY, Objective::COST, Objective::BALANCED] {
            let r = evaluate(&platform, &trace, &Plan::new(Scheduler::Spork(o)));
            assert_eq!(r.fpga.spin_ups, 0, "{}", r.scheduler);
            let never = r.fpga_never_pays.expect("the report says why");
            assert!((never.speedup - 0.19).abs() < 1e-12 && never.needs >= 1.0 / 3.0 - 1e-12, "{never:?}");
            assert!(
                (r.energy_j / cpus.energy_j - 1.0).abs() < 0.02,
                "{}: {} vs {}",
                r.scheduler,
                r.energy_j,
                cpus.energy_j
            );
        }
        // Where it pays, the report says nothing of it.
        let paying = evaluate(&at_speedup(2.0), &trace, &Plan::new(Scheduler::Spork(Objective::ENERGY)));
        assert!(paying.fpga_never_pays.is_none() && paying.fpga.spin_ups > 0);
    }

    /// Shared boards with a speedup per application: the application whose boards lose never gets
    /// one, however many are free; the other gets what it wants.
    #[test]
    fn shared_boards_go_only_to_the_application_they_pay_for() {
        let traces: Vec<RateTrace> = (1..=2)
            .map(|seed| {
                Synthetic { duration: from_secs(600.0), ..Synthetic::paper_default(seed) }
                    .generate()
                    .expect("trace")
            })
            .collect();
        let plan = Plan::new(Scheduler::Spork(Objective::ENERGY));
        let reports = evaluate_shared_at(
            &Platform::default(),
            &traces,
            &[0.19, 2.0],
            &plan,
            Some(1000),
            Sharing::Arbitrate,
        );
        assert_eq!(reports[0].fpga.spin_ups, 0);
        assert!(reports[0].fpga_never_pays.is_some());
        assert!(reports[1].fpga.spin_ups > 0 && reports[1].fpga_never_pays.is_none());
    }

    /// FPGA-static's search (headrooms 0 and 1, then the boards a run at the largest headroom used)
    /// settles on the headroom and the run that doubling and bisection find: short and long requests,
    /// one and four compute units per board, headrooms from 0 to past 1.
    #[test]
    fn a_static_pool_searched_from_the_boards_used_is_the_one_doubling_finds() {
        use spork_core::engine::{search_by_doubling, search_headroom};
        use spork_core::trace::SizeSpec;
        let cases = [
            (1, 0.7, 10.0, SizeSpec::Short, 1),
            (4, 0.75, 10.0, SizeSpec::Short, 1),
            (5, 0.75, 1.0, SizeSpec::Short, 1),
            (2, 0.6, 60.0, SizeSpec::Long, 1),
            (3, 0.7, 10.0, SizeSpec::Short, 4),
        ];
        let mut largest = 0;
        for (seed, burstiness, spin_up, size, cus) in cases {
            let trace =
                Synthetic { burstiness, size, duration: from_secs(900.0), ..Synthetic::paper_default(seed) }
                    .generate()
                    .expect("trace");
            let mut platform = Platform::default();
            platform.fpga.spin_up = from_secs(spin_up);
            platform.fpga.compute_units = cus;
            let plan = Plan::new(Scheduler::FpgaStatic);
            let recorded = Recorded::of(&trace);
            let oracle = oracle(&platform, &recorded, &plan);
            let (requests, horizon) = (|| recorded.requests(), recorded.horizon());
            let ours = search_headroom(&platform, &plan, &oracle, requests, horizon);
            let doubling = search_by_doubling(&platform, &plan, &oracle, requests, horizon);
            let case = format!("seed {seed}, burstiness {burstiness}, spin-up {spin_up} s, {cus} CUs");
            assert_eq!(ours.headroom, doubling.headroom, "{case}");
            let (a, b) =
                (report(&platform, &plan, &ours.outcome), report(&platform, &plan, &doubling.outcome));
            assert_eq!(a, b, "{case}");
            largest = largest.max(ours.headroom);
        }
        assert!(largest >= 2, "no case took the route past headrooms 0 and 1 (largest {largest})");
    }

    /// A headroom search started from any hint (none, too low, right, too high, past the maximum)
    /// settles on the headroom, and the run, of the search from zero; so does a recorded trace.
    #[test]
    fn a_search_from_any_hint_and_a_recorded_trace_give_the_report_of_the_search_from_zero() {
        for (seed, scheduler) in
            [(1, Scheduler::FpgaStatic), (2, Scheduler::FpgaDynamic), (3, Scheduler::FpgaDynamic)]
        {
            let trace =
                Synthetic { burstiness: 0.7, duration: from_secs(900.0), ..Synthetic::paper_default(seed) }
                    .generate()
                    .expect("trace");
            let platform = Platform::default();
            let plan = Plan::new(scheduler);
            let (from_zero, found) = evaluate_near(&platform, &trace, &plan, None);
            let found = found.expect("searched");
            let recorded = Recorded::of(&trace);
            assert_eq!(evaluate(&platform, &recorded, &plan), from_zero, "recorded, {scheduler}");
            // Hints of both kinds: none, too little, one short, right, one over, far over, past the
            // maximum (in CPU workers' worth for FPGA-static, in headroom for FPGA-dynamic).
            let (h, c) = (found.headroom, found.capacity);
            for (headroom, capacity) in [
                (0, 0.0),
                (1, 1.0),
                (h.saturating_sub(1), (c - 1.0).max(0.0)),
                (h, c),
                (h + 1, c + 1.0),
                (h + 9, c + 9.0),
                (h * 3, c * 3.0),
                (500, 5e4),
            ] {
                let hint = Hint { headroom, capacity };
                let (near, _) = evaluate_near(&platform, &recorded, &plan, Some(hint));
                assert_eq!(near, from_zero, "{scheduler}, seed {seed}, {hint:?} (found {found:?})");
            }
        }
    }
}
