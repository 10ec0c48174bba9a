//! The live pool: the engine driven in wall time on real workers, behind one handle.
//!
//! [`LivePool::start`] builds the engine from a [`PoolConfig`] with the one constructor the
//! evaluator uses, and runs its dispatcher loop ([`driver`]) on a thread of its own, or as a task on
//! a server's protocol runtime ([`LivePool::start_in`]); the engine's
//! decisions start and stop real workers through the [`fleet`] sink, each a [`worker`] on a thread
//! of the generic worker runner ([`runner`], which a worker host's slots run on too). `spork run` feeds a pool from its load generator ([`LivePool::feeder`]),
//! `spork serve` from clients ([`LivePool::submit`]); both stop it with [`LivePool::drain`] and get
//! what it measured from [`LivePool::join`]. FPGA latency is taken on the board's own timeline
//! (queueing + cycles / clock), because the Verilated model runs slower than the board would.

mod alarm;
pub mod clock;
mod config;
mod driver;
pub mod faults;
mod fleet;
pub mod incoming;
mod inflight;
pub mod limits;
pub mod report;
pub mod runner;
pub mod stats;
pub mod status;
pub mod worker;

pub use clock::Clock;
pub use config::PoolConfig;
pub use faults::{Fault, FaultPlan};
pub use incoming::{ClientRequest, Refused, Reply, Served, TraceRequest};
pub use report::PoolReport;
pub use stats::RunStats;
pub use status::Status;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};

use crate::backend::dispatch_engine::{DispatchEngine, EngineKind};
use crate::datapath::work::Work;
use incoming::Arrive;
use spork_core::engine::hardware::DispatchCounts;
use spork_core::engine::{Engine, Oracle, Outcome};
use spork_core::model::Time;
use spork_core::policy::Admission;

/// What a pool's run leaves: the engine's outcome (fleet, energy, the gate's decisions), what the
/// pool measured, and when it ended on its clock.
#[derive(Debug)]
pub struct PoolRun {
    /// The engine's outcome.
    pub outcome: Outcome,
    /// What the pool measured.
    pub stats: RunStats,
    /// When it ended.
    pub ended: Time,
    /// The hardware dispatch engine that took efficient-first's first step, and its counters.
    pub dispatch: Option<(EngineKind, DispatchCounts)>,
}

/// A running pool.
pub struct LivePool {
    /// Its configuration, as bounded.
    cfg: PoolConfig,
    tx: UnboundedSender<Arrive>,
    stop: Arc<AtomicBool>,
    /// What its dispatcher publishes (the server's metrics, a run's progress line).
    pub status: Arc<Status>,
    dispatcher: Option<Dispatcher>,
}

/// Where a pool's dispatcher runs.
enum Dispatcher {
    /// A thread of its own (`spork run`; a hardware dispatch engine).
    Thread(JoinHandle<PoolRun>),
    /// A task on the server's protocol runtime; its run comes back on `result`.
    Task { task: tokio::task::JoinHandle<()>, result: Mutex<Receiver<PoolRun>> },
}

/// Feeds a pool a trace's requests from another thread.
#[derive(Clone)]
pub struct Feeder(UnboundedSender<Arrive>);

impl Feeder {
    /// Hands the pool a trace's request, due now; false if the pool has ended.
    pub fn feed(&self, request: TraceRequest) -> bool {
        self.0.send(Arrive::Trace(request)).is_ok()
    }

    /// No more requests: the pool settles what it holds, drains its workers and ends.
    pub fn end(&self) {
        let _ = self.0.send(Arrive::End);
    }
}

impl LivePool {
    /// What its requests are sized by: the CPU code's and the board's measured throughput.
    pub fn calibration(&self) -> &crate::backend::calibrate::Calibration {
        &self.cfg.calibration
    }

    /// Starts the pool `cfg` describes (its plan bounded as every live pool's, see [`bound`]) on
    /// `clock`, told `oracle` in advance (the trace's demand and searched headroom for oracle
    /// schedulers; nothing for a server's pool), with its dispatcher on a thread of its own.
    pub fn start(cfg: PoolConfig, oracle: Oracle, clock: Clock) -> std::io::Result<LivePool> {
        LivePool::start_in(cfg, oracle, clock, None)
    }

