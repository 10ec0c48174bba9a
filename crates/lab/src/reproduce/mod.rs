//! `spork reproduce`: every experiment of the paper, regenerated into a results folder.
//!
//! Each figure or table is an [`Experiment`](experiment::Experiment) in its own file under
//! [`experiments`]: its independent runs ([`jobs`]), how they combine into points ([`aggregate`]), its
//! plots ([`plot`]), the numbers the paper states ([`claims`]) and the findings CI asserts. The runs
//! are executed in parallel and appended to `<out>/<folder>/runs.jsonl` as they finish ([`sweep`],
//! [`store`]), so an interrupted sweep resumes; points are written as CSV and JSON, drawn as PNG and
//! SVG, and compared with the paper in `REPORT.md` ([`report`]).

pub mod aggregate;
pub mod bundle;
pub mod charts;
pub mod claims;
pub mod experiment;
pub mod experiments;
pub mod jobs;
pub mod metric;
pub mod plot;
pub mod production;
pub mod report;
pub mod store;
pub mod sweep;

use aggregate::Point;
use claims::{Check, Comparison};
use experiment::{Experiment, Inputs, Tables};
use jobs::{Job, Scale};
use production::Sources;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;
use store::Row;

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
    /// Only these experiments (ids of [`experiments::all`]); empty for all.
    pub only: Vec<String>,
    /// Show a progress bar.
    pub progress: bool,
    /// Replay production datasets beyond their work budget ([`production::BUDGET_REQUESTS`]).
    pub force: bool,
    /// Traces per point instead of the scale's (synthetic and MILP alike): a faster, noisier loop.
    pub traces: Option<u32>,
}

/// What a reproduction did.
#[derive(Debug)]
pub struct Summary {
    /// Runs in the plan.
    pub runs: usize,
    /// Runs found already done (resumed).
    pub resumed: usize,
    /// Stored lines not taken on resume (duplicated, edited, corrupt), each run done again.
    pub rejected: Vec<store::Rejected>,
    /// Runs that failed (named in the report).
    pub failed: Vec<(String, String)>,
    /// The paper's numbers beside ours.
    pub claims: Vec<Comparison>,
    /// Qualitative findings.
    pub checks: Vec<Check>,
    /// Wall time of this invocation.
    pub wall_s: f64,
    /// Each run of this invocation with its time (resumed runs are not in it).
    pub timed: Vec<sweep::Timed>,
}

/// A reproduction that could not run at all.
#[derive(Debug, thiserror::Error)]
pub enum ReproduceError {
    /// A dataset could not be read.
    #[error(transparent)]
    Input(#[from] spork_core::input::InputError),
    /// The results folder could not be written.
    #[error(transparent)]
    Store(#[from] store::StoreError),
    /// An output file could not be written.
    #[error("cannot write results: {0}")]
    Output(String),
    /// Experiments named in `--only` replay production traces, and none qualified.
    #[error(
        "{experiments} replay production applications, and {why}\n  fix: {fix}, or leave {experiments} out of --only"
    )]
    NoProduction {
        /// The experiments, comma-separated.
        experiments: String,
        /// What was missing.
        why: &'static str,
        /// What to give.
        fix: &'static str,
    },
    /// An unknown experiment name.
    #[error("unknown experiment '{0}': expected {known}", known = known_ids())]
    Unknown(String),
}

/// "fig2, fig3, ... or table9".
fn known_ids() -> String {
    let ids = experiments::ids();
    match ids.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => ids.join(", "),
    }
}

/// Runs the reproduction.
pub fn run(opts: &Options) -> Result<Summary, ReproduceError> {
    let started = Instant::now();
    let chosen = chosen(&opts.only)?;
    let inputs = inputs(opts, &chosen)?;
    let per: Vec<Vec<Job>> = chosen.iter().map(|e| e.jobs(&inputs)).collect();
    nothing_to_replay(opts, &chosen, &per, &inputs)?;
    let jobs: Vec<Job> = per.into_iter().flatten().collect();
    std::fs::create_dir_all(&opts.out)
        .map_err(|e| ReproduceError::Output(format!("{}: {e}", opts.out.display())))?;
    let outcome = sweep::run(&jobs, &opts.out, opts.progress)?;
    write_timings(&outcome.timed, &opts.out)?;
    let tables = write_tables(&outcome.rows, &opts.out)?;
    let (claims, checks) = compare(&tables);
    let summary = Summary {
        runs: jobs.len(),
        resumed: outcome.resumed,
        rejected: outcome.rejected,
        failed: outcome.failed,
        claims,
        checks,
        wall_s: started.elapsed().as_secs_f64(),
        timed: outcome.timed,
    };
    let how = report::Invocation { quick: opts.quick, scale: &inputs.scale };
    write(&opts.out.join("REPORT.md"), report::render(&how, &summary, &tables))?;
    let json =
        serde_json::json!({ "claims": summary.claims, "checks": summary.checks, "wall_s": summary.wall_s });
    write(&opts.out.join("claims.json"), serde_json::to_string_pretty(&json).unwrap_or_default())?;
    Ok(summary)
}

