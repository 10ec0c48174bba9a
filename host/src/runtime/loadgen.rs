//! The load generator: a thread that replays the trace in wall time, building each request's real
//! input data (an image, documents of term hashes, int16 vectors) sized from its CPU time.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

use super::clock::Clock;
use super::config::RunConfig;
use super::incoming::{Incoming, Inputs};
use super::work::WorkSpec;
use crate::model::Time;
use crate::model::time::to_secs;

/// What the dispatcher is handed.
#[derive(Debug)]
pub enum Arrive {
    /// A request, due now.
    Request(Incoming),
    /// No more requests: the trace is over (or the run stopped, or the server drains).
    End,
}

/// Starts the load generator for `cfg`'s trace on `clock`.
pub(super) fn start(cfg: &RunConfig, clock: Clock) -> std::io::Result<UnboundedReceiver<Arrive>> {
    let (tx, rx) = unbounded_channel();
    let requests = cfg.requests.clone();
    let image = cfg.image.clone();
    let (rate, seed, stop) = (cfg.calibration.items_per_sec, cfg.plan.seed, cfg.stop.clone());
    std::thread::Builder::new().name("spork-loadgen".into()).spawn(move || {
        let items = |t: Time| (to_secs(t) * rate).round() as u64;
        for (i, r) in requests.into_iter().enumerate() {
            let spec = WorkSpec::new(items(r.size), items(r.optional), seed, i as u64);
            // Built ahead of its arrival: at most one request's inputs are held here.
            let payload = Arc::new(image.build(&spec));
            let due = clock.instant(r.arrival);
            let now = std::time::Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
            let incoming = Incoming {
                request: r,
                deadline: None,
                inputs: Inputs::Generated(spec, Some(payload)),
                reply: None,
            };
            if stop.load(Ordering::Relaxed) || tx.send(Arrive::Request(incoming)).is_err() {
                break;
            }
        }
        let _ = tx.send(Arrive::End);
    })?;
    Ok(rx)
}