    /// The same, with the dispatcher a task on `home` (a server's protocol runtime) when it is
    /// given and the dispatch rule is software: a client's request then reaches the dispatcher, and
    /// its answer the client's connection, without waking another thread (two wake-ups fewer per
    /// request). A hardware dispatch engine, whose simulation takes its time, keeps its own thread.
    pub fn start_in(
        mut cfg: PoolConfig,
        oracle: Oracle,
        clock: Clock,
        home: Option<&tokio::runtime::Handle>,
    ) -> std::io::Result<LivePool> {
        bound(&mut cfg);
        let units = cfg.platform.fpga.compute_units;
        cfg.board
            .check_compute_units(units)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        let status = Arc::new(Status::default());
        let stop = cfg.stop.clone();
        let (tx, rx) = unbounded_channel();
        let (published, kept) = (status.clone(), cfg.clone());
        let hardware = DispatchEngine::start(
            cfg.plan.dispatch_engine,
            cfg.calibration.clock_hz,
            status.dispatch.clone(),
        )
        .map_err(std::io::Error::other)?;
        let home = home.filter(|_| hardware.is_none());
        let dispatcher = move || async move {
            let engine = engine_for(&cfg, &oracle, hardware);
            driver::drive(&cfg, engine, clock, rx, &published).await
        };
        let dispatcher = match home {
            Some(rt) => {
                let (done, result) = std::sync::mpsc::sync_channel(1);
                // Unconstrained: a burst of events must not make it yield behind the connections'
                // tasks (tokio's cooperative budget), which would delay every answer in the burst.
                let task = rt.spawn(tokio::task::unconstrained(async move {
                    let _ = done.send(dispatcher().await);
                }));
                Dispatcher::Task { task, result: Mutex::new(result) }
            }
            None => {
                let name = format!("spork-pool-{}", kept.image.kernel.name());
                let rt = tokio::runtime::Builder::new_current_thread().enable_time().enable_io().build()?;
                let thread =
                    std::thread::Builder::new().name(name).spawn(move || rt.block_on(dispatcher()))?;
                Dispatcher::Thread(thread)
            }
        };
        Ok(LivePool { cfg: kept, tx, stop, status, dispatcher: Some(dispatcher) })
    }

    /// A handle that feeds the pool a trace's requests.
    pub fn feeder(&self) -> Feeder {
        Feeder(self.tx.clone())
    }

    /// Hands a client's request to the pool and waits for its answer. `deadline` is after arrival
    /// (`None`: the profile's factor times the estimated size); `hold` is released when the pool is
    /// done with the request, even if this wait is dropped first (the client went away).
    pub async fn submit(
        &self,
        work: Arc<Work>,
        deadline: Option<Time>,
        hold: Option<Box<dyn Send + Sync>>,
    ) -> Result<Served, Refused> {
        let (reply, answer) = Reply::channel(hold);
        if self.tx.send(Arrive::Client(ClientRequest { work, deadline, reply })).is_err() {
            return Err(Refused::Draining);
        }
        // The dispatcher answers every request it takes (served, refused, or at the stop); a dropped
        // reply means it ended first.
        answer.await.unwrap_or(Err(Refused::Stopped))
    }

    /// Starts the drain: no new requests; those in flight get the grace period, then are refused.
    pub fn drain(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Whether the pool's dispatcher has ended.
    pub fn is_finished(&self) -> bool {
        match &self.dispatcher {
            None => true,
            Some(Dispatcher::Thread(t)) => t.is_finished(),
            Some(Dispatcher::Task { task, .. }) => task.is_finished(),
        }
    }

    /// Waits for the dispatcher to end; its report, if it ended normally. Call after
    /// [`LivePool::drain`] or once its feeder has ended the requests; not on the runtime the
    /// dispatcher runs on (it blocks), and before that runtime is dropped (that ends it unreported).
    pub fn join(mut self) -> Option<PoolReport> {
        let run = match self.dispatcher.take()? {
            Dispatcher::Thread(t) => t.join().ok()?,
            Dispatcher::Task { result, .. } => result.into_inner().ok()?.recv().ok()?,
        };
        Some(PoolReport::new(&self.cfg, run))
    }
}

/// The engine of `cfg`'s pool, built with the one constructor the evaluator uses.
fn engine_for(cfg: &PoolConfig, oracle: &Oracle, hardware: Option<DispatchEngine>) -> Engine {
    let mut engine = Engine::new(cfg.platform, &cfg.plan, oracle);
    if let Some(hw) = hardware {
        engine.dispatch_in_hardware(Box::new(hw));
    }
    engine.size_clients(cfg.size_estimate, cfg.calibration.items_per_sec);
    if let Some((boards, index)) = &cfg.share {
        engine.share_boards(boards.handle(*index));
    }
    engine
}

/// The bounds every live pool runs under: worker threads capped by configuration (a cap the engine
/// applies, so a prediction holds the same one), and queues that hold only what can meet its deadline
/// (a board that falls behind its model must not collect a backlog).
pub fn bound(cfg: &mut PoolConfig) {
    cfg.plan.caps = cfg.limits.caps(cfg.plan.caps, cfg.platform.fpga.compute_units);
    cfg.plan.admission = Admission::RejectLate;
}
