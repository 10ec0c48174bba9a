//! Runs a list of jobs in parallel, each row appended to its folder's `runs.jsonl` as it finishes, and
//! skips the runs a folder already holds, so an interrupted sweep resumes where it stopped.

use super::bundle;
use super::jobs::{Job, Work};
use super::store::{Rejected, Row, Store, StoreError};
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// What a sweep leaves: every row by results folder, earlier ones first.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Rows of each folder that had a job, including rows of earlier invocations.
    pub rows: HashMap<&'static str, Vec<Row>>,
    /// Jobs found already done.
    pub resumed: usize,
    /// Jobs that failed: ("<folder> <run key>", error).
    pub failed: Vec<(String, String)>,
    /// Stored lines not taken (duplicated, edited, corrupt): their runs were done again.
    pub rejected: Vec<Rejected>,
    /// How long each run of this invocation took, by folder, for the report's account of the time.
    pub timed: Vec<Timed>,
}

/// One run of this invocation and its wall time on one core.
#[derive(Clone, Debug)]
pub struct Timed {
    /// Results folder.
    pub folder: &'static str,
    /// The run's key.
    pub key: String,
    /// Seconds it took.
    pub secs: f64,
}

/// Runs the `jobs` not yet recorded under `out`, in parallel; a progress bar when `progress`.
pub fn run(jobs: &[Job], out: &Path, progress: bool) -> Result<Outcome, StoreError> {
    let (stores, mut rows, rejected) = open(jobs, out)?;
    let done: HashSet<(&str, String)> =
        rows.iter().flat_map(|(f, rs)| rs.iter().map(move |r| (*f, r.key()))).collect();
    let pending: Vec<&Job> = jobs.iter().filter(|j| !done.contains(&(j.folder, j.key()))).collect();
    let resumed = jobs.len() - pending.len();
    let bundles = bundle::bundles(&pending, cost_hint);
    let bar = bar(progress, pending.len());
    let each = |(j, r, _): &bundle::Done| {
        if let Ok(row) = r
            && let Some(s) = stores.get(j.folder)
            && let Err(e) = s.append(row)
        {
            bar.println(format!("warning: {e}"));
        }
        bar.inc(1);
        bar.set_message(j.folder);
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let results = bundle::run_all(&bundles, threads, &each);
    bar.finish_and_clear();
    let mut failed = Vec::new();
    let mut timed = Vec::new();
    for (j, r, secs) in results {
        timed.push(Timed { folder: j.folder, key: j.key(), secs });
        match r {
            Ok(row) => rows.entry(j.folder).or_default().push(row),
            Err(msg) => failed.push((format!("{} {}", j.folder, j.key()), msg)),
        }
    }
    Ok(Outcome { rows, resumed, failed, rejected, timed })
}

type Opened = (HashMap<&'static str, Store>, HashMap<&'static str, Vec<Row>>, Vec<Rejected>);

/// One store per folder the jobs write, with the rows it already holds and the lines it did not take.
fn open(jobs: &[Job], out: &Path) -> Result<Opened, StoreError> {
    let (mut stores, mut rows, mut rejected) = (HashMap::new(), HashMap::new(), Vec::new());
    for j in jobs {
        if !stores.contains_key(j.folder) {
            let o = Store::open(&out.join(j.folder).join("runs.jsonl"))?;
            stores.insert(j.folder, o.store);
            rows.insert(j.folder, o.rows);
            rejected.extend(o.rejected);
        }
    }
    Ok((stores, rows, rejected))
}

fn bar(progress: bool, len: usize) -> ProgressBar {
    let bar = if progress { ProgressBar::new(len as u64) } else { ProgressBar::hidden() };
    bar.set_style(
        ProgressStyle::with_template(
            "{elapsed_precise} [{bar:40}] {pos}/{len} runs, ETA {eta_precise} {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar
}

/// Rough relative duration of a job, for ordering.
fn cost_hint(j: &Job) -> u64 {
    match &j.work {
        Work::Milp { intervals, .. } => *intervals as u64 * 10,
        // One server, tens of requests a second.
        Work::Brownout { .. } => 10,
        // Three applications' traces in one run.
        Work::Shared { apps, .. } => apps.len() as u64 * 1000,
        Work::Sim { scheduler, .. } => {
            if scheduler.searches_headroom() {
                6000
            } else {
                1000
            }
        }
    }
}
