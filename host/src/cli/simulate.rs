//! `spork simulate`: evaluate one or more schedulers on one trace.

use super::platform_args::PlatformArgs;
use super::pool_args::PoolArgs;
use super::pool_args::parse_schedulers;
use super::table;
use super::trace::{TraceArgs, TraceSummary};
use anyhow::bail;
use rayon::prelude::*;
use serde::Serialize;
use spork::evaluate::{Plan, Report, evaluate};
use spork::model::Platform;
use spork::policy::DispatcherKind;
use spork::policy::estimate::{InvalidStatistic, Statistic};
use spork::policy::release::ReleaseTiming;

/// Options of `spork simulate`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Scheduler(s), comma-separated, or `all` for the paper's nine: cpu-dynamic, fpga-static,
    /// fpga-dynamic, mark-ideal, spork-c, spork-b, spork-e, spork-c-ideal, spork-e-ideal; also
    /// spork:<energy weight> and spork-ideal:<weight> for any weighted objective.
    #[arg(long, default_value = "spork-e")]
    scheduler: String,
    /// Dispatcher for every scheduler (default: each scheduler's own; MArk-ideal uses round robin).
    #[arg(long, value_parser = super::named::<DispatcherKind>(DispatcherKind::ALL.map(DispatcherKind::name)))]
    dispatcher: Option<DispatcherKind>,
    /// Trace options.
    #[command(flatten)]
    trace: TraceArgs,
    /// Platform options.
    #[command(flatten)]
    platform: PlatformArgs,
    /// FPGA-dynamic: the largest headroom multiple to search.
    #[arg(long, default_value_t = 64)]
    max_headroom: u32,
    /// Pool caps and brownout.
    #[command(flatten)]
    pool: PoolArgs,
    /// With unknown sizes (--size-cv, or a trace file's size_cv): what requests are dispatched at,
    /// `mean` (EWMA of the sizes measured so far), a percentile such as `p95` of the recent ones, or
    /// `known` (each request's own size, an oracle) [default: mean when sizes spread, else known].
    #[arg(long, value_name = "ESTIMATE")]
    size_estimate: Option<SizeEstimate>,
    /// When a surplus FPGA may start its idle countdown: `drained` (when its queue drains, ours) or
    /// `planned` (the paper's reading: interval t keeps n_t, the countdown starts once surplus).
    #[arg(long, default_value = "drained", value_parser = super::named::<ReleaseTiming>(ReleaseTiming::ALL.map(ReleaseTiming::name)))]
    release_timing: ReleaseTiming,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Run beyond the work budget (5e9 simulated requests over all schedulers).
    #[arg(long)]
    force: bool,
}

/// What `--size-estimate` names.
#[derive(Clone, Copy, Debug)]
enum SizeEstimate {
    /// Each request's own size (an oracle).
    Known,
    /// A statistic of the measured sizes.
    At(Statistic),
}

impl std::str::FromStr for SizeEstimate {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.trim().eq_ignore_ascii_case("known") {
            return Ok(SizeEstimate::Known);
        }
        s.parse().map(SizeEstimate::At).map_err(|e: InvalidStatistic| format!("{e}, or known"))
    }
}

/// Simulated requests one invocation may run without `--force`: about ten minutes of one core at the
/// evaluator's 7-8 M requests/s (`spork simulate --scheduler all` on the default 2-hour trace is 0.7e9).
const BUDGET_REQUESTS: f64 = 5e9;

#[derive(Serialize)]
struct Output<'a> {
    trace: &'a TraceSummary,
    platform: &'a Platform,
    reports: &'a [Report],
}

/// Runs `spork simulate`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let schedulers = parse_schedulers(&args.scheduler)?;
    let platform = args.platform.platform()?;
    let (trace, summary) = args.trace.load()?;
    let started = std::time::Instant::now();
    let sizes = match args.size_estimate {
        Some(SizeEstimate::Known) => None,
        Some(SizeEstimate::At(s)) => Some(s),
        None => (trace.size_cv > 0.0).then_some(Statistic::Mean),
    };
    let plans = args.pool.plans(&schedulers, trace.optional > 0, None, |s| Plan {
        dispatcher: args.dispatcher,
        max_headroom: args.max_headroom,
        sizes,
        release: args.release_timing,
        ..Plan::new(s)
    })?;
    let total = summary.expected_requests * plans.len() as f64;
    let within = total.is_finite() && total <= BUDGET_REQUESTS;
    if !within && !args.force {
        bail!(
            "{} run(s) of a trace of about {:.3e} requests is beyond the budget of {BUDGET_REQUESTS:e} simulated \
             requests\n  fix: a shorter --duration, a smaller --workers or --size, fewer --scheduler, or --force",
            plans.len(),
            summary.expected_requests
        );
    }
    let reports: Vec<Report> = plans.par_iter().map(|plan| evaluate(&platform, &trace, plan)).collect();
    if args.json {
        let out = Output { trace: &summary, platform: &platform, reports: &reports };
        out!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        out!("{}", table::trace_line(&summary, &platform));
        out!("{}\n", table::reports(&reports));
        for r in reports.iter().filter(|r| r.size_error.is_some()) {
            let (error, met) = (r.size_error.unwrap_or(0.0), 1.0 - r.miss_share);
            eprintln!(
                "{}: sizes estimated ({}), estimate error (mean absolute / mean size) {:.1}%, SLO attainment {:.3}%",
                r.scheduler,
                sizes.map_or("known".to_string(), |s| s.to_string()),
                error * 100.0,
                met * 100.0
            );
        }
        for (r, b) in reports.iter().filter_map(|r| r.batches.map(|b| (r, b))) {
            eprintln!(
                "{}: dynamic batching booked {} batches of {:.2} requests on average ({} requests batched of {})",
                r.scheduler, b.batches, b.mean_size, b.requests, r.requests
            );
        }
        for (r, n) in reports.iter().filter_map(|r| r.fpga_never_pays.map(|n| (r, n))) {
            eprintln!("{}: held no FPGA: {}", r.scheduler, n.describe("this workload"));
        }
        eprintln!("evaluated {} scheduler(s) in {:.1} s", reports.len(), started.elapsed().as_secs_f64());
    }
    Ok(())
}
