//! One Spork pool per served kernel, as the paper allocates per application: each its own engine,
//! policy objects and workers, driven by the runtime's dispatcher loop on a thread of its own, fed
//! clients' requests instead of a trace.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};

use crate::engine::{Engine, Oracle};
use crate::model::{Request, Time};
use crate::runtime::incoming::{Incoming, Inputs, Refused, Reply, Served};
use crate::runtime::loadgen::Arrive;
use crate::runtime::status::Status;
use crate::runtime::work::Work;
use crate::runtime::{Clock, RunConfig, RunReport, driver};

/// A running pool.
pub struct Pool {
    tx: UnboundedSender<Arrive>,
    stop: Arc<AtomicBool>,
    /// What its dispatcher publishes.
    pub status: Arc<Status>,
    thread: Option<JoinHandle<RunReport>>,
}

impl Pool {
    /// Starts the pool `cfg` describes (its plan bounded as every live pool's) on `clock`.
    pub fn start(mut cfg: RunConfig, clock: Clock) -> std::io::Result<Pool> {
        crate::runtime::bound(&mut cfg);
        let status = Arc::new(Status::default());
        cfg.status = Some(status.clone());
        cfg.horizon = Time::MAX;
        let stop = cfg.stop.clone();
        let (tx, rx) = unbounded_channel();
        let name = format!("spork-pool-{}", cfg.image.kernel.name());
        let rt = tokio::runtime::Builder::new_current_thread().enable_time().enable_io().build()?;
        let thread = std::thread::Builder::new().name(name).spawn(move || {
            let mut engine = Engine::new(cfg.platform, &cfg.plan, &Oracle::default());
            if let Some((boards, index)) = &cfg.share {
                engine.share_boards(boards.handle(*index));
            }
            let (outcome, st, meters, end) = rt.block_on(driver::drive(&cfg, engine, clock, rx));
            let mut report = RunReport::new(&cfg, &outcome, st, end);
            report.meters = meters;
            report
        })?;
        Ok(Pool { tx, stop, status, thread: Some(thread) })
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
        let request = Request::new(0, 0, 0);
        let incoming = Incoming { request, deadline, inputs: Inputs::Given(work), reply: Some(reply) };
        if self.tx.send(Arrive::Request(incoming)).is_err() {
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

    /// Waits for the dispatcher to end (after [`Pool::drain`]); its report, if it ended normally.
    pub fn join(mut self) -> Option<RunReport> {
        self.drain();
        self.thread.take().and_then(|t| t.join().ok())
    }
}
