//! Request dispatchers: where each request runs.
//!
//! A dispatcher reads the pool and answers a [`Placement`]; the driver applies it. All three can be
//! paired with any allocator. On boards of several compute units efficient-first packs CUs (the
//! busiest CU that meets the deadline); round robin and index packing choose a board by their own
//! order and take its CU that frees first. When no allocated worker can meet the deadline, a hybrid or CPU-only
//! fleet spins up a new CPU worker (Algorithm 3, line 6). An FPGA-only fleet spins up a new FPGA if
//! one would still meet the deadline (long requests: deadlines beyond the spin-up), and otherwise
//! queues the request on the FPGA that frees up first (a deadline miss), spinning one up only if it
//! has none.

mod efficient_first;
mod index_packing;
mod round_robin;

pub use efficient_first::EfficientFirst;
pub use index_packing::IndexPacking;
pub use round_robin::RoundRobin;

use super::objective::Objective;
use crate::model::pool::Numbering;
use crate::model::time::from_secs;
use crate::model::{Kind, Platform, Pool, Time, Unit};
use serde::Serialize;

/// The worker types a scheduler may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Fleet {
    /// CPU workers allowed.
    pub cpu: bool,
    /// FPGA workers allowed.
    pub fpga: bool,
}

impl Fleet {
    /// CPUs and FPGAs.
    pub const HYBRID: Fleet = Fleet { cpu: true, fpga: true };
    /// CPUs only.
    pub const CPU_ONLY: Fleet = Fleet { cpu: true, fpga: false };
    /// FPGAs only.
    pub const FPGA_ONLY: Fleet = Fleet { cpu: false, fpga: true };

    /// Whether `kind` is allowed.
    pub fn allows(&self, kind: Kind) -> bool {
        match kind {
            Kind::Cpu => self.cpu,
            Kind::Fpga => self.fpga,
        }
    }
}

/// A request as a dispatcher sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Job {
    /// Absolute deadline.
    pub deadline: Time,
    /// Service time on each worker type, indexed by [`Kind::index`].
    pub service: [Time; 2],
}

impl Job {
    /// The job as dispatch plans it: to finish `margin` before its deadline. A served request spends
    /// time outside the scheduler (its bytes both ways, the client's own threads), which the client's
    /// deadline counts and the server's clock does not; the margin leaves room for it.
    pub fn planned_within(self, margin: Time) -> Job {
        Job { deadline: self.deadline.saturating_sub(margin), ..self }
    }

    /// The latest time a worker of `kind` may start it and still meet the deadline.
    pub fn latest_start(&self, kind: Kind) -> Option<Time> {
        self.deadline.checked_sub(self.service[kind.index()])
    }
}

/// A dispatch decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Queue on this compute unit (a worker's unit 0 when it has one).
    Assign(Unit),
    /// Spin up a new worker of this type and queue on it.
    SpinUp(Kind),
}

/// The dispatchers, as a closed set (static dispatch on the hot path).
#[derive(Clone, Debug)]
pub enum Dispatcher {
    /// Algorithm 3.
    EfficientFirst(EfficientFirst),
    /// MArk's round robin.
    RoundRobin(RoundRobin),
    /// AutoScale's index packing.
    IndexPacking(IndexPacking),
}

/// Names of the dispatchers, as the CLI spells them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DispatcherKind {
    /// Algorithm 3: FPGAs before CPUs; busiest, then least idle, then allocating.
    EfficientFirst,
    /// Algorithm 3, and a request that can wait for a new FPGA (its spin-up and enough work behind
    /// it to pay for it) spins one up instead of a CPU (SporkD's; beyond the paper).
    EfficientFirstWait,
    /// Rotate over allocated workers, skipping those that would miss the deadline.
    RoundRobin,
    /// MArk's: rotate over the provisioned FPGAs; the rest goes to a burst tier of CPUs, packed.
    RoundRobinTiered,
    /// Lowest-numbered worker that meets the deadline, whatever its type; a new worker takes the
    /// lowest free number (AutoScale's fixed server indices).
    IndexPacking,
    /// Index packing with workers numbered in allocation order, never reused (the early workers keep
    /// the low numbers).
    IndexPackingAlloc,
    /// Index packing with every FPGA numbered before every CPU (lowest free number within a type).
    IndexPackingFpgaFirst,
}

impl DispatcherKind {
    /// Every dispatcher.
    pub const ALL: [DispatcherKind; 7] = [
        DispatcherKind::EfficientFirst,
        DispatcherKind::EfficientFirstWait,
        DispatcherKind::RoundRobin,
        DispatcherKind::RoundRobinTiered,
        DispatcherKind::IndexPacking,
        DispatcherKind::IndexPackingAlloc,
        DispatcherKind::IndexPackingFpgaFirst,
    ];

