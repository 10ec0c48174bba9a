//! A live trace, replayed in wall time: a `spork trace gen` file, or a generated b-model (`spork run`
//! replays it on the runtime's load generator, `spork load` sends it to a server).

use std::path::PathBuf;

use anyhow::{Context, bail};
use spork::model::time::to_secs;
use spork::model::{Request, Time};
use spork::trace::{SizeSpec, file};

/// The trace options.
#[derive(clap::Args, Debug, Clone)]
pub struct LiveTrace {
    /// Replay this trace file (from `spork trace gen`) in real time instead of generating one.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["duration", "rate", "burstiness", "size", "seed", "optional_factor"])]
    pub trace: Option<PathBuf>,
    /// Generated trace: length.
    #[arg(long, default_value = "30s", value_parser = super::parse_duration)]
    pub duration: u64,
    /// Generated trace: mean requests per second.
    #[arg(long, default_value_t = 200.0)]
    pub rate: f64,
    /// Generated trace: b-model bias (0.5 uniform, 0.75 very bursty); the rate changes every second.
    #[arg(long, default_value_t = 0.65)]
    pub burstiness: f64,
    /// Generated trace: CPU time of one request (its input is sized to take this on this machine).
    #[arg(long, default_value = "1ms")]
    pub size: SizeSpec,
    /// Generated trace: each request also carries an optional part this many times its size (more
    /// input for the same kernel), which brownout may skip.
    #[arg(long, default_value_t = 0.0)]
    pub optional_factor: f64,
    /// Seed of the trace and the request data.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// The most requests one live run replays (each is real work on this machine's threads).
const MAX_LIVE_REQUESTS: f64 = 2e6;

impl LiveTrace {
    /// The trace as requests, and its length: a file replays as written; a generated trace runs a
    /// b-model whose rate changes every second (a minute-bucket trace compressed 60x in time).
    pub fn requests(&self) -> anyhow::Result<(Vec<Request>, Time)> {
        let args = self;
        if let Some(path) = &args.trace {
            let t = file::read(path)?;
            let secs = to_secs(t.duration);
            if secs > 3600.0 {
                bail!(
                    "{} lasts {secs:.0} s: a live run replays in real time; cut it to at most 1 h",
                    path.display()
                );
            }
            let expected = t.expected_requests();
            if expected.is_nan() || expected > MAX_LIVE_REQUESTS {
                bail!(
                    "{} holds about {:.3e} requests, beyond the {MAX_LIVE_REQUESTS:e} a live run replays",
                    path.display(),
                    t.expected_requests()
                );
            }
            let reqs: Vec<Request> = t.requests().collect();
            if reqs.is_empty() {
                bail!("{} yields no requests: nothing to run", path.display());
            }
            return Ok((reqs, t.duration));
        }
        if !(args.rate.is_finite() && args.rate > 0.0) {
            bail!("--rate {} must be a positive number of requests per second", args.rate);
        }
        if args.rate * to_secs(args.duration) > MAX_LIVE_REQUESTS {
            bail!(
                "--rate {} for {} s is {:.3e} requests, beyond the {MAX_LIVE_REQUESTS:e} a live run replays\n  \
             fix: a lower --rate or a shorter --duration",
                spork::model::platform::show(args.rate),
                to_secs(args.duration),
                args.rate * to_secs(args.duration)
            );
        }
        let SizeSpec::Fixed(size) = args.size else {
            bail!(
                "--size must be a duration for the live runtime (e.g. 1ms): requests are sized to take it here"
            );
        };
        let secs = to_secs(args.duration);
        if !(1.0..=3600.0).contains(&secs) {
            bail!("--duration must be between 1 s and 1 h for a live run");
        }
        let reqs = spork::run::trace::bursty(
            args.duration,
            args.rate,
            args.burstiness,
            size,
            args.optional_factor,
            args.seed,
        )
        .context("cannot generate the trace")?;
        Ok((reqs, args.duration))
    }
}
