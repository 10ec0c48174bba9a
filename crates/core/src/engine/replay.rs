//! Virtual time: replaying a trace through the engine as fast as it goes, and the headroom search
//! that FPGA-static and FPGA-dynamic need before they can run at all.

use super::core::Engine;
use super::effects::Effects;
use super::outcome::Outcome;
use super::plan::{Oracle, Plan};
use crate::model::{Kind, Platform, Request, Time};

/// Runs `requests` (in arrival order) over a trace of length `horizon`, reporting effects to `fx`.
pub fn replay(
    mut engine: Engine,
    requests: impl Iterator<Item = Request>,
    horizon: Time,
    fx: &mut impl Effects,
) -> Outcome {
    engine.begin(horizon, fx);
    feed(&mut engine, requests, false, fx);
    drain(engine, fx)
}

/// Several engines (one pool per application, each sharing the machine's boards through its
/// [`Engine::share_boards`] handle) replayed in one virtual clock, each over its own requests (in
/// arrival order) and reporting to its own effects sink. Every engine is advanced to each arrival
/// before it is placed, so their interval ticks, and with them their claims on the boards, happen in
/// time order across engines (ties: the earlier engine first). Returns each engine's outcome.
pub fn replay_shared<I: Iterator<Item = Request>, F: Effects>(
    mut engines: Vec<Engine>,
    traces: Vec<I>,
    horizon: Time,
    fx: &mut [F],
) -> Vec<Outcome> {
    assert_eq!((engines.len(), traces.len()), (fx.len(), fx.len()), "one trace and one sink per engine");
    for (e, f) in engines.iter_mut().zip(fx.iter_mut()) {
        e.begin(horizon, f);
    }
    let mut traces: Vec<_> = traces.into_iter().map(Iterator::peekable).collect();
    loop {
        let next = traces.iter_mut().enumerate().filter_map(|(i, t)| t.peek().map(|r| (r.arrival, i))).min();
        let Some((at, i)) = next else { break };
        advance_all(&mut engines, at, true, fx);
        if let Some(r) = traces[i].next() {
            engines[i].arrive(r, &mut fx[i]);
        }
    }
    // The pools drain on their timers, still in time order across engines.
    while let Some(at) = engines.iter().filter_map(|e| e.next_event(false)).min() {
        advance_all(&mut engines, at, false, fx);
    }
    engines.into_iter().map(Engine::finish).collect()
}

fn advance_all<F: Effects>(engines: &mut [Engine], at: Time, brownout: bool, fx: &mut [F]) {
    for (e, f) in engines.iter_mut().zip(fx.iter_mut()) {
        e.advance(at, brownout, f);
    }
}

/// The run if it meets every deadline; `None` at its first miss, where it stops: a cheap yes/no for
/// a search that only asks whether a configuration misses at all.
fn without_misses(
    mut engine: Engine,
    requests: impl Iterator<Item = Request>,
    horizon: Time,
) -> Option<Outcome> {
    engine.begin(horizon, &mut ());
    feed(&mut engine, requests, true, &mut ()).then(|| drain(engine, &mut ()))
}

/// Feeds every arrival, with what is due before it; false if it stopped at a miss.
fn feed(
    engine: &mut Engine,
    requests: impl Iterator<Item = Request>,
    stop_at_miss: bool,
    fx: &mut impl Effects,
) -> bool {
    let mut requests = requests.into_iter();
    let mut next = requests.next();
    while let Some(r) = next {
        // The next arrival is drawn before this one is placed: its draw (a square root and a
        // division on a chain from one arrival to the next) then overlaps this one's dispatch in
        // the processor, where drawn after it would wait for it and be waited for.
        next = requests.next();
        // Everything due by the arrival goes first (ticks, worker timers, brownout periods).
        engine.advance(r.arrival, true, fx);
        engine.arrive(r, fx);
        if stop_at_miss && engine.tally().misses > 0 {
            return false;
        }
    }
    true
}

/// No more arrivals: the ticks run out to the horizon and the pool drains on its timers.
fn drain(mut engine: Engine, fx: &mut impl Effects) -> Outcome {
    engine.advance(Time::MAX, false, fx);
    debug_assert!(engine.pool().is_empty(), "pool not drained");
    engine.finish()
}

/// The headroom FPGA-static and FPGA-dynamic run with, and the run it gave.
#[derive(Clone, Debug)]
pub struct Searched {
    /// The least headroom (up to the plan's maximum) with no deadline miss, or the maximum if none
    /// meets every deadline.
    pub headroom: u32,
    /// The full run at that headroom.
    pub outcome: Outcome,
}

impl Searched {
    /// Where a like run's search starts ([`told_near`]).
    /// FPGA-static's is the boards its run used, not its pool: a pool of the peak interval's need
    /// can hold more than the bursts take (a 1 s interval's peak), and a hint that high would make
    /// the next search run every candidate it gallops down through to the end.
    pub fn hint(&self, platform: &Platform, plan: &Plan, oracle: &Oracle) -> Hint {
        let pool = plan.scheduler.headroom_fpgas(&oracle.demand.clone().unwrap_or_default(), self.headroom);
        let fpgas =
            if plan.scheduler.holds_a_static_pool() { boards_used(&self.outcome).min(pool) } else { pool };
        Hint { headroom: self.headroom, capacity: capacity(platform, fpgas) }
    }
}