    /// A fresh dispatcher for `fleet` on `platform`; the wait rule pays spin-ups by `objective`.
    pub fn build(self, fleet: Fleet, platform: &Platform, objective: &Objective) -> Dispatcher {
        let fpga_spin_up = platform.fpga.spin_up;
        match self {
            DispatcherKind::EfficientFirst => {
                Dispatcher::EfficientFirst(EfficientFirst::new(fleet, fpga_spin_up))
            }
            DispatcherKind::EfficientFirstWait => {
                let pays = objective.spin_up_pays_after_secs(platform);
                // An FPGA that never pays is never waited for.
                let pays = pays.is_finite().then(|| from_secs(pays));
                Dispatcher::EfficientFirst(EfficientFirst::waiting(fleet, fpga_spin_up, pays))
            }
            DispatcherKind::RoundRobin => Dispatcher::RoundRobin(RoundRobin::new(fleet, fpga_spin_up)),
            DispatcherKind::RoundRobinTiered => {
                Dispatcher::RoundRobin(RoundRobin::tiered(fleet, fpga_spin_up))
            }
            DispatcherKind::IndexPacking
            | DispatcherKind::IndexPackingAlloc
            | DispatcherKind::IndexPackingFpgaFirst => {
                Dispatcher::IndexPacking(IndexPacking::new(fleet, fpga_spin_up))
            }
        }
    }

    /// How the pool numbers its workers for this dispatcher (only index packing reads the numbers).
    pub fn numbering(self) -> Numbering {
        match self {
            DispatcherKind::IndexPackingAlloc => Numbering::Allocation,
            DispatcherKind::IndexPackingFpgaFirst => Numbering::FpgasFirst,
            _ => Numbering::LowestFree,
        }
    }

    /// Kebab-case name.
    pub fn name(self) -> &'static str {
        match self {
            DispatcherKind::EfficientFirst => "efficient-first",
            DispatcherKind::EfficientFirstWait => "efficient-first-wait",
            DispatcherKind::RoundRobin => "round-robin",
            DispatcherKind::RoundRobinTiered => "round-robin-tiered",
            DispatcherKind::IndexPacking => "index-packing",
            DispatcherKind::IndexPackingAlloc => "index-packing-alloc",
            DispatcherKind::IndexPackingFpgaFirst => "index-packing-fpga-first",
        }
    }
}

impl Dispatcher {
    /// The worker types it places on.
    pub fn fleet(&self) -> Fleet {
        match self {
            Dispatcher::EfficientFirst(d) => d.fleet(),
            Dispatcher::RoundRobin(d) => d.fleet(),
            Dispatcher::IndexPacking(d) => d.fleet(),
        }
    }

    /// The board's speedup in `platform` changed: rules that weigh it (the wait rule's payback)
    /// follow, at `objective`'s rates.
    pub fn respeed(&mut self, platform: &Platform, objective: &Objective) {
        if let Dispatcher::EfficientFirst(d) = self {
            d.respeed(objective.spin_up_pays_after_secs(platform));
        }
    }

    /// Where to run `job` at `now`.
    #[inline]
    pub fn place(&mut self, pool: &Pool, job: &Job, now: Time) -> Placement {
        match self {
            Dispatcher::EfficientFirst(d) => d.place(pool, job, now),
            Dispatcher::RoundRobin(d) => d.place(pool, job, now),
            Dispatcher::IndexPacking(d) => d.place(pool, job, now),
        }
    }
}

impl Dispatcher {
    /// Efficient-first, whose first step a hardware dispatch engine can take; `None` for the others.
    pub fn efficient_first(&mut self) -> Option<&mut EfficientFirst> {
        match self {
            Dispatcher::EfficientFirst(d) => Some(d),
            _ => None,
        }
    }
}

/// An unknown dispatcher name.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error(
    "unknown dispatcher '{0}': expected efficient-first, efficient-first-wait, round-robin, round-robin-tiered, index-packing, index-packing-alloc or index-packing-fpga-first"
)]
pub struct UnknownDispatcher(pub String);

impl std::str::FromStr for DispatcherKind {
    type Err = UnknownDispatcher;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        super::by_name(&DispatcherKind::ALL, DispatcherKind::name, s)
            .ok_or_else(|| UnknownDispatcher(s.to_string()))
    }
}

/// Where requests go after the worker they were booked on failed: efficient-first over CPUs only,
/// whatever the scheduler's fleet (CPUs are the fallback: a new one is ready in milliseconds), with
/// the request's original deadline.
pub fn rescue(fpga_spin_up: Time) -> Dispatcher {
    Dispatcher::EfficientFirst(EfficientFirst::new(Fleet::CPU_ONLY, fpga_spin_up))
}

/// What every dispatcher does when no allocated worker can meet the deadline.
fn fallback(pool: &Pool, fleet: Fleet, job: &Job, now: Time, fpga_spin_up: Time) -> Placement {
    if fleet.cpu {
        return Placement::SpinUp(Kind::Cpu);
    }
    if job.latest_start(Kind::Fpga).is_some_and(|ls| now.saturating_add(fpga_spin_up) <= ls) {
        return Placement::SpinUp(Kind::Fpga);
    }
    match pool.earliest_free(Kind::Fpga) {
        Some(w) => Placement::Assign(w),
        None => Placement::SpinUp(Kind::Fpga),
    }
}

/// Whether compute unit `u` (of a live worker) can start `job` by its latest start.
fn can_meet(pool: &Pool, u: Unit, job: &Job, now: Time) -> bool {
    let kind = pool.worker(u.worker).kind;
    job.latest_start(kind).is_some_and(|ls| pool.start_at(u, now) <= ls)
}
