//! The live runtime: the engine driven in wall time on real workers.
//!
//! A load-generator thread ([`loadgen`]) replays the trace, building each request's real input
//! data; the dispatcher loop ([`driver`]: one tokio task on the calling thread) feeds arrivals,
//! interval ticks and worker timers to the same [`Engine`] the evaluator drives, built by the same
//! constructor, and the engine's decisions start and stop real workers through the [`fleet`] sink:
//! CPU workers run the software reference, simulated-board slots run the Verilated RTL (every FPGA
//! result checked against the reference), real boards run over XRT. FPGA latency is taken on the
//! board's own timeline (queueing + cycles / clock), because the Verilated model runs slower than the
//! board would; that simulation lag is measured and reported beside it.

pub mod backend;
pub mod calibrate;
pub mod clock;
mod config;
pub mod driver;
pub mod faults;
mod fleet;
pub mod incoming;
mod inflight;
pub mod limits;
pub mod loadgen;
mod meters;
pub mod prediction;
mod progress;
pub mod report;
pub mod stats;
pub mod status;
pub mod stream;
pub mod trace;
pub mod work;
pub mod worker;

pub use backend::Board;
pub use calibrate::Calibration;
pub use clock::Clock;
pub use config::RunConfig;
pub use faults::{Fault, FaultPlan};
pub use prediction::Prediction;
pub use report::RunReport;

use crate::engine::{Engine, Oracle, Outcome, replay, search_headroom};
use crate::policy::Admission;

/// Why a live run could not run.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Beyond the run's limits (checked before anything starts).
    #[error(transparent)]
    Limit(#[from] limits::LimitError),
    /// The OS refused a thread or the async runtime.
    #[error("cannot start the runtime: {0}")]
    Io(#[from] std::io::Error),
}

/// Runs `cfg` live and reports; blocks until every request is answered or rejected.
pub fn run(cfg: RunConfig) -> Result<RunReport, RunError> {
    run_on(cfg, Clock::start())
}

/// [`run`] on `clock` (tests move it forward to let a grace period pass at once). The trace starts at
/// the clock's 0: start it just before the call (preparing the prediction takes a moment, during
/// which the first arrivals fall due).
pub fn run_on(mut cfg: RunConfig, clock: Clock) -> Result<RunReport, RunError> {
    cfg.limits.check(&cfg)?;
    // Worker threads are bounded by configuration: the limit is a cap the engine applies, so the
    // prediction beside the run holds the same one.
    bound(&mut cfg);
    let (oracle, predicted) = prepare(&cfg);
    Ok(run_prepared(cfg, oracle, predicted, clock)?)
}

/// The bounds every live pool runs under: worker threads capped by configuration (a cap the engine
/// applies, so a prediction holds the same one), and queues that hold only what can meet its deadline
/// (a board that falls behind its model must not collect a backlog).
pub fn bound(cfg: &mut RunConfig) {
    cfg.plan.caps = cfg.limits.caps(cfg.plan.caps);
    cfg.plan.admission = Admission::RejectLate;
}

fn run_prepared(
    cfg: RunConfig,
    oracle: Oracle,
    predicted: Option<Outcome>,
    clock: Clock,
) -> std::io::Result<RunReport> {
    let engine = Engine::new(cfg.platform, &cfg.plan, &oracle);
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().enable_io().build()?;
    let arrivals = loadgen::start(&cfg, clock.clone())?;
    let (outcome, st, meters, end) = rt.block_on(driver::drive(&cfg, engine, clock, arrivals));
    let mut report = RunReport::new(&cfg, &outcome, st, end);
    report.meters = meters;
    report.evaluator = predicted.map(|o| Prediction::from_outcome(&o, &cfg.platform));
    Ok(report)
}

/// What the scheduler is told in advance (the trace's demand for oracle schedulers, the searched
/// headroom for FPGA-static and FPGA-dynamic) and, unless `cfg.compare` is off, the same run in
/// virtual time: the engine's prediction, from the same constructor, seed and trace.
fn prepare(cfg: &RunConfig) -> (Oracle, Option<Outcome>) {
    let (platform, plan, horizon) = (&cfg.platform, &cfg.plan, cfg.horizon);
    let requests = || cfg.requests.iter().copied();
    let oracle = Oracle::demand_of(platform, plan, horizon, requests());
    if plan.scheduler.searches_headroom() {
        let found = search_headroom(platform, plan, &oracle, requests, horizon);
        return (oracle.with_headroom(found.headroom), Some(found.outcome).filter(|_| cfg.compare));
    }
    let predicted =
        cfg.compare.then(|| replay(Engine::new(*platform, plan, &oracle), requests(), horizon, &mut ()));
    (oracle, predicted)
}
