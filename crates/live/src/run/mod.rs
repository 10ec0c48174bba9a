//! `spork run`: a trace replayed live on a [`LivePool`], with the evaluator's prediction beside it.
//!
//! A load-generator thread ([`loadgen`]) replays the trace through the pool's feeder, building each
//! request's real input data; the pool runs the same [`Engine`] the evaluator drives, built by the
//! same constructor, on real workers. While it runs, this machine's power sensors are sampled
//! ([`meters`]) and a progress line drawn ([`progress`]) from the pool's published status; at the
//! end the pool's report gains the trace's size, the sensors' energy and the prediction
//! ([`prediction`]: the same run in virtual time).

pub mod loadgen;
mod meters;
pub mod prediction;
mod progress;
pub mod report;
pub mod trace;

pub use crate::backend::{Board, Calibration};
pub use crate::live::{Clock, Fault, FaultPlan, PoolConfig};
pub use prediction::Prediction;
pub use report::RunReport;

use std::path::PathBuf;
use std::time::Duration;

use crate::datapath::work::KernelImage;
use crate::live::LivePool;
use crate::live::limits::LimitError;
use meters::Meters;
use progress::Progress;
use spork_core::engine::{Engine, Oracle, Outcome, Plan, replay, told};
use spork_core::model::{Platform, Request, Time};
use std::sync::Arc;

/// How often the run's own thread samples the sensors and redraws the progress line.
const POLL: Duration = Duration::from_millis(20);

/// One live run: a pool and the trace it is fed. [`RunConfig::new`] takes what has no sensible
/// default; the rest are public fields with defaults.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// The pool (its horizon is the trace's length).
    pub pool: PoolConfig,
    /// The trace: arrivals and sizes in CPU time.
    pub requests: Vec<Request>,
    /// Print a progress line on a terminal (default off).
    pub progress: bool,
    /// Where to look for power sensors (default `/sys`).
    pub sysfs: PathBuf,
    /// Replay the same run in virtual time and report it beside (default on).
    pub compare: bool,
}

impl RunConfig {
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
        let pool = PoolConfig { horizon, ..PoolConfig::new(platform, plan, image, calibration) };
        RunConfig { pool, requests, progress: false, sysfs: PathBuf::from("/sys"), compare: true }
    }
}

/// Why a live run could not run.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Beyond the run's limits (checked before anything starts).
    #[error(transparent)]
    Limit(#[from] LimitError),
    /// The OS refused a thread or the async runtime.
    #[error("cannot start the runtime: {0}")]
    Io(#[from] std::io::Error),
    /// The pool's dispatcher ended abnormally (a panic).
    #[error("the pool's dispatcher ended abnormally")]
    Pool,
}

/// Runs `cfg` live and reports; blocks until every request is answered or rejected.
pub fn run(cfg: RunConfig) -> Result<RunReport, RunError> {
    run_on(cfg, Clock::start())
}

/// [`run`] on `clock` (tests move it forward to let a grace period pass at once). The trace starts at
/// the clock's 0: start it just before the call (preparing the prediction takes a moment, during
/// which the first arrivals fall due).
pub fn run_on(mut cfg: RunConfig, clock: Clock) -> Result<RunReport, RunError> {
    cfg.pool.limits.check(&cfg.requests, cfg.pool.calibration.items_per_sec)?;
    // Worker threads are bounded by configuration: the limit is a cap the engine applies, so the
    // prediction beside the run holds the same one.
    crate::live::bound(&mut cfg.pool);
    let (oracle, predicted) = prepare(&cfg);
    let pool = LivePool::start(cfg.pool.clone(), oracle, clock.clone())?;
    loadgen::start(&cfg, pool.feeder(), clock.clone())?;
    let mut meters = Meters::start(&cfg.sysfs, clock.now());
    let progress = Progress::new(cfg.progress, cfg.requests.len() as u64);
    while !pool.is_finished() {
        meters.sample(clock.now());
        progress.update(&pool.status, clock.now());
        std::thread::sleep(POLL);
    }
    progress.finish();
    let pool = pool.join().ok_or(RunError::Pool)?;
    Ok(RunReport {
        trace_requests: cfg.requests.len() as u64,
        pool,
        meters: meters.readings(),
        evaluator: predicted.map(|o| Prediction::from_outcome(&o, &cfg.pool.platform)),
        fpga_never_pays: cfg.pool.plan.scheduler.fpga_never_pays(&cfg.pool.platform),
    })
}

/// What the scheduler is told in advance (the trace's demand for oracle schedulers, the searched
/// headroom for FPGA-static and FPGA-dynamic) and, unless `cfg.compare` is off, the same run in
/// virtual time: the engine's prediction, from the same constructor, seed and trace.
fn prepare(cfg: &RunConfig) -> (Oracle, Option<Outcome>) {
    let (platform, plan, horizon) = (&cfg.pool.platform, &cfg.pool.plan, cfg.pool.horizon);
    let requests = || cfg.requests.iter().copied();
    let demand = Oracle::demand_of(platform, plan, horizon, requests());
    let (oracle, searched) = told(platform, plan, demand, requests, horizon);
    let predicted = match searched {
        Some(found) => Some(found.outcome),
        None if cfg.compare => {
            Some(replay(Engine::new(*platform, plan, &oracle), requests(), horizon, &mut ()))
        }
        None => None,
    };
    (oracle, predicted.filter(|_| cfg.compare))
}
