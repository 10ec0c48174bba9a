//! The load generator: a thread that replays the trace in wall time, building each request's real
//! input data (an image, documents of term hashes, int16 vectors) sized from its CPU time.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use rand::SeedableRng;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

use super::clock::Clock;
use super::config::RunConfig;
use super::work::Work;
use crate::model::time::to_secs;
use crate::model::{Request, Time};

/// What the load generator hands the dispatcher.
pub(super) enum Arrive {
    /// A request, due now, with its input.
    Request(Request, Arc<Work>),
    /// The trace is over (or the run stopped).
    End,
}

/// Starts the load generator for `cfg`'s trace on `clock`.
pub(super) fn start(cfg: &RunConfig, clock: Clock) -> std::io::Result<UnboundedReceiver<Arrive>> {
    let (tx, rx) = unbounded_channel();
    let requests = cfg.requests.clone();
    let image = cfg.image.clone();
    let (rate, seed, stop) = (cfg.calibration.items_per_sec, cfg.plan.seed, cfg.stop.clone());
    std::thread::Builder::new().name("spork-loadgen".into()).spawn(move || {
        let mut rng = rand::rngs::Xoshiro256PlusPlus::seed_from_u64(seed);
        let items = |t: Time| (to_secs(t) * rate).round() as u64;
        for r in requests {
            let payload = Arc::new(image.work(items(r.size), items(r.optional), &mut rng));
            let due = clock.instant(r.arrival);
            let now = std::time::Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
            if stop.load(Ordering::Relaxed) || tx.send(Arrive::Request(r, payload)).is_err() {
                break;
            }
        }
        let _ = tx.send(Arrive::End);
    })?;
    Ok(rx)
}
