//! The load generator: a thread that replays the trace in wall time into a pool's feeder, building
//! each request's real input data (an image, documents of term hashes, int16 vectors) sized from
//! its CPU time.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::RunConfig;
use crate::datapath::work::WorkSpec;
use crate::live::{Clock, Feeder, TraceRequest};
use spork_core::model::Time;
use spork_core::model::time::to_secs;

/// Starts the load generator for `cfg`'s trace on `clock`, feeding `pool`; it ends the pool's
/// requests when the trace is over (or the run was stopped).
pub(super) fn start(cfg: &RunConfig, pool: Feeder, clock: Clock) -> std::io::Result<()> {
    let requests = cfg.requests.clone();
    let p = &cfg.pool;
    let image = p.image.clone();
    let (rate, seed, stop) = (p.calibration.items_per_sec, p.plan.seed, p.stop.clone());
    std::thread::Builder::new().name("spork-loadgen".into()).spawn(move || {
        let items = |t: Time| (to_secs(t) * rate).round() as u64;
        for (i, request) in requests.into_iter().enumerate() {
            let spec = WorkSpec::new(items(request.size), items(request.optional), seed, i as u64);
            // Built ahead of its arrival: at most one request's inputs are held here.
            let work = Some(Arc::new(image.build(&spec)));
            let due = clock.instant(request.arrival);
            let now = std::time::Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
            if stop.load(Ordering::Relaxed) || !pool.feed(TraceRequest { request, spec, work }) {
                break;
            }
        }
        pool.end();
    })?;
    Ok(())
}
