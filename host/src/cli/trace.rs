//! `spork trace`: generate and inspect trace files; the trace options other commands share.

use anyhow::Context;
use serde::Serialize;
use spork::model::time::to_secs;
use spork::trace::{RateTrace, SizeSpec, Synthetic, file};
use std::path::PathBuf;

/// Where a command's trace comes from: a file, or the synthetic generator.
#[derive(clap::Args, Debug, Clone)]
pub struct TraceArgs {
    /// Replay this trace file (from `spork trace gen`) instead of generating one.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["burstiness", "size", "workers", "duration", "seed", "optional_factor", "size_cv"])]
    pub trace: Option<PathBuf>,
    /// Generator options, when no file is given.
    #[command(flatten)]
    pub synthetic: GenArgs,
}

/// What a trace is, for reports.
#[derive(Serialize, Debug, Clone)]
pub struct TraceSummary {
    /// File it came from, if any.
    pub file: Option<PathBuf>,
    /// b-model bias, if generated here.
    pub burstiness: Option<f64>,
    /// Request size in milliseconds.
    pub size_ms: f64,
    /// Length in seconds.
    pub duration_s: f64,
    /// Expected requests (integral of the rate).
    pub expected_requests: f64,
    /// Mean rate in requests per second.
    pub mean_rate: f64,
    /// Peak per-minute rate over the mean.
    pub peak_to_mean: f64,
    /// Seed of the arrivals.
    pub seed: u64,
}

impl TraceArgs {
    /// Loads or generates the trace.
    #[cfg(feature = "lab")]
    pub fn load(&self) -> anyhow::Result<(RateTrace, TraceSummary)> {
        let (trace, burstiness) = match &self.trace {
            Some(path) => (file::read(path)?, None),
            None => {
                let s = self.synthetic.spec();
                (s.generate().context("cannot generate the synthetic trace")?, Some(s.burstiness))
            }
        };
        let summary = summarize(&trace, self.trace.clone(), burstiness);
        Ok((trace, summary))
    }
}

fn summarize(trace: &RateTrace, file: Option<PathBuf>, burstiness: Option<f64>) -> TraceSummary {
    let expected = trace.expected_requests();
    let duration_s = to_secs(trace.duration);
    let mean = expected / duration_s;
    let peak = trace.minute_rates.iter().copied().fold(0.0, f64::max);
    TraceSummary {
        file,
        burstiness,
        size_ms: to_secs(trace.size) * 1e3,
        duration_s,
        expected_requests: expected,
        mean_rate: mean,
        peak_to_mean: if mean > 0.0 { peak / mean } else { 0.0 },
        seed: trace.seed,
    }
}

/// `spork trace` subcommands.
#[derive(clap::Subcommand)]
pub enum Command {
    /// Generate a synthetic trace (b-model rates, one request size) and write it as a trace file.
    Gen {
        /// Generator options.
        #[command(flatten)]
        args: GenArgs,
        /// Output file.
        #[arg(short, long, value_name = "FILE")]
        out: PathBuf,
    },
    /// Print a summary of a trace file.
    Show {
        /// The trace file.
        file: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Synthetic trace options (b-model rates, one request size, Poisson arrivals).
#[derive(clap::Args, Debug, Clone)]
pub struct GenArgs {
    /// b-model bias: 0.5 is uniform load, 0.75 highly variable.
    #[arg(long, default_value_t = 0.6)]
    pub burstiness: f64,
    /// Trace length.
    #[arg(long, default_value = "2h", value_parser = super::parse_duration)]
    pub duration: u64,
    /// Request size bucket (short, medium, long) or a duration.
    #[arg(long, default_value = "short")]
    pub size: SizeSpec,
    /// Mean number of CPU workers the load needs.
    #[arg(long, default_value_t = 100.0)]
    pub workers: f64,
    /// Seed.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(0..=i64::MAX as u64))]
    pub seed: u64,
    /// Give each request an optional part of this many times its size (what brownout may skip).
    #[arg(long, default_value_t = 0.0)]
    pub optional_factor: f64,
    /// Unknown request sizes: each request's size is drawn log-normal around --size with this
    /// coefficient of variation, and schedulers see only an online estimate (see --size-estimate).
    #[arg(long, default_value_t = 0.0)]
    pub size_cv: f64,
}

impl GenArgs {
    /// The generator parameters.
    pub fn spec(&self) -> Synthetic {
        Synthetic {
            burstiness: self.burstiness,
            duration: self.duration,
            size: self.size,
            workers: self.workers,
            seed: self.seed,
            optional_factor: self.optional_factor,
            size_cv: self.size_cv,
        }
    }
}

/// Runs a `spork trace` subcommand.
pub fn run(cmd: Command) -> anyhow::Result<()> {
    match cmd {
        Command::Gen { args, out } => {
            let s = args.spec();
            let trace = s.generate().context("cannot generate the trace")?;
            let mut prov = toml::Table::new();
            prov.insert("generator".into(), "b-model".into());
            prov.insert("burstiness".into(), args.burstiness.into());
            prov.insert("size".into(), args.size.to_string().into());
            prov.insert("workers".into(), args.workers.into());
            prov.insert("seed".into(), (args.seed as i64).into());
            file::write(&out, &trace, Some(&prov))?;
            let sum = summarize(&trace, Some(out.clone()), Some(args.burstiness));
            eprintln!(
                "wrote {}: {:.0} requests expected over {:.0} s, size {:.3} ms, peak/mean {:.2}",
                out.display(),
                sum.expected_requests,
                sum.duration_s,
                sum.size_ms,
                sum.peak_to_mean
            );
            Ok(())
        }
        Command::Show { file: path, json } => {
            let trace = file::read(&path)?;
            let sum = summarize(&trace, Some(path), None);
            if json {
                out!("{}", serde_json::to_string_pretty(&sum)?);
            } else {
                out!(
                    "{}: {} minutes, {:.0} s, size {:.3} ms, seed {}, {:.0} requests expected, mean {:.1} req/s, peak/mean {:.2}",
                    sum.file.as_ref().map(|p| p.display().to_string()).unwrap_or_default(),
                    trace.minute_rates.len(),
                    sum.duration_s,
                    sum.size_ms,
                    sum.seed,
                    sum.expected_requests,
                    sum.mean_rate,
                    sum.peak_to_mean
                );
            }
            Ok(())
        }
    }
}
