//! The hardware request-queue/dispatch engine on the request path: the Verilated RTL
//! (`bitstreams/sim/dispatch.v`) or its cycle-accurate golden model, hardware in the loop.
//!
//! Before each decision the host writes the engine's elements from the pool it holds (the active
//! FPGAs, each on a stable element, with when its queue drains; freed elements disabled), holding
//! the queue while it writes, then pushes the request's descriptor and clocks the engine until the
//! grant or reject appears. The engine's clock advances only as it is clocked, so host time is
//! mapped onto it at each decision: a time `t` is the pop's cycle plus `t - now` at the board clock.

use std::sync::Arc;
use std::time::Instant;

use spork_golden::dispatch::{
    Config, Decision, Descriptor, EST_MASK, Engine as Golden, Inputs, Outputs, PES, QUEUE_LATENCY, TIME_MASK,
};
use spork_sim::Model;
use spork_sim::dispatch::Dispatch;

pub use spork_core::engine::hardware::EngineKind;
use spork_core::engine::hardware::{Board, DispatchStats, HardwareDispatch, HwDecision};
use spork_core::model::{Kind, Time, Unit};
use spork_core::policy::dispatch::Job;

/// Cycles the engine may take on one decision before it is declared hung.
const PATIENCE: u64 = 64;

/// Something that clocks like the engine: the RTL or the golden model.
trait Cycles: Send {
    fn cycle(&mut self, inputs: &Inputs) -> Outputs;
}

impl Cycles for Golden {
    fn cycle(&mut self, inputs: &Inputs) -> Outputs {
        Golden::cycle(self, inputs)
    }
}

/// The Verilated engine; the instance is dropped before the library it came from.
struct Rtl {
    dispatch: Dispatch,
    _model: Model,
}

impl Cycles for Rtl {
    fn cycle(&mut self, inputs: &Inputs) -> Outputs {
        self.dispatch.cycle(inputs)
    }
}

/// The dispatch engine as efficient-first's first step.
pub struct DispatchEngine {
    engine: Box<dyn Cycles>,
    /// Board clock (Hz): host time to engine cycles.
    clock_hz: f64,
    /// The engine's cycle counter, as the host has clocked it.
    now: u64,
    /// The board on each element.
    slots: [Option<Unit>; PES],
    /// What each element holds (as last written, or booked by a grant).
    held: [Config; PES],
    /// Each described board's start in the last decision, engine cycles.
    starts: Vec<(Unit, u64)>,
    next_id: u16,
    stats: Arc<DispatchStats>,
}

