//! Efficient-first's first step taken by a hardware dispatch engine (the Verilated RTL, or its
//! cycle-accurate golden model): which active FPGA takes a request, or none. The pool's engine applies
//! the dispatch engine's answer (a grant books that board; a reject goes on to the rule's later steps,
//! CPUs included) and checks every answer against the software rule, counting agreements, ties (the
//! RTL breaks them by lowest element, the software by least idle) and disagreements. A pool decides
//! its requests one at a time, so the engine's descriptor queue holds one request at a time.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::model::{Time, Unit};
use crate::policy::dispatch::Job;

/// Who takes efficient-first's first step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EngineKind {
    /// The software rule (the pool's ordered index).
    #[default]
    Software,
    /// The engine's cycle-accurate golden model.
    Golden,
    /// The Verilated RTL.
    Rtl,
}

impl EngineKind {
    /// Every choice.
    pub const ALL: [EngineKind; 3] = [EngineKind::Software, EngineKind::Golden, EngineKind::Rtl];

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Software => "software",
            EngineKind::Golden => "golden",
            EngineKind::Rtl => "rtl",
        }
    }
}

/// An unknown dispatch engine name.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("unknown dispatch engine '{0}': expected software, golden or rtl")]
pub struct UnknownEngine(pub String);

impl std::str::FromStr for EngineKind {
    type Err = UnknownEngine;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        crate::policy::by_name(&EngineKind::ALL, EngineKind::name, s)
            .ok_or_else(|| UnknownEngine(s.to_string()))
    }
}

/// An active FPGA compute unit as the dispatch engine is told it (one element per CU; a board of
/// one CU is one element): the unit and when its queue drains.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Board {
    /// The compute unit.
    pub id: Unit,
    /// When its queue drains (the pool's booking).
    pub busy_until: Time,
}

/// A hardware dispatch engine's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HwDecision {
    /// This board takes the request; `start` is when it starts, in the engine's cycles.
    Grant {
        /// The compute unit.
        id: Unit,
        /// Its start in engine cycles (comparable with [`HardwareDispatch::start_cycles`]).
        start: u64,
    },
    /// No active FPGA can meet the deadline.
    Reject,
    /// The engine cannot describe this decision (more boards than elements, a service longer than
    /// its estimate field): the software rule takes it, and it is counted.
    Beyond,
}

/// A dispatch engine in hardware (or its model) deciding efficient-first's first step.
pub trait HardwareDispatch: Send {
    /// The decision on `job` at `now` among the active FPGAs `boards`.
    fn decide(&mut self, now: Time, boards: &[Board], job: &Job) -> HwDecision;
    /// The start of board `id` in the last decision's engine cycles, if it was described.
    fn start_cycles(&self, id: Unit) -> Option<u64>;
    /// Its counters, shared with reports and metrics.
    fn stats(&self) -> &DispatchStats;
}

/// How a hardware decision compared with the software rule's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The same board, or both rejected.
    Agree,
    /// Different boards starting in the same engine cycle.
    Tie,
    /// Anything else.
    Disagree,
}

/// A hardware dispatch engine's counters (atomics: a server's metrics read them while it runs).
#[derive(Debug, Default)]
pub struct DispatchStats {
    /// Decisions the engine made.
    pub decisions: AtomicU64,
    /// Of which grants.
    pub grants: AtomicU64,
    /// Decisions it could not describe, taken by the software rule.
    pub beyond: AtomicU64,
    /// Decisions equal to the software rule's.
    pub agree: AtomicU64,
    /// Decisions naming another board than the software rule's, starting in the same cycle.
    pub ties: AtomicU64,
    /// Decisions that differ otherwise.
    pub disagree: AtomicU64,
    /// Engine cycles spent, from the first element written to the decision shown.
    pub cycles: AtomicU64,
    /// Element writes (the host's bookings refreshed before a decision).
    pub writes: AtomicU64,
    /// Wall time spent simulating the engine, nanoseconds.
    pub wall_ns: AtomicU64,
}

/// A snapshot of [`DispatchStats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct DispatchCounts {
    /// Decisions the engine made.
    pub decisions: u64,
    /// Of which grants.
    pub grants: u64,
    /// Decisions beyond the engine, taken by the software rule.
    pub beyond: u64,
    /// Equal to the software rule's.
    pub agree: u64,
    /// Another board starting in the same cycle.
    pub ties: u64,
    /// Different otherwise.
    pub disagree: u64,
    /// Engine cycles, element writes included.
    pub cycles: u64,
    /// Element writes.
    pub writes: u64,
    /// Wall time simulating the engine, nanoseconds.
    pub wall_ns: u64,
}

impl DispatchStats {
    /// The counters now.
    pub fn snapshot(&self) -> DispatchCounts {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        DispatchCounts {
            decisions: g(&self.decisions),
            grants: g(&self.grants),
            beyond: g(&self.beyond),
            agree: g(&self.agree),
            ties: g(&self.ties),
            disagree: g(&self.disagree),
            cycles: g(&self.cycles),
            writes: g(&self.writes),
            wall_ns: g(&self.wall_ns),
        }
    }

    /// Counts a verdict.
    pub fn record(&self, verdict: Verdict) {
        let counter = match verdict {
            Verdict::Agree => &self.agree,
            Verdict::Tie => &self.ties,
            Verdict::Disagree => &self.disagree,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

impl DispatchCounts {
    /// Engine cycles per decision.
    pub fn cycles_per_decision(&self) -> f64 {
        self.cycles as f64 / self.decisions.max(1) as f64
    }

    /// Wall time simulating the engine per decision, microseconds.
    pub fn wall_us_per_decision(&self) -> f64 {
        self.wall_ns as f64 / 1e3 / self.decisions.max(1) as f64
    }
}

/// The verdict on a hardware decision against the software rule's choice among active FPGAs
/// (`software`: the board its first step took, or `None`); none for a decision beyond the engine.
pub fn verdict(hw: &dyn HardwareDispatch, decision: HwDecision, software: Option<Unit>) -> Option<Verdict> {
    Some(match (decision, software) {
        (HwDecision::Beyond, _) => return None,
        (HwDecision::Grant { id, .. }, Some(sw)) if id == sw => Verdict::Agree,
        (HwDecision::Grant { start, .. }, Some(sw)) if hw.start_cycles(sw) == Some(start) => Verdict::Tie,
        (HwDecision::Reject, None) => Verdict::Agree,
        _ => Verdict::Disagree,
    })
}