/// A like run's search result, for the next search to start near: the same trace at another
/// spin-up, speedup or power ([`crate::policy::Scheduler::headroom_near`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hint {
    /// Its headroom.
    pub headroom: u32,
    /// What its headroom came to, in CPU workers' worth of boards ([`capacity`]).
    pub capacity: f64,
}

/// `fpgas` boards in CPU workers' worth (speedup times compute units each): FPGA-static's pool in a
/// unit that holds across runs of one trace at other spin-ups (the burst's need does not change with
/// the interval), speedups (a board of twice the speedup does the work of two) and powers.
fn capacity(platform: &Platform, fpgas: u32) -> f64 {
    f64::from(fpgas) * platform.fpga.speedup * f64::from(platform.fpga.compute_units.max(1))
}

/// What a run of `plan` is told in advance: `oracle`, with the searched headroom if its scheduler
/// searches one (FPGA-static, FPGA-dynamic: [`search_headroom`], whose full run comes back too).
/// The one place that decides it, for the evaluator and the live runtime alike.
pub fn told<I: Iterator<Item = Request>>(
    platform: &Platform,
    plan: &Plan,
    oracle: Oracle,
    requests: impl Fn() -> I,
    horizon: Time,
) -> (Oracle, Option<Searched>) {
    told_near(platform, plan, oracle, requests, horizon, None)
}

/// [`told`], the search started near `hint` when given (a like run's, [`Searched::hint`]), as a
/// headroom of this run's ([`crate::policy::Scheduler::headroom_near`], [`search_headroom_near`]).
pub fn told_near<I: Iterator<Item = Request>>(
    platform: &Platform,
    plan: &Plan,
    oracle: Oracle,
    requests: impl Fn() -> I,
    horizon: Time,
    hint: Option<Hint>,
) -> (Oracle, Option<Searched>) {
    if !plan.scheduler.searches_headroom() {
        return (oracle, None);
    }
    let found = match hint {
        None => search_headroom(platform, plan, &oracle, requests, horizon),
        Some(like) => {
            let fpgas = (like.capacity / capacity(platform, 1)).ceil() as u32;
            let demand = oracle.demand.clone().unwrap_or_default();
            let h = plan.scheduler.headroom_near(&demand, like.headroom, fpgas);
            search_headroom_near(platform, plan, &oracle, requests, horizon, h)
        }
    };
    (oracle.with_headroom(found.headroom), Some(found))
}

/// Finds the least headroom (up to `plan.max_headroom`) with no deadline misses: FPGA-static's from
/// the boards a large pool used (`search_static_pool`), FPGA-dynamic's by doubling then bisection
/// ([`search_by_doubling`]); if none meets every deadline, the largest is returned with its misses.
/// Candidates that miss stop at their first miss, so a search costs about one full run per candidate
/// that meets every deadline. Both drivers call this: the evaluator to report the run, the live runtime to
/// give its FPGA-static or FPGA-dynamic the same headroom.
pub fn search_headroom<I: Iterator<Item = Request>>(
    platform: &Platform,
    plan: &Plan,
    oracle: &Oracle,
    requests: impl Fn() -> I,
    horizon: Time,
) -> Searched {
    if plan.scheduler.holds_a_static_pool() {
        return search_static_pool(platform, plan, oracle, requests, horizon);
    }
    search_by_doubling(platform, plan, oracle, requests, horizon)
}

/// [`search_headroom`] by doubling from zero, then bisection: FPGA-dynamic's (whose run says
/// nothing of a smaller multiple), and the reference FPGA-static's route is tested against.
pub fn search_by_doubling<I: Iterator<Item = Request>>(
    platform: &Platform,
    plan: &Plan,
    oracle: &Oracle,
    requests: impl Fn() -> I,
    horizon: Time,
) -> Searched {
    let engine = |k: u32| Engine::new(*platform, plan, &oracle.with_headroom(k));
    // A full outcome if headroom `k` meets every deadline, None at its first miss.
    let meets = |k: u32| without_misses(engine(k), requests(), horizon);
    // Misses fall as headroom grows: find the least multiple with none.
    let mut lo_fail: Option<u32> = None;
    let mut k = 0;
    let mut best = loop {
        if let Some(o) = meets(k) {
            break (k, o);
        }
        if k >= plan.max_headroom {
            // Nothing meets every deadline: the largest, with its misses.
            break (k, replay(engine(k), requests(), horizon, &mut ()));
        }
        lo_fail = Some(k);
        k = if k == 0 { 1 } else { (k * 2).min(plan.max_headroom) };
    };
    if best.1.tally.misses == 0
        && let Some(lo) = lo_fail
    {
        best = bisect(lo, best, meets);
    }
    Searched { headroom: best.0, outcome: best.1 }
}