/// The engine could not be started.
#[derive(Debug, thiserror::Error)]
#[error(
    "the RTL dispatch engine: {0}\n  fix: build spork-sim (it verilates bitstreams/sim/dispatch.v), or use --dispatch-engine golden"
)]
pub struct EngineError(#[from] spork_sim::SimError);

impl DispatchEngine {
    /// The `kind` engine at `clock_hz` (`None` for the software rule), counting into `stats`.
    pub fn start(
        kind: EngineKind,
        clock_hz: f64,
        stats: Arc<DispatchStats>,
    ) -> Result<Option<DispatchEngine>, EngineError> {
        let engine: Box<dyn Cycles> = match kind {
            EngineKind::Software => return Ok(None),
            EngineKind::Golden => Box::new(Golden::new()),
            EngineKind::Rtl => {
                let model = Model::load("dispatch")?;
                Box::new(Rtl { dispatch: Dispatch::new(&model)?, _model: model })
            }
        };
        let held = std::array::from_fn(|pe| Config { pe: pe as u8, ..Config::default() });
        Ok(Some(DispatchEngine {
            engine,
            clock_hz,
            now: 0,
            slots: [None; PES],
            held,
            starts: Vec::new(),
            next_id: 0,
            stats,
        }))
    }

    /// Cycles in `t` nanoseconds, rounded up (a service or a wait is never shortened).
    fn cycles(&self, t: Time) -> u64 {
        (t as f64 * self.clock_hz / 1e9).ceil() as u64
    }

    /// Keeps each board on its element, frees those of boards gone, places new ones.
    fn place_boards(&mut self, boards: &[Board]) {
        for slot in &mut self.slots {
            if slot.is_some_and(|w| !boards.iter().any(|b| b.id == w)) {
                *slot = None;
            }
        }
        for b in boards {
            if !self.slots.contains(&Some(b.id))
                && let Some(free) = self.slots.iter_mut().find(|s| s.is_none())
            {
                *free = Some(b.id);
            }
        }
    }

    /// The element writes needed for the decision to pop in cycle `pop`: a busy board's drain at
    /// its exact cycle, an idle board at any cycle up to `pop`, an empty element disabled.
    fn writes(&self, boards: &[Board], now: Time, pop: u64) -> Vec<Config> {
        let mut writes = Vec::new();
        for (pe, slot) in self.slots.iter().enumerate() {
            let held = self.held[pe];
            let want = match slot.and_then(|w| boards.iter().find(|b| b.id == w)) {
                Some(b) if b.busy_until > now => {
                    let busy_until = (pop + self.cycles(b.busy_until - now)) & TIME_MASK;
                    Config { enabled: true, busy_until, ..held }
                }
                Some(_) if held.enabled && held.busy_until <= pop => continue,
                Some(_) => Config { enabled: true, busy_until: 0, ..held },
                None if !held.enabled => continue,
                None => Config { enabled: false, busy_until: 0, ..held },
            };
            if want != held {
                writes.push(want);
            }
        }
        writes
    }

    /// Clocks the engine: `writes` with the queue held, `descriptor` pushed in the first cycle, until
    /// its decision shows. `None` if it never does.
    fn run(&mut self, writes: &[Config], descriptor: Descriptor, pop: u64) -> Option<Decision> {
        for c in 0..PATIENCE {
            let cycle = self.now;
            let inputs = Inputs {
                push: (c == 0).then_some(descriptor),
                hold: cycle < pop,
                configure: writes.get(c as usize).copied(),
            };
            let out = self.engine.cycle(&inputs);
            self.now = (self.now + 1) & TIME_MASK;
            if out.now != cycle {
                return None;
            }
            if let Some(d) = out.decision {
                return Some(d);
            }
        }
        None
    }
}

impl HardwareDispatch for DispatchEngine {
    fn decide(&mut self, now: Time, boards: &[Board], job: &Job) -> HwDecision {
        let wall = Instant::now();
        let est = self.cycles(job.service[Kind::Fpga.index()]);
        if boards.len() > PES || est > u64::from(EST_MASK) {
            self.stats.beyond.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            return HwDecision::Beyond;
        }
        self.place_boards(boards);
        // The pop waits for the writes (each lands on its cycle's edge) and the queue's latency.
        let start = self.now;
        let mut pop = start + QUEUE_LATENCY;
        let writes = loop {
            let writes = self.writes(boards, now, pop);
            let needed = start + (writes.len() as u64).max(QUEUE_LATENCY);
            if needed <= pop {
                break writes;
            }
            pop = needed;
        };
        let deadline = match job.deadline.checked_sub(now) {
            Some(left) => (pop + (left as f64 * self.clock_hz / 1e9).floor() as u64).min(TIME_MASK),
            None => pop.saturating_sub(1),
        };
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        let descriptor = Descriptor { id, kernel: 0, est: est as u32, deadline };
        for w in &writes {
            self.held[usize::from(w.pe)] = *w;
        }
        self.starts = self
            .slots
            .iter()
            .enumerate()
            .filter_map(|(pe, s)| s.map(|w| (w, self.held[pe].busy_until.max(pop))))
            .collect();
        let decision = self.run(&writes, descriptor, pop);
        let s = &self.stats;
        let relaxed = std::sync::atomic::Ordering::Relaxed;
        s.decisions.fetch_add(1, relaxed);
        s.cycles.fetch_add(self.now.wrapping_sub(start) & TIME_MASK, relaxed);
        s.writes.fetch_add(writes.len() as u64, relaxed);
        s.wall_ns.fetch_add(wall.elapsed().as_nanos() as u64, relaxed);
        match decision {
            Some(Decision::Grant { id: got, pe, start, finish }) if got == id => {
                self.held[usize::from(pe)].busy_until = finish;
                match self.slots[usize::from(pe) % PES] {
                    Some(w) => {
                        s.grants.fetch_add(1, relaxed);
                        HwDecision::Grant { id: w, start }
                    }
                    None => {
                        s.beyond.fetch_add(1, relaxed);
                        HwDecision::Beyond
                    }
                }
            }
            Some(Decision::Reject { id: got }) if got == id => HwDecision::Reject,
            // A hung engine or a decision on another descriptor: the software rule decides.
            _ => {
                s.beyond.fetch_add(1, relaxed);
                HwDecision::Beyond
            }
        }
    }

    fn start_cycles(&self, id: Unit) -> Option<u64> {
        self.starts.iter().find(|(w, _)| *w == id).map(|&(_, s)| s)
    }

    fn stats(&self) -> &DispatchStats {
        &self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};
    use spork_core::engine::{Engine, Oracle, Plan, replay};
    use spork_core::model::time::from_secs;
    use spork_core::model::{Platform, Request};
    use spork_core::policy::Scheduler;

    /// A bursty minute: a base load with bursts, so the allocator holds several FPGAs that fill and
    /// drain, and CPUs take the overflow.
    fn trace(seed: u64) -> Vec<Request> {
        let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(seed);
        let (mut t, mut out) = (0u64, Vec::new());
        while t < from_secs(60.0) {
            let burst = (t / from_secs(10.0)) % 2 == 1;
            let rate = if burst { 4000.0 } else { 1500.0 };
            t += (rng.random::<f64>().max(1e-12).ln() * -1e9 / rate) as u64;
            let size = from_secs(rng.random_range(0.5e-3..2e-3));
            out.push(Request::new(t, size, 0));
        }
        out
    }

    /// Efficient-first with its first step in the engine decides as the software rule does: every
    /// decision agrees or is a tie (the RTL breaks ties by lowest element), for the golden model and
    /// the Verilated RTL alike, and the run books the same outcome as the software's.
    #[test]
    fn the_engine_decides_as_the_software_rule_outside_ties() {
        let platform = Platform {
            fpga: spork_core::model::WorkerSpec { spin_up: from_secs(1.0), ..Platform::default().fpga },
            ..Platform::default()
        };
        let plan = Plan { seed: 3, ..Plan::new(Scheduler::Spork(spork_core::policy::Objective::ENERGY)) };
        let requests = trace(9);
        let horizon = from_secs(60.0);
        let software = replay(
            Engine::new(platform, &plan, &Oracle::default()),
            requests.iter().copied(),
            horizon,
            &mut (),
        );
        for kind in [EngineKind::Golden, EngineKind::Rtl] {
            let stats = Arc::new(DispatchStats::default());
            let hw = DispatchEngine::start(kind, 250e6, stats.clone()).expect("engine").expect("hardware");
            let mut engine = Engine::new(platform, &plan, &Oracle::default());
            engine.dispatch_in_hardware(Box::new(hw));
            let outcome = replay(engine, requests.iter().copied(), horizon, &mut ());
            let c = stats.snapshot();
            eprintln!("{kind:?}: {c:?}");
            assert!(c.decisions > 10_000 && c.grants > 5_000, "{kind:?}: the engine decided: {c:?}");
            assert!(c.decisions > c.grants, "{kind:?}: and rejected some: {c:?}");
            assert_eq!(c.disagree, 0, "{kind:?}: {c:?}");
            assert_eq!(c.agree + c.ties, c.decisions, "{kind:?}: {c:?}");
            assert!(
                c.cycles >= 3 * c.decisions,
                "{kind:?}: three cycles from push to decision at least: {c:?}"
            );
            let (hw, sw) = (&outcome.tally, &software.tally);
            let same = (hw.served, hw.misses, hw.rejected) == (sw.served, sw.misses, sw.rejected);
            assert!(
                c.ties > 0 || same,
                "{kind:?}: no tie, so the same run: {:?} vs {:?}",
                hw.served,
                sw.served
            );
        }
    }
}
