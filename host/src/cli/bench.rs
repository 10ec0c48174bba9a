//! `spork bench`: the evaluator's speed in simulated requests per second.

use super::pool_args::parse_schedulers;
use serde::Serialize;
use spork::evaluate::{Plan, evaluate};
use spork::model::Platform;
use spork::trace::{SizeSpec, Synthetic};
use std::time::Instant;

/// Options of `spork bench`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Scheduler(s) to time, comma-separated or `all`.
    #[arg(long, default_value = "spork-e")]
    scheduler: String,
    /// Trace length (default: the paper's 2 hours).
    #[arg(long, default_value = "2h", value_parser = super::parse_duration)]
    duration: u64,
    /// Request size (10 ms gives the ~72 M-request default trace).
    #[arg(long, default_value = "10ms")]
    size: SizeSpec,
    /// b-model burstiness.
    #[arg(long, default_value_t = 0.6)]
    burstiness: f64,
    /// Timed repetitions; the best is reported.
    #[arg(long, default_value_t = 1)]
    repeat: u32,
    /// Seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Row {
    scheduler: String,
    requests: u64,
    events: u64,
    best_wall_s: f64,
    requests_per_s: f64,
    events_per_s: f64,
}

/// Runs `spork bench` (one thread per run: the figure is per core).
pub fn run(args: Args) -> anyhow::Result<()> {
    let platform = Platform::default();
    let trace = Synthetic {
        burstiness: args.burstiness,
        duration: args.duration,
        size: args.size,
        workers: 100.0,
        seed: args.seed,
        optional_factor: 0.0,
        size_cv: 0.0,
    }
    .generate()?;
    let mut rows = Vec::new();
    for s in parse_schedulers(&args.scheduler)? {
        let plan = Plan::new(s);
        let mut best = f64::INFINITY;
        let mut last = None;
        for _ in 0..args.repeat.max(1) {
            let t = Instant::now();
            let r = evaluate(&platform, &trace, &plan);
            best = best.min(t.elapsed().as_secs_f64());
            last = Some(r);
        }
        let Some(r) = last else { continue };
        let row = Row {
            scheduler: r.scheduler,
            requests: r.requests,
            events: r.events,
            best_wall_s: best,
            requests_per_s: r.requests as f64 / best,
            events_per_s: r.events as f64 / best,
        };
        if !args.json {
            out!(
                "{:<14} {:>11} requests {:>11} events in {:>7.2} s: {:>6.2} M requests/s, {:>6.2} M events/s",
                row.scheduler,
                row.requests,
                row.events,
                row.best_wall_s,
                row.requests_per_s / 1e6,
                row.events_per_s / 1e6
            );
        }
        rows.push(row);
    }
    if args.json {
        out!("{}", serde_json::to_string_pretty(&rows)?);
    }
    Ok(())
}