/// FPGA boards that served at least one request in `outcome`'s run.
fn boards_used(outcome: &Outcome) -> u32 {
    let used = outcome.pool.slots().iter().filter(|w| w.kind == Kind::Fpga && w.served > 0).count();
    u32::try_from(used).unwrap_or(u32::MAX)
}

/// [`search_headroom`] for a pool held from the start (FPGA-static), in about two full runs where
/// doubling and bisection take four or more. Headrooms 0 and 1 are tried first (a miss stops its
/// run early); if both miss, one run at the largest headroom counts the boards that
/// ever served, and the search starts at a pool of that many ([`search_headroom_near`]). A pool that
/// large makes the same choices: efficient-first takes a board that never served (all idle since the
/// start, so the least recently busy) only when no board that served can meet the deadline, so a
/// smaller pool misses where the larger one reached for its next unused board. Where that argument
/// does not hold (boards spun up on the dispatch path for long deadlines), the start is only a hint
/// and the search from it still settles on the least headroom.
fn search_static_pool<I: Iterator<Item = Request>>(
    platform: &Platform,
    plan: &Plan,
    oracle: &Oracle,
    requests: impl Fn() -> I,
    horizon: Time,
) -> Searched {
    let max = plan.max_headroom;
    // A headroom of 0 or 1 is common (a 1 s interval's peak covers its bursts) and settles in one
    // full run, where the route below takes two.
    for k in 0..2.min(max) {
        if let Some(outcome) =
            without_misses(Engine::new(*platform, plan, &oracle.with_headroom(k)), requests(), horizon)
        {
            return Searched { headroom: k, outcome };
        }
    }
    let largest =
        replay(Engine::new(*platform, plan, &oracle.with_headroom(max)), requests(), horizon, &mut ());
    if largest.tally.misses > 0 {
        // Nothing meets every deadline: the largest, with its misses.
        return Searched { headroom: max, outcome: largest };
    }
    let demand = oracle.demand.clone().unwrap_or_default();
    let start = plan.scheduler.headroom_near(&demand, 0, boards_used(&largest));
    search_headroom_near(platform, plan, oracle, requests, horizon, start.min(max))
}

/// The least headroom above `lo` (which misses) up to `hi.0` (which meets, with its run) that meets
/// every deadline, by bisection.
fn bisect(mut lo: u32, mut hi: (u32, Outcome), meets: impl Fn(u32) -> Option<Outcome>) -> (u32, Outcome) {
    while hi.0 - lo > 1 {
        let mid = lo + (hi.0 - lo) / 2;
        match meets(mid) {
            Some(o) => hi = (mid, o),
            None => lo = mid,
        }
    }
    hi
}

/// The least headroom that meets, given that `hi` does (with its run): candidates 2, 4, 8, ... below
/// it until one misses, then bisection of the last step.
fn gallop_down(mut hi: (u32, Outcome), meets: impl Fn(u32) -> Option<Outcome>) -> (u32, Outcome) {
    let mut step = 2;
    while hi.0 > 0 {
        let k = hi.0.saturating_sub(step);
        match meets(k) {
            Some(o) => (hi, step) = ((k, o), step * 2),
            None => return bisect(k, hi, meets),
        }
    }
    hi
}

/// [`search_headroom`] for a run like one whose headroom was `hint` (the same trace on another
/// spin-up, speedup or power). A candidate that misses stops at its first miss, one that meets runs
/// to the end, so the search avoids candidates that meet: if the hint meets and one less misses,
/// that is the answer (one full run and one short); if one less meets too, candidates below it are
/// tried at steps of 2, 4, 8, ... and the last gap bisected; if the hint misses, candidates above it
/// are tried at steps of 1, 2, 4, ... and the last gap bisected. Misses fall as headroom grows, so
/// every path finds the same least headroom as the search from zero.
pub fn search_headroom_near<I: Iterator<Item = Request>>(
    platform: &Platform,
    plan: &Plan,
    oracle: &Oracle,
    requests: impl Fn() -> I,
    horizon: Time,
    hint: u32,
) -> Searched {
    let engine = |k: u32| Engine::new(*platform, plan, &oracle.with_headroom(k));
    let meets = |k: u32| without_misses(engine(k), requests(), horizon);
    let max = plan.max_headroom;
    let h = hint.min(max);
    let best = match meets(h) {
        Some(o) if h == 0 => (0, o),
        Some(o) => match meets(h - 1) {
            None => (h, o),
            Some(below) => gallop_down((h - 1, below), meets),
        },
        None => {
            let (mut lo, mut step) = (h, 1);
            loop {
                if lo >= max {
                    // Nothing meets every deadline: the largest, with its misses.
                    break (max, replay(engine(max), requests(), horizon, &mut ()));
                }
                let k = (lo + step).min(max);
                match meets(k) {
                    Some(o) => break bisect(lo, (k, o), meets),
                    None => (lo, step) = (k, step * 2),
                }
            }
        }
    };
    Searched { headroom: best.0, outcome: best.1 }
}
