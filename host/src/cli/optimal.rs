//! `spork optimal`: the MILP optimum of section 3 on one b-model load trace.

use super::platform_args::PlatformArgs;
use anyhow::{Context, bail};
use serde::Serialize;
use spork::optimal::{MilpSpec, solve};
use spork::policy::{Fleet, Objective};
use spork::reproduce::jobs::bmodel_load;

/// Options of `spork optimal`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Platform: hybrid, cpu-only or fpga-only.
    #[arg(long, default_value = "hybrid")]
    fleet: String,
    /// Objective: energy, cost, balanced, or an energy weight in [0, 1].
    #[arg(long, default_value = "energy")]
    objective: String,
    /// b-model burstiness of the per-second load.
    #[arg(long, default_value_t = 0.6)]
    burstiness: f64,
    /// One-second intervals (the paper: 3600, one hour).
    #[arg(long, default_value_t = 3600)]
    intervals: usize,
    /// Mean load in CPU workers (the paper: 10,000 req/s of 10 ms = 100).
    #[arg(long, default_value_t = 100.0)]
    workers: f64,
    /// Seed of the load.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Solver time limit in seconds.
    #[arg(long, default_value_t = 120.0)]
    time_limit: f64,
    /// Relative MIP gap at which to stop.
    #[arg(long, default_value_t = 1e-4)]
    gap: f64,
    /// Platform options.
    #[command(flatten)]
    platform: PlatformArgs,
    /// Print JSON (including the per-interval schedule).
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Out<'a> {
    fleet: &'a str,
    objective: Objective,
    burstiness: f64,
    intervals: usize,
    solution: &'a spork::optimal::MilpSolution,
}

/// Runs `spork optimal`.
pub fn run(a: Args) -> anyhow::Result<()> {
    let fleet = match a.fleet.as_str() {
        "hybrid" => Fleet::HYBRID,
        "cpu-only" => Fleet::CPU_ONLY,
        "fpga-only" => Fleet::FPGA_ONLY,
        other => bail!("unknown fleet '{other}': expected hybrid, cpu-only or fpga-only"),
    };
    let objective = match a.objective.as_str() {
        "energy" => Objective::ENERGY,
        "cost" => Objective::COST,
        "balanced" => Objective::BALANCED,
        w => w.parse::<f64>().ok().and_then(Objective::weighted).with_context(|| {
            format!("unknown objective '{w}': expected energy, cost, balanced or a weight in [0, 1]")
        })?,
    };
    if !(0.5..1.0).contains(&a.burstiness) {
        bail!("burstiness {} is out of range: use 0.5 (uniform) to below 1", a.burstiness);
    }
    if a.intervals == 0 || !a.workers.is_finite() || a.workers <= 0.0 {
        bail!("--intervals and --workers must be above 0");
    }
    // Checked before the load is generated; the solver checks the rest.
    if a.intervals > spork::optimal::MAX_INTERVALS || a.workers > spork::optimal::MAX_LOAD {
        bail!(
            "--intervals {} --workers {}: one MILP takes at most {} intervals and {:e} workers of mean load",
            a.intervals,
            spork::model::platform::show(a.workers),
            spork::optimal::MAX_INTERVALS,
            spork::optimal::MAX_LOAD
        );
    }
    let spec = MilpSpec {
        platform: a.platform.platform()?,
        fleet,
        objective,
        interval_s: 1.0,
        time_limit_s: a.time_limit,
        mip_rel_gap: a.gap,
    };
    let load = bmodel_load(a.burstiness, a.intervals, a.workers, a.seed);
    let s = solve(&spec, &load)?;
    if a.json {
        let out = Out {
            fleet: &a.fleet,
            objective,
            burstiness: a.burstiness,
            intervals: a.intervals,
            solution: &s,
        };
        out!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        let (vars, ints, rows) = s.size;
        out!(
            "{} {}-optimal, burstiness {}, {} intervals: {} ({} variables, {} integer, {} constraints) in {:.2} s, gap {:.4}%",
            a.fleet,
            a.objective,
            a.burstiness,
            a.intervals,
            s.status,
            vars,
            ints,
            rows,
            s.solve_s,
            s.gap * 100.0
        );
        out!(
            "energy {:.1} kJ (busy {:.1}, idle {:.1}, spin {:.1}), cost ${:.2}; energy efficiency {:.1}%, relative cost {:.2}x; \
             {:.1}% of work on CPUs; peak {} FPGAs, {} CPUs",
            s.energy_j / 1e3,
            s.energy_busy_j / 1e3,
            s.energy_idle_j / 1e3,
            s.energy_spin_j / 1e3,
            s.cost,
            s.energy_efficiency * 100.0,
            s.relative_cost,
            s.cpu_work_share * 100.0,
            s.fpgas.iter().max().unwrap_or(&0),
            s.cpus.iter().max().unwrap_or(&0)
        );
    }
    Ok(())
}