/// The experiments `--only` names (all when empty), in registry order.
fn chosen(only: &[String]) -> Result<Vec<&'static dyn Experiment>, ReproduceError> {
    if let Some(o) = only.iter().find(|o| experiments::by_id(o).is_none()) {
        return Err(ReproduceError::Unknown(o.clone()));
    }
    Ok(experiments::all()
        .into_iter()
        .filter(|e| only.is_empty() || only.iter().any(|o| o == e.id()))
        .collect())
}

/// Named in --only, a production experiment with no run at all is an error, not an empty table.
fn nothing_to_replay(
    opts: &Options,
    chosen: &[&dyn Experiment],
    per: &[Vec<Job>],
    inputs: &Inputs,
) -> Result<(), ReproduceError> {
    let named: Vec<&str> = chosen
        .iter()
        .zip(per)
        .filter(|(e, jobs)| e.uses_production() && jobs.is_empty() && !opts.only.is_empty())
        .map(|(e, _)| e.id())
        .collect();
    if named.is_empty() {
        return Ok(());
    }
    let (why, fix) = if inputs.production.is_empty() {
        ("no dataset was given", "give --azure DIR (Azure Functions 2019) or --alibaba DIR (Alibaba 2021)")
    } else {
        (
            "no application in the data given qualifies for the paper's selection (heavy applications per size bucket)",
            "give the full dataset (a sample this small has no heavy application)",
        )
    };
    Err(ReproduceError::NoProduction { experiments: named.join(", "), why, fix })
}

/// The scale asked for, and the production datasets if a chosen experiment replays them.
fn inputs(opts: &Options, chosen: &[&dyn Experiment]) -> Result<Inputs, ReproduceError> {
    let mut scale = if opts.quick { Scale::quick() } else { Scale::full() };
    if let Some(n) = opts.traces {
        scale.traces = n;
        scale.milp_traces = n;
    }
    let sources = Sources {
        azure: opts.azure.clone(),
        azure_day: opts.azure_day,
        alibaba: opts.alibaba.clone(),
        force: opts.force,
    };
    let production =
        if chosen.iter().any(|e| e.uses_production()) { sources.load(&scale)? } else { Vec::new() };
    Ok(Inputs { scale, production })
}

/// Combines each folder's rows into points, writes them as CSV and JSON and draws them.
fn write_tables(rows: &HashMap<&'static str, Vec<Row>>, out: &Path) -> Result<Tables, ReproduceError> {
    let mut tables = Tables::default();
    for e in experiments::all() {
        for &folder in e.folders() {
            let Some(rs) = rows.get(folder) else { continue };
            let table = aggregate::Table { points: experiment::points(e, folder, rs) };
            let stem = out.join(folder).join(folder);
            aggregate::write(&table.points, &stem)
                .map_err(|e| ReproduceError::Output(format!("{}: {e}", stem.display())))?;
            let charts = e.charts(folder, &table);
            let cols = if charts.len() > 4 { 4 } else { charts.len().min(2) };
            plot::render(&charts, cols, &stem)
                .map_err(|err| ReproduceError::Output(format!("{}: {err}", stem.display())))?;
            tables.0.insert(folder.to_string(), table);
        }
    }
    Ok(tables)
}

/// The paper's numbers beside ours and the qualitative findings, for every experiment that ran.
fn compare(tables: &Tables) -> (Vec<Comparison>, Vec<Check>) {
    let mut claims = Vec::new();
    let mut checks = Vec::new();
    for e in experiments::all() {
        if let Some(t) = tables.get(e.id()) {
            claims.extend(e.claims().iter().map(|c| c.compare(e.id(), t)));
            checks.extend(e.checks(t));
        }
    }
    claims::link_causes(&mut claims);
    (claims, checks)
}

/// `timings.csv`: each run of this invocation and its seconds on one core (a copy of another
/// experiment's identical run: 0), for finding where a reproduction's time goes.
fn write_timings(timed: &[sweep::Timed], out: &Path) -> Result<(), ReproduceError> {
    let mut text = String::from("folder,run,seconds\n");
    for t in timed {
        text.push_str(&format!("{},\"{}\",{:.3}\n", t.folder, t.key, t.secs));
    }
    write(&out.join("timings.csv"), text)
}

fn write(path: &Path, text: String) -> Result<(), ReproduceError> {
    std::fs::write(path, text).map_err(|e| ReproduceError::Output(format!("{}: {e}", path.display())))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_names_registered_experiments() {
        let ids = |only: &[&str]| {
            let only: Vec<String> = only.iter().map(|s| s.to_string()).collect();
            chosen(&only).map(|c| c.iter().map(|e| e.id()).collect::<Vec<_>>())
        };
        assert_eq!(ids(&[]).unwrap().len(), experiments::all().len());
        assert_eq!(ids(&["table8", "fig3"]).unwrap(), ["fig3", "table8"], "registry order");
        let e = ids(&["fig3", "table9prod"]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown experiment 'table9prod': expected batching, boards, brownout, cus, deadline, fig2, fig3, fig4, fig5, fig6, fig7, gaps, release, sizes, speedup, table8 or table9"
        );
    }
}
