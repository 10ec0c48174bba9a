//! `spork reproduce`: every experiment of the paper, regenerated into a results folder.
//!
//! Each experiment is a list of independent runs ([`experiments`]), executed in parallel with rayon and
//! appended to `<out>/<experiment>/runs.jsonl` as they finish ([`store`]), so an interrupted sweep
//! resumes. Runs are then aggregated into points ([`aggregate`]) written as CSV and JSON, drawn as PNG
//! and SVG ([`plot`]), and compared with the numbers the paper states in `REPORT.md` ([`claims`]).

pub mod aggregate;
pub mod claims;
pub mod experiments;
pub mod plot;
pub mod store;

use aggregate::{Combine, Point, Table};
use claims::{Check, Claim};
use experiments::{Job, Scale};
use indicatif::{ProgressBar, ProgressStyle};
use plot::{Chart, Series};
use rayon::prelude::*;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;
use store::{Row, Store};

/// What to reproduce and where.
#[derive(Clone, Debug)]
pub struct Options {
    /// Results folder.
    pub out: PathBuf,
    /// Small sizes (CI).
    pub quick: bool,
    /// Azure Functions 2019 folder, for Table 8.
    pub azure: Option<PathBuf>,
    /// Azure day to use (default: the first present).
    pub azure_day: Option<u32>,
    /// Alibaba microservices 2021 folder, for Table 8.
    pub alibaba: Option<PathBuf>,
    /// Only these experiments (fig2, fig3, fig4, fig5, fig6, fig7, table8, table9); empty for all.
    pub only: Vec<String>,
    /// Show a progress bar.
    pub progress: bool,
}

/// What a reproduction did.
#[derive(Debug)]
pub struct Summary {
    /// Runs in the plan.
    pub runs: usize,
    /// Runs found already done (resumed).
    pub resumed: usize,
    /// Runs that failed (named in the report).
    pub failed: Vec<(String, String)>,
    /// The paper's numbers beside ours.
    pub claims: Vec<Claim>,
    /// Qualitative findings.
    pub checks: Vec<Check>,
    /// Wall time of this invocation.
    pub wall_s: f64,
}

