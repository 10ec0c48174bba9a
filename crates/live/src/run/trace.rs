//! Traces for live runs: seconds-scale bursts.

use spork_core::model::time::to_secs;
use spork_core::model::{Request, Time};
use spork_core::trace::synthetic::SyntheticError;
use spork_core::trace::{SizeSpec, Synthetic};

/// A b-model trace of `duration` whose rate changes every second (the minute-bucket generator run
/// over as many minutes, compressed 60x in time): `rate` requests/s on average, each of CPU time
/// `size`, with an optional part `optional_factor` times as large.
pub fn bursty(
    duration: Time,
    rate: f64,
    burstiness: f64,
    size: Time,
    optional_factor: f64,
    seed: u64,
) -> Result<Vec<Request>, SyntheticError> {
    let spec = Synthetic {
        burstiness,
        duration: duration.saturating_mul(60),
        size: SizeSpec::Fixed(size),
        workers: rate / 60.0 * to_secs(size),
        seed,
        optional_factor,
        size_cv: 0.0,
    };
    let trace = spec.generate()?;
    Ok(trace.requests().map(|r| Request { arrival: r.arrival / 60, ..r }).collect())
}
