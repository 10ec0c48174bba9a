//! `spork simulate`: evaluate one or more schedulers on one trace.

use super::platform_args::PlatformArgs;
use super::table;
use super::trace::{TraceArgs, TraceSummary};
use anyhow::bail;
use rayon::prelude::*;
use serde::Serialize;
use spork::evaluate::{Plan, PoolBrownout, Report, evaluate};
use spork::model::Platform;
use spork::policy::brownout::ControllerKind;
use spork::policy::{DispatcherKind, Scheduler};

/// Options of `spork simulate`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Scheduler(s), comma-separated, or `all` for the paper's nine: cpu-dynamic, fpga-static,
    /// fpga-dynamic, mark-ideal, spork-c, spork-b, spork-e, spork-c-ideal, spork-e-ideal; also
    /// spork:<energy weight> and spork-ideal:<weight> for any weighted objective.
    #[arg(long, default_value = "spork-e")]
    scheduler: String,
    /// Dispatcher for every scheduler (default: each scheduler's own; MArk-ideal uses round robin).
    #[arg(long, value_enum)]
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
    /// Cap on CPU workers (spinning up and down included); beyond it requests queue on the worker that
    /// frees up first.
    #[arg(long, value_name = "N")]
    max_cpu: Option<u32>,
    /// Cap on FPGA workers; the allocator's target is clipped to it.
    #[arg(long, value_name = "N")]
    max_fpga: Option<u32>,
    /// Brownout controller for requests' optional parts (see --optional-factor); the run is shown beside
    /// the same run without brownout.
    #[arg(long, value_enum)]
    brownout: Option<ControllerKind>,
    /// Brownout control period.
    #[arg(long, default_value = "500ms", value_parser = super::parse_duration)]
    brownout_period: u64,
    /// Brownout set-point on the p95 of response time relative to the deadline span (1 = the deadline).
    #[arg(long, default_value_t = 1.0)]
    brownout_setpoint: f64,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Output<'a> {
    trace: &'a TraceSummary,
    platform: &'a Platform,
    reports: &'a [Report],
}

/// Parses `--scheduler`.
pub fn parse_schedulers(s: &str) -> anyhow::Result<Vec<Scheduler>> {
    if s.trim().eq_ignore_ascii_case("all") {
        return Ok(Scheduler::PAPER.to_vec());
    }
    let list = s
        .split(',')
        .filter(|p| !p.trim().is_empty())
        .map(str::parse)
        .collect::<Result<Vec<Scheduler>, _>>()?;
    if list.is_empty() {
        bail!("--scheduler is empty: name at least one of {}", Scheduler::NAMES);
    }
    Ok(list)
}

/// Runs `spork simulate`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let schedulers = parse_schedulers(&args.scheduler)?;
    let platform = args.platform.platform()?;
    let (trace, summary) = args.trace.load()?;
    if !args.brownout_setpoint.is_finite() || args.brownout_setpoint <= 0.0 || args.brownout_period == 0 {
        bail!("--brownout-setpoint and --brownout-period must be above 0");
    }
    if args.brownout.is_some() && trace.optional == 0 {
        bail!(
            "--brownout needs requests with an optional part: add --optional-factor F (e.g. 1.0) or a trace with optional_ms"
        );
    }
    let started = std::time::Instant::now();
    let base = |s: Scheduler| Plan {
        dispatcher: args.dispatcher,
        max_headroom: args.max_headroom,
        max_workers: [args.max_cpu, args.max_fpga],
        ..Plan::new(s)
    };
    let mut plans: Vec<Plan> = Vec::new();
    for &s in &schedulers {
        plans.push(base(s));
        if let Some(controller) = args.brownout {
            let setup =
                PoolBrownout { controller, period: args.brownout_period, setpoint: args.brownout_setpoint };
            plans.push(Plan { brownout: Some(setup), ..base(s) });
        }
    }
    let reports: Vec<Report> = plans.par_iter().map(|plan| evaluate(&platform, &trace, plan)).collect();
    if args.json {
        let out = Output { trace: &summary, platform: &platform, reports: &reports };
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!("{}", table::trace_line(&summary, &platform));
        println!("{}\n", table::reports(&reports));
        eprintln!("evaluated {} scheduler(s) in {:.1} s", reports.len(), started.elapsed().as_secs_f64());
    }
    Ok(())
}
