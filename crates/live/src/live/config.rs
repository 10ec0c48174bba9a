//! What a live pool is given.

use crate::priority::Priority;
use spork_core::policy::estimate::Statistic;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use super::faults::FaultPlan;
use super::limits::Limits;
use crate::backend::{Board, Calibration};
use crate::datapath::work::KernelImage;
use spork_core::engine::Plan;
use spork_core::engine::boards::SharedBoards;
use spork_core::model::{Platform, Time};

/// One live pool. [`PoolConfig::new`] takes what has no sensible default; the rest are public
/// fields with defaults (`PoolConfig { grace: ..., ..PoolConfig::new(...) }`).
#[derive(Clone, Debug)]
pub struct PoolConfig {
    /// Worker specs: modelled power and cost, configured spin-up delays, deadline factor, and the
    /// measured FPGA speedup ([`Calibration::apply`]).
    pub platform: Platform,
    /// Scheduler, dispatcher, caps, brownout; its seed also seeds the request data.
    pub plan: Plan,
    /// The kernel and its on-chip state.
    pub image: Arc<KernelImage>,
    /// The measured throughputs: the CPU reference's (sizes to items) and the board's clock.
    pub calibration: Calibration,
    /// When requests stop coming (the engine's horizon; default: never, a server's pool).
    pub horizon: Time,
    /// The FPGA workers' backend (default: the simulated board).
    pub board: Board,
    /// Injected faults (default: none).
    pub faults: FaultPlan,
    /// A kernel that runs longer than this (wall time) on a board is abandoned and re-run on a CPU
    /// (default 10 s).
    pub kernel_timeout: Duration,
    /// Set to stop early (Ctrl-C does too): in-flight requests get `grace`, then are rejected.
    pub stop: Arc<AtomicBool>,
    /// Grace period after a stop (default 2 s).
    pub grace: Duration,
    /// Threads and request sizes one pool may hold (default [`Limits::default`]).
    pub limits: Limits,
    /// Boards shared with other pools, and this pool's index among them (default none: the pool's
    /// FPGA cap is the plan's alone).
    pub share: Option<(SharedBoards, usize)>,
    /// What a client request (whose size is not known) is booked at: a statistic of the CPU time per
    /// input item measured so far (`policy::estimate`; the mean, or a percentile such as the p99 that
    /// keeps requests from overrunning their bookings).
    pub size_estimate: Statistic,
    /// How the CPU workers' threads are scheduled (default normal). `Realtime` runs each kernel to
    /// the end without a time slice (the workers are at most the cores, so none shares one).
    pub cpu_priority: Priority,
}

impl PoolConfig {
    /// `plan` on `platform` running `image` at `calibration`, with the defaults above.
    pub fn new(platform: Platform, plan: Plan, image: Arc<KernelImage>, calibration: Calibration) -> Self {
        PoolConfig {
            platform,
            plan,
            image,
            calibration,
            horizon: Time::MAX,
            board: Board::Sim,
            faults: FaultPlan::default(),
            kernel_timeout: Duration::from_secs(10),
            stop: Arc::new(AtomicBool::new(false)),
            grace: Duration::from_secs(2),
            limits: Limits::default(),
            share: None,
            size_estimate: Statistic::Mean,
            cpu_priority: Priority::Normal,
        }
    }

    /// The same, with client requests sized at `statistic` of the sizes measured so far.
    pub fn sized_at(self, statistic: Statistic) -> PoolConfig {
        PoolConfig { size_estimate: statistic, ..self }
    }
}
