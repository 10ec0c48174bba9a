//! `spork brownout`: the brownout reference scenario under one or all controllers. The runs, their
//! means, the per-period CSV and the plots are the brownout experiment's comparison
//! ([`spork::reproduce::experiments::brownout`]); here are the flags, the work budget, the files and
//! the table.

use anyhow::Context;
use comfy_table::{Cell, CellAlignment, Table, presets::UTF8_FULL_CONDENSED};
use spork::evaluate::brownout::Scenario;
use spork::model::time::to_secs;
use spork::policy::brownout::ControllerKind;
use spork::reproduce::experiments::brownout::{Comparison, Seeds, Summary};
use spork::reproduce::plot::render;
use std::path::{Path, PathBuf};

/// Options of `spork brownout`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Controller, or `all` to compare them.
    #[arg(long, default_value = "all")]
    controller: String,
    /// Simulated time per run.
    #[arg(long, default_value = "20m", value_parser = super::parse_duration)]
    duration: u64,
    /// Runs (seeds seed, seed+1, ...); figures are means over them.
    #[arg(long, default_value_t = 5)]
    seeds: u64,
    /// First seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Set-point on the p95, seconds.
    #[arg(long, default_value_t = 1.0)]
    setpoint: f64,
    /// Load: the reference scenario's arrival rates (20/100/30/70/20 req/s) times this factor.
    #[arg(long, default_value_t = 1.0)]
    load: f64,
    /// Folder for the plot of p95 and threshold over time (PNG and SVG) and the per-period CSV.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// Run beyond the work budget (more than 1,000 simulated hours in all).
    #[arg(long)]
    force: bool,
}

/// Simulated hours (at the reference load) one invocation may run without `--force`: the reference
/// comparison (6 controllers x 5 seeds x 20 min) is 10; a thousand is hours of computing on two cores.
const BUDGET_HOURS: f64 = 1_000.0;

/// The largest `--load`: ten times the reference peak of 100 req/s is 70 times what the server
/// serves with optional content, and the queue (and each run's memory) grows with it.
const MAX_LOAD: f64 = 10.0;

/// Runs `spork brownout`.
pub fn run_cmd(a: Args) -> anyhow::Result<()> {
    let kinds = controllers(&a.controller)?;
    check(&a, &kinds)?;
    let scenario =
        Scenario { duration_s: to_secs(a.duration), setpoint_s: a.setpoint, ..Scenario::default() }
            .with_load(a.load);
    let comparison = Comparison::run(scenario, &kinds, Seeds { first: a.seed, count: a.seeds });
    let rows = comparison.summaries();
    if let Some(dir) = &a.out {
        write_files(dir, &comparison, &rows)?;
    }
    if a.json {
        out!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(());
    }
    out!(
        "brownout reference scenario: 1 PS server (10 in service), {} req/s steps of 60 s, set-point {} s, period 0.5 s, {} s x {} seed(s); gate at first service; percentiles linear between closest ranks",
        comparison.scenario.rates.iter().map(|r| format!("{r}")).collect::<Vec<_>>().join("/"),
        a.setpoint,
        comparison.scenario.duration_s,
        a.seeds
    );
    out!("{}", table(&rows));
    Ok(())
}

/// The controllers `--controller` names: one, or `all`.
fn controllers(name: &str) -> anyhow::Result<Vec<ControllerKind>> {
    if name == "all" {
        return Ok(ControllerKind::ALL.to_vec());
    }
    Ok(vec![name.parse::<ControllerKind>().map_err(|e| anyhow::anyhow!("{e}, or all"))?])
}

/// Refuses settings out of range, work beyond the budget without `--force`, and an `--out` that is
/// a file; notes earlier results that `--out` will replace.
fn check(a: &Args, kinds: &[ControllerKind]) -> anyhow::Result<()> {
    if !a.setpoint.is_finite() || a.setpoint <= 0.0 || a.seeds == 0 || a.duration == 0 {
        anyhow::bail!("--setpoint, --seeds and --duration must be above 0");
    }
    if !(a.load.is_finite() && a.load > 0.0 && a.load <= MAX_LOAD) {
        anyhow::bail!(
            "--load {}: the factor on the reference arrival rates must be above 0 and at most {MAX_LOAD}\n  fix: 1 is the reference scenario, 1.5 half as much load again",
            a.load
        );
    }
    // Work grows with the requests simulated: an hour at twice the load counts as two.
    let hours = kinds.len() as f64 * a.seeds as f64 * to_secs(a.duration) / 3600.0 * a.load;
    if hours > BUDGET_HOURS && !a.force {
        anyhow::bail!(
            "{} controller(s) x {} seeds x {:.0} s at load {} is {hours:.0} simulated hours at the \
             reference load, beyond the budget of {BUDGET_HOURS:.0}\n  fix: fewer --seeds, a shorter \
             --duration or a lower --load, or --force to run it anyway",
            kinds.len(),
            a.seeds,
            to_secs(a.duration),
            a.load
        );
    }
    let Some(dir) = &a.out else { return Ok(()) };
    if dir.exists() && !dir.is_dir() {
        anyhow::bail!(
            "--out {}: a file is there, not a folder\n  fix: name a folder (it is created)",
            dir.display()
        );
    }
    if dir.join("brownout.json").exists() {
        eprintln!("note: {} holds earlier brownout results: they will be replaced", dir.display());
    }
    Ok(())
}

/// Writes the plots of the traced runs (PNG and SVG), their per-period CSV and the rows as JSON.
fn write_files(dir: &Path, comparison: &Comparison, rows: &[Summary]) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("--out {}: cannot create the folder", dir.display()))?;
    render(&comparison.charts(), 2, &dir.join("brownout"))?;
    let write = |name: &str, text: String| {
        let p = dir.join(name);
        std::fs::write(&p, text).with_context(|| format!("cannot write {}", p.display()))
    };
    write("brownout_periods.csv", comparison.periods_csv())?;
    write("brownout.json", serde_json::to_string_pretty(rows)?)
}

/// The rows as a table, figures right-aligned.
fn table(rows: &[Summary]) -> Table {
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED);
    t.set_header([
        "controller",
        "IAE (s)",
        "IAE over (s)",
        "periods over",
        "requests over",
        "optional ratio",
        "p95 s",
        "p99 s",
        "max s",
    ]);
    for r in rows {
        let cells = [
            r.controller.name().to_string(),
            format!("{:.1}", r.iae),
            format!("{:.1}", r.iae_over),
            format!("{:.1}%", r.periods_over * 100.0),
            format!("{:.2}%", r.requests_over * 100.0),
            format!("{:.1}%", r.optional_ratio * 100.0),
            format!("{:.2}", r.p95_s),
            format!("{:.2}", r.p99_s),
            format!("{:.2}", r.max_s),
        ];
        t.add_row(cells.into_iter().enumerate().map(|(i, c)| {
            if i > 0 { Cell::new(c).set_alignment(CellAlignment::Right) } else { Cell::new(c) }
        }));
    }
    t
}
