//! `spork brownout`: the brownout reference scenario under one or all controllers.

use anyhow::Context;
use comfy_table::{Cell, CellAlignment, Table, presets::UTF8_FULL_CONDENSED};
use rayon::prelude::*;
use serde::Serialize;
use spork::evaluate::brownout::{Outcome, Scenario, run};
use spork::model::time::to_secs;
use spork::policy::brownout::ControllerKind;
use spork::reproduce::plot::{Chart, Series, render};
use std::path::PathBuf;

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

/// Simulated hours one invocation may run without `--force`: the reference comparison (5
/// controllers x 5 seeds x 20 min) is about 8; a thousand is hours of computing on two cores.
const BUDGET_HOURS: f64 = 1_000.0;

#[derive(Serialize)]
struct Row {
    controller: String,
    runs: usize,
    iae: f64,
    periods_over: f64,
    requests_over: f64,
    optional_ratio: f64,
    p95_s: f64,
    p99_s: f64,
    max_s: f64,
}

/// Runs `spork brownout`.
pub fn run_cmd(a: Args) -> anyhow::Result<()> {
    let kinds: Vec<ControllerKind> = if a.controller == "all" {
        ControllerKind::ALL.to_vec()
    } else {
        vec![a.controller.parse::<ControllerKind>().map_err(|e| anyhow::anyhow!("{e}, or all"))?]
    };
    if !a.setpoint.is_finite() || a.setpoint <= 0.0 || a.seeds == 0 || a.duration == 0 {
        anyhow::bail!("--setpoint, --seeds and --duration must be above 0");
    }
    let hours = kinds.len() as f64 * a.seeds as f64 * to_secs(a.duration) / 3600.0;
    if hours > BUDGET_HOURS && !a.force {
        anyhow::bail!(
            "{} controller(s) x {} seeds x {:.0} s is {hours:.0} simulated hours, beyond the budget of \
             {BUDGET_HOURS:.0}\n  fix: fewer --seeds or a shorter --duration, or --force to run it anyway",
            kinds.len(),
            a.seeds,
            to_secs(a.duration)
        );
    }
    if let Some(dir) = &a.out {
        if dir.exists() && !dir.is_dir() {
            anyhow::bail!(
                "--out {}: a file is there, not a folder\n  fix: name a folder (it is created)",
                dir.display()
            );
        }
        if dir.join("brownout.json").exists() {
            eprintln!("note: {} holds earlier brownout results: they will be replaced", dir.display());
        }
    }
    let scenario =
        Scenario { duration_s: to_secs(a.duration), setpoint_s: a.setpoint, ..Scenario::default() };
    let jobs: Vec<(ControllerKind, u64)> =
        kinds.iter().flat_map(|&k| (0..a.seeds).map(move |s| (k, a.seed.wrapping_add(s)))).collect();
    let outcomes: Vec<Outcome> = jobs.par_iter().map(|&(k, s)| run(&scenario, k, s)).collect();
    let rows: Vec<Row> = kinds
        .iter()
        .map(|k| {
            let os: Vec<&Outcome> = outcomes.iter().filter(|o| o.controller == k.name()).collect();
            let mean = |f: fn(&Outcome) -> f64| os.iter().map(|o| f(o)).sum::<f64>() / os.len().max(1) as f64;
            Row {
                controller: k.name().to_string(),
                runs: os.len(),
                iae: mean(|o| o.iae),
                periods_over: mean(|o| o.periods_over),
                requests_over: mean(|o| o.requests_over),
                optional_ratio: mean(|o| o.optional_ratio),
                p95_s: mean(|o| o.p95_s),
                p99_s: mean(|o| o.p99_s),
                max_s: mean(|o| o.max_s),
            }
        })
        .collect();
    if let Some(dir) = &a.out {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("--out {}: cannot create the folder", dir.display()))?;
        let first: Vec<&Outcome> = kinds
            .iter()
            .filter_map(|k| outcomes.iter().find(|o| o.controller == k.name() && o.seed == a.seed))
            .collect();
        let mut charts = Vec::new();
        let mut csv = String::from("controller,t_s,p95_optional_s,knob\n");
        for o in &first {
            let p95: Vec<(f64, f64)> =
                o.samples.iter().filter_map(|s| s.p95_optional.map(|y| (s.t, y))).collect();
            let knob: Vec<(f64, f64)> = o.samples.iter().map(|s| (s.t, s.knob.min(200.0))).collect();
            for s in &o.samples {
                csv.push_str(&format!(
                    "{},{},{},{}\n",
                    o.controller,
                    s.t,
                    s.p95_optional.map_or(String::new(), |v| v.to_string()),
                    s.knob
                ));
            }
            let setpoint = vec![(0.0, a.setpoint), (scenario.duration_s, a.setpoint)];
            charts.push(Chart {
                title: format!("{}: p95 of optional-served responses (seed {})", o.controller, o.seed),
                x_label: "time (s)".into(),
                y_label: "seconds".into(),
                series: vec![
                    Series { name: "p95".into(), points: p95 },
                    Series { name: "set-point".into(), points: setpoint },
                ],
                log_y: true,
            });
            charts.push(Chart {
                title: format!("{}: gate setting", o.controller),
                x_label: "time (s)".into(),
                y_label: if o.controller == "dimmer" {
                    "dimmer value".into()
                } else {
                    "queue threshold".into()
                },
                series: vec![Series { name: "setting".into(), points: knob }],
                log_y: false,
            });
        }
        render(&charts, 2, &dir.join("brownout"))?;
        let write = |name: &str, text: String| {
            let p = dir.join(name);
            std::fs::write(&p, text).with_context(|| format!("cannot write {}", p.display()))
        };
        write("brownout_periods.csv", csv)?;
        write("brownout.json", serde_json::to_string_pretty(&rows)?)?;
    }
    if a.json {
        out!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(());
    }
    out!(
        "brownout reference scenario: 1 PS server (10 in service), 20/100/30/70/20 req/s steps of 60 s, set-point {} s, period 0.5 s, {} s x {} seed(s); gate at first service; percentiles linear between closest ranks",
        a.setpoint,
        scenario.duration_s,
        a.seeds
    );
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED);
    t.set_header([
        "controller",
        "IAE (s)",
        "periods over",
        "requests over",
        "optional ratio",
        "p95 s",
        "p99 s",
        "max s",
    ]);
    for r in &rows {
        let cells = [
            r.controller.clone(),
            format!("{:.1}", r.iae),
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
    out!("{t}");
    Ok(())
}