/// A reproduction that could not run at all.
#[derive(Debug, thiserror::Error)]
pub enum ReproduceError {
    /// A dataset could not be read.
    #[error(transparent)]
    Input(#[from] crate::input::InputError),
    /// The results folder could not be written.
    #[error(transparent)]
    Store(#[from] store::StoreError),
    /// An output file could not be written.
    #[error("cannot write results: {0}")]
    Output(String),
    /// An unknown experiment name.
    #[error("unknown experiment '{0}': expected fig2, fig3, fig4, fig5, fig6, fig7, table8 or table9")]
    Unknown(String),
}

const ALL: [&str; 8] = ["fig2", "fig3", "fig4", "fig5", "fig6", "fig7", "table8", "table9"];

/// Runs the reproduction.
pub fn run(opts: &Options) -> Result<Summary, ReproduceError> {
    let started = Instant::now();
    for o in &opts.only {
        if !ALL.contains(&o.as_str()) {
            return Err(ReproduceError::Unknown(o.clone()));
        }
    }
    let wanted = |e: &str| {
        opts.only.is_empty() || opts.only.iter().any(|o| o == e || (o == "table9" && e == "table9prod"))
    };
    let scale = if opts.quick { Scale::quick() } else { Scale::full() };
    let mut jobs: Vec<Job> = Vec::new();
    if wanted("fig2") || wanted("fig3") {
        jobs.extend(experiments::milp_jobs(&scale).into_iter().filter(|j| wanted(j.experiment)));
    }
    if wanted("fig4") {
        jobs.extend(experiments::fig4_jobs(&scale));
    }
    if wanted("fig5") {
        jobs.extend(experiments::fig5_jobs(&scale));
    }
    if wanted("fig6") {
        jobs.extend(experiments::fig6_jobs(&scale));
    }
    if wanted("fig7") || wanted("table9") {
        jobs.extend(experiments::size_jobs(&scale).into_iter().filter(|j| wanted(j.experiment)));
    }
    let mut production = Vec::new();
    if wanted("table8") || wanted("table9") {
        if let Some(dir) = &opts.azure {
            let apps = crate::trace::production::read_azure(dir, opts.azure_day)?;
            production.push((0u32, apps));
        }
        if let Some(dir) = &opts.alibaba {
            production.push((1u32, crate::trace::production::read_alibaba(dir)?));
        }
    }
    for (dataset, apps) in &production {
        let buckets: Vec<(usize, Vec<(String, crate::trace::RateTrace)>)> =
            [crate::trace::SizeSpec::Short, crate::trace::SizeSpec::Medium]
                .iter()
                .enumerate()
                .map(|(i, b)| (i, crate::trace::production::select(apps, *b, 0, scale.production_minutes, 1)))
                .collect();
        jobs.extend(
            experiments::production_jobs(*dataset, &buckets).into_iter().filter(|j| wanted(j.experiment)),
        );
    }

    // Open one store per experiment; skip runs already recorded.
    let mut stores: HashMap<&'static str, Store> = HashMap::new();
    let mut rows: HashMap<&'static str, Vec<Row>> = HashMap::new();
    for j in &jobs {
        if !stores.contains_key(j.experiment) {
            let (s, existing) = Store::open(&opts.out.join(j.experiment).join("runs.jsonl"))?;
            stores.insert(j.experiment, s);
            rows.insert(j.experiment, existing);
        }
    }
    let done: std::collections::HashSet<(String, String)> =
        rows.iter().flat_map(|(e, rs)| rs.iter().map(move |r| (e.to_string(), r.key()))).collect();
    let pending: Vec<&Job> =
        jobs.iter().filter(|j| !done.contains(&(j.experiment.to_string(), j.key()))).collect();
    let resumed = jobs.len() - pending.len();
    let bar = if opts.progress { ProgressBar::new(pending.len() as u64) } else { ProgressBar::hidden() };
    bar.set_style(
        ProgressStyle::with_template(
            "{elapsed_precise} [{bar:40}] {pos}/{len} runs, ETA {eta_precise} {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    // Long runs first so the tail of the sweep stays short.
    let mut pending = pending;
    pending.sort_by_key(|j| std::cmp::Reverse(cost_hint(j)));
    let results: Vec<(&'static str, Result<Row, String>, String)> = pending
        .par_iter()
        .map(|j| {
            let r = j.run();
            if let Ok(row) = &r
                && let Some(s) = stores.get(j.experiment)
                && let Err(e) = s.append(row)
            {
                bar.println(format!("warning: {e}"));
            }
            bar.inc(1);
            bar.set_message(j.experiment);
            (j.experiment, r, j.key())
        })
        .collect();
    bar.finish_and_clear();
    let mut failed = Vec::new();
    for (e, r, key) in results {
        match r {
            Ok(row) => rows.entry(e).or_default().push(row),
            Err(msg) => failed.push((format!("{e} {key}"), msg)),
        }
    }

    // Aggregate, write, plot.
    let mut tables: BTreeMap<String, Table> = BTreeMap::new();
    for (e, rs) in &rows {
        let how =
            if e.starts_with("table8") || *e == "table9prod" { Combine::SumRatio } else { Combine::Mean };
        let pts = aggregate::points(rs, how);
        let dir = opts.out.join(e);
        aggregate::write(&pts, &dir.join(e)).map_err(ReproduceError::Output)?;
        let table = Table { points: pts };
        plot_experiment(e, &table, &dir.join(e)).map_err(|err| ReproduceError::Output(err.to_string()))?;
        tables.insert(e.to_string(), table);
    }
    let lookup = |e: &str| tables.get(e).cloned();
    let claims = claims::claims(&lookup);
    let checks = claims::checks(&lookup);
    let summary = Summary {
        runs: jobs.len(),
        resumed,
        failed,
        claims,
        checks,
        wall_s: started.elapsed().as_secs_f64(),
    };
    let report = render_report(opts, &scale, &summary, &tables);
    std::fs::write(opts.out.join("REPORT.md"), report).map_err(|e| ReproduceError::Output(e.to_string()))?;
    let json =
        serde_json::json!({ "claims": summary.claims, "checks": summary.checks, "wall_s": summary.wall_s });
    std::fs::write(opts.out.join("claims.json"), serde_json::to_string_pretty(&json).unwrap_or_default())
        .map_err(|e| ReproduceError::Output(e.to_string()))?;
    Ok(summary)
}

fn cost_hint(j: &Job) -> u64 {
    match &j.work {
        experiments::Work::Milp { intervals, .. } => *intervals as u64 * 10,
        experiments::Work::Sim { scheduler, .. } => {
            if scheduler.searches_headroom() {
                6000
            } else {
                1000
            }
        }
    }
}

fn chart(title: &str, x: &str, y: &str, series: Vec<Series>, log_y: bool) -> Chart {
    Chart { title: title.into(), x_label: x.into(), y_label: y.into(), series, log_y }
}

fn lines(t: &Table, x: &str, at: &[(&str, f64)], metric: &str, scale: f64) -> Vec<Series> {
    t.series()
        .into_iter()
        .map(|s| Series {
            points: t.line(&s, x, at, metric).into_iter().map(|(a, b)| (a, b * scale)).collect(),
            name: s,
        })
        .filter(|s| !s.points.is_empty())
        .collect()
}

fn plot_experiment(e: &str, t: &Table, stem: &Path) -> Result<(), plot::PlotError> {
    let ee = "energy efficiency (%)";
    let rc = "relative cost (x)";
    let charts: Vec<Chart> = match e {
        "fig2" => vec![
            chart(
                "MILP optimum: energy efficiency",
                "burstiness",
                ee,
                lines(t, "burstiness", &[], "energy_efficiency", 100.0),
                false,
            ),
            chart(
                "MILP optimum: relative cost",
                "burstiness",
                rc,
                lines(t, "burstiness", &[], "relative_cost", 1.0),
                false,
            ),
        ],
        "fig3" => {
            let series = t
                .series()
                .into_iter()
                .map(|s| {
                    let b = s.trim_start_matches("b=").parse::<f64>().unwrap_or(0.0);
                    let mut pts: Vec<(f64, f64)> = t
                        .values("energy_weight")
                        .into_iter()
                        .filter_map(|w| {
                            let at = [("burstiness", b), ("energy_weight", w)];
                            Some((
                                t.get(&s, &at, "relative_cost")?,
                                t.get(&s, &at, "energy_efficiency")? * 100.0,
                            ))
                        })
                        .collect();
                    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                    Series { name: s, points: pts }
                })
                .collect();
            vec![chart("Pareto-optimal hybrid schedules", rc, ee, series, false)]
        }
        "fig4" => {
            let max_su =
                t.points.iter().filter_map(|p| p.metrics.get("fpga_spin_ups")).fold(1.0f64, |m, v| m.max(*v));
            vec![
                chart(
                    "60 s spin-up: energy efficiency",
                    "burstiness",
                    ee,
                    lines(t, "burstiness", &[], "energy_efficiency", 100.0),
                    false,
                ),
                chart(
                    "60 s spin-up: relative cost",
                    "burstiness",
                    rc,
                    lines(t, "burstiness", &[], "relative_cost", 1.0),
                    false,
                ),
                chart(
                    "requests on CPUs",
                    "burstiness",
                    "share (%)",
                    lines(t, "burstiness", &[], "cpu_share", 100.0),
                    false,
                ),
                chart(
                    "FPGA spin-ups (normalised to max)",
                    "burstiness",
                    "spin-ups / max",
                    lines(t, "burstiness", &[], "fpga_spin_ups", 1.0 / max_su),
                    false,
                ),
            ]
        }
        "fig5" => t
            .values("fpga_spin_up_s")
            .into_iter()
            .flat_map(|s| {
                let at = [("fpga_spin_up_s", s)];
                [
                    chart(
                        &format!("{s} s spin-up: energy efficiency"),
                        "burstiness",
                        ee,
                        lines(t, "burstiness", &at, "energy_efficiency", 100.0),
                        false,
                    ),
                    chart(
                        &format!("{s} s spin-up: relative cost"),
                        "burstiness",
                        rc,
                        lines(t, "burstiness", &at, "relative_cost", 1.0),
                        true,
                    ),
                ]
            })
            .collect(),
        "fig6" => t
            .values("fpga_speedup")
            .into_iter()
            .flat_map(|s| {
                let at = [("fpga_speedup", s)];
                [
                    chart(
                        &format!("{s}x speedup: energy efficiency"),
                        "FPGA busy power (W)",
                        ee,
                        lines(t, "fpga_busy_w", &at, "energy_efficiency", 100.0),
                        true,
                    ),
                    chart(
                        &format!("{s}x speedup: relative cost"),
                        "FPGA busy power (W)",
                        rc,
                        lines(t, "fpga_busy_w", &at, "relative_cost", 1.0),
                        true,
                    ),
                ]
            })
            .collect(),
        "fig7" | "table9" => vec![
            chart(
                "energy efficiency by request size",
                "size (0 short, 1 medium, 2 long)",
                ee,
                lines(t, "size", &[], "energy_efficiency", 100.0),
                false,
            ),
            chart(
                "relative cost by request size",
                "size (0 short, 1 medium, 2 long)",
                rc,
                lines(t, "size", &[], "relative_cost", 1.0),
                false,
            ),
        ],
        _ => t
            .values("dataset")
            .into_iter()
            .flat_map(|d| {
                let name = if d == 0.0 { "Azure" } else { "Alibaba" };
                let at = [("dataset", d)];
                [
                    chart(
                        &format!("{name}: energy efficiency"),
                        "size (0 short, 1 medium)",
                        ee,
                        lines(t, "size", &at, "energy_efficiency", 100.0),
                        false,
                    ),
                    chart(
                        &format!("{name}: relative cost"),
                        "size (0 short, 1 medium)",
                        rc,
                        lines(t, "size", &at, "relative_cost", 1.0),
                        false,
                    ),
                ]
            })
            .collect(),
    };
    let cols = if charts.len() > 4 { 4 } else { charts.len().min(2) };
    plot::render(&charts, cols, stem)
}

fn fmt_value(v: f64, percent: bool) -> String {
    if percent { format!("{:.1}%", v * 100.0) } else { format!("{v:.2}x") }
}

fn render_report(opts: &Options, scale: &Scale, s: &Summary, tables: &BTreeMap<String, Table>) -> String {
    let mut r = String::new();
    let _ = writeln!(r, "# Spork: the paper's experiments, reproduced\n");
    let _ = writeln!(
        r,
        "Generated by `spork reproduce{}` (spork {}). {} runs ({} resumed from an earlier invocation, {} failed); \
         this invocation took {:.0} s on {} cores.\n",
        if opts.quick { " --quick" } else { "" },
        env!("CARGO_PKG_VERSION"),
        s.runs,
        s.resumed,
        s.failed.len(),
        s.wall_s,
        std::thread::available_parallelism().map_or(1, |n| n.get()),
    );
    let _ = writeln!(
        r,
        "Scale: {} synthetic trace(s) per point of {:.0} min each, burstiness {:?}; MILP: {} trace(s) per point of {} one-second \
         intervals, pareto energy weights {:?}.{}\n",
        scale.traces,
        crate::model::time::to_secs(scale.duration) / 60.0,
        scale.burstiness,
        scale.milp_traces,
        scale.milp_intervals,
        scale.pareto_weights,
        if opts.quick {
            " Quick runs are smaller than the paper's (10 traces of 2 hours; 1-hour MILPs): expect larger differences."
        } else {
            ""
        }
    );
    let _ = writeln!(
        r,
        "Each experiment folder holds `runs.jsonl` (one line per run), `<id>.csv` and `<id>.json` (points averaged over traces), and `<id>.png` / `<id>.svg`.\n"
    );
    let _ = writeln!(r, "## Qualitative findings\n\n| finding | holds | numbers |\n|---|---|---|");
    for c in &s.checks {
        let _ = writeln!(r, "| {} | {} | {} |", c.finding, if c.holds { "yes" } else { "**no**" }, c.detail);
    }
    let titles = [
        ("fig2", "Figure 2: MILP optimum, hybrid vs homogeneous platforms"),
        ("fig3", "Figure 3: pareto-optimal hybrid schedules"),
        ("fig4", "Figure 4: Spork vs MArk-ideal, 60 s FPGA spin-up"),
        ("fig5", "Figure 5: burstiness x FPGA spin-up"),
        ("fig6", "Figure 6: FPGA speedup x busy power"),
        ("fig7", "Figure 7: request sizes"),
        ("table9", "Table 9: dispatchers under SporkE's allocator"),
        ("table8", "Table 8: production traces"),
    ];
    for (id, title) in titles {
        let _ = writeln!(r, "\n## {title}\n");
        if !tables.contains_key(id) {
            if id == "table8" {
                let _ = writeln!(
                    r,
                    "Not run: the production datasets are not bundled. Download the Azure Functions 2019 trace ({}) and/or the \
                     Alibaba microservices 2021 `MSRTQps` files ({}) and pass `--azure DIR` / `--alibaba DIR`.",
                    crate::trace::production::AZURE_URL,
                    crate::trace::production::ALIBABA_URL
                );
            } else {
                let _ = writeln!(r, "Not run in this invocation (see `--only`).");
            }
            continue;
        }
        let _ = writeln!(r, "Files: `{id}/{id}.csv`, `{id}/{id}.json`, `{id}/{id}.png`, `{id}/{id}.svg`.\n");
        let _ = writeln!(r, "| finding | paper | ours | ours / paper |\n|---|---|---|---|");
        let mut notes = Vec::new();
        for c in s.claims.iter().filter(|c| c.experiment == id) {
            let ours = c.ours.map_or("n/a".to_string(), |v| fmt_value(v, c.percent));
            let ratio = c.ratio().map_or("n/a".to_string(), |v| format!("{v:.2}"));
            let _ =
                writeln!(r, "| {} | {} | {} | {} |", c.finding, fmt_value(c.paper, c.percent), ours, ratio);
            if let Some(q) = c.ratio()
                && (q - 1.0).abs() > 0.15
            {
                notes.push(format!(
                    "- *{}*: ours is {:.0}% {} than the paper's; {}.",
                    c.finding,
                    (q - 1.0).abs() * 100.0,
                    if q > 1.0 { "higher" } else { "lower" },
                    c.cause
                ));
            }
        }
        if !notes.is_empty() {
            let _ = writeln!(r, "\nDifferences over 15%:\n\n{}", notes.join("\n"));
        }
        if id == "table9" && tables.contains_key("table9prod") {
            let _ = writeln!(
                r,
                "\nOn the production traces (`table9prod/`), energy efficiency aggregated over applications:\n"
            );
            let t = &tables["table9prod"];
            let t8 = tables.get("table8");
            let _ = writeln!(
                r,
                "| dataset, size | round robin | index packing | efficient-first |\n|---|---|---|---|"
            );
            for d in t.values("dataset") {
                for z in t.values("size") {
                    let at = [("dataset", d), ("size", z)];
                    let g = |s: &str| {
                        t.get(s, &at, "energy_efficiency")
                            .map_or("n/a".into(), |v| format!("{:.1}%", v * 100.0))
                    };
                    let ef = t8
                        .and_then(|t8| t8.get("SporkE", &at, "energy_efficiency"))
                        .map_or("n/a".into(), |v| format!("{:.1}%", v * 100.0));
                    let _ = writeln!(
                        r,
                        "| {} {} | {} | {} | {} |",
                        if d == 0.0 { "Azure" } else { "Alibaba" },
                        if z == 0.0 { "short" } else { "medium" },
                        g("round-robin"),
                        g("index-packing"),
                        ef
                    );
                }
            }
        }
    }
    if !s.failed.is_empty() {
        let _ = writeln!(r, "\n## Failed runs\n");
        for (k, e) in &s.failed {
            let _ = writeln!(r, "- `{k}`: {e}");
        }
    }
    r
}

/// Points of one experiment from a results folder (for tests and tools).
pub fn load_points(out: &Path, experiment: &str) -> Vec<Point> {
    let path = out.join(experiment).join(format!("{experiment}.json"));
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str::<Vec<serde_json::Value>>(&t).ok())
        .map_or_else(Vec::new, |v| {
            v.into_iter()
                .filter_map(|p| {
                    Some(Point {
                        params: serde_json::from_value(p.get("params")?.clone()).ok()?,
                        series: p.get("series")?.as_str()?.to_string(),
                        runs: p.get("runs")?.as_u64()? as usize,
                        metrics: serde_json::from_value(p.get("metrics")?.clone()).ok()?,
                    })
                })
                .collect()
        })
}
