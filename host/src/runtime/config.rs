//! What a live run is given.

use crate::policy::estimate::Statistic;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use super::backend::Board;
use super::calibrate::Calibration;
use super::faults::FaultPlan;
use super::limits::Limits;
use super::status::Status;
use super::work::KernelImage;
use crate::engine::Plan;
use crate::engine::boards::SharedBoards;
use crate::model::{Platform, Request, Time};

/// One live run. [`RunConfig::new`] takes what has no sensible default; the rest are public fields
/// with defaults (`RunConfig { grace: ..., ..RunConfig::new(...) }`).
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// Worker specs: modelled power and cost, configured spin-up delays, deadline factor, and the
    /// measured FPGA speedup ([`Calibration::apply`]).
    pub platform: Platform,
    /// Scheduler, dispatcher, caps, brownout; its seed also seeds the request data.
    pub plan: Plan,
    /// The kernel and its on-chip state.
    pub image: Arc<KernelImage>,
    /// The measured throughputs: the CPU reference's (sizes to items) and the board's clock.
    pub calibration: Calibration,
    /// The trace: arrivals and sizes in CPU time.
    pub requests: Vec<Request>,
    /// Trace length.
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
    /// Print a progress line on a terminal (default off).
    pub progress: bool,
    /// Where to look for power sensors (default `/sys`).
    pub sysfs: PathBuf,
    /// Replay the same run in virtual time and report it beside (default on).
    pub compare: bool,
    /// Threads and request sizes one run may hold (default [`Limits::default`]).
    pub limits: Limits,
    /// Where the dispatcher publishes the pool's state while it runs (default none; the server's
    /// metrics read it).
    pub status: Option<Arc<Status>>,
    /// Boards shared with other pools, and this pool's index among them (default none: the pool's
    /// FPGA cap is the plan's alone).
    pub share: Option<(SharedBoards, usize)>,
    /// What a client request (whose size is not known) is booked at: a statistic of the CPU time per
    /// input item measured so far (`policy::estimate`; the mean, or a percentile such as the p99 that
    /// keeps requests from overrunning their bookings).
    pub size_estimate: Statistic,
}

impl RunConfig {
    /// The same, with client requests sized at `statistic` of the sizes measured so far.
    pub fn sized_at(self, statistic: Statistic) -> RunConfig {
        RunConfig { size_estimate: statistic, ..self }
    }

    /// `plan` on `platform` over `requests` (a trace of length `horizon`) running `image`, with the
    /// defaults above.
    pub fn new(
        platform: Platform,
        plan: Plan,
        image: Arc<KernelImage>,
        calibration: Calibration,
        requests: Vec<Request>,
        horizon: Time,
    ) -> RunConfig {
        RunConfig {
            platform,
            plan,
            image,
            calibration,
            requests,
            horizon,
            board: Board::Sim,
            faults: FaultPlan::default(),
            kernel_timeout: Duration::from_secs(10),
            stop: Arc::new(AtomicBool::new(false)),
            grace: Duration::from_secs(2),
            progress: false,
            sysfs: PathBuf::from("/sys"),
            compare: true,
            limits: Limits::default(),
            status: None,
            share: None,
            size_estimate: Statistic::Mean,
        }
    }
}
