//! Runs that share a synthetic trace, run together: the trace's requests are drawn once for all of
//! them (most of the paper's figures evaluate several schedulers, platforms and experiments on the
//! same ten traces); a run that two experiments list is done once (Figure 3's end points are Figure
//! 2's hybrid optima, Figure 6's middle column is Figure 5's 10 s column); and each headroom search
//! starts at the headroom the last like run on the trace found (FPGA-static and FPGA-dynamic across
//! spin-up times, speedups and powers), which settles it in two replays where a search from zero
//! takes a dozen. Every row is the one the run gives alone.

use super::jobs::{Job, TraceSource, Work};
use super::store::Row;
use crate::evaluate::Recorded;
use spork_core::trace::Synthetic;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Jobs with one outcome (identical work listed by more than one experiment, a CPU-only pool at
/// several FPGA figures, a baseline at several powers: [`Work::outcome_key`]): run once, a row for
/// each.
struct Same<'a> {
    jobs: Vec<&'a Job>,
}

/// The runs of one synthetic trace, or one run of anything else.
pub struct Bundle<'a> {
    /// The trace its runs share, drawn once.
    trace: Option<&'a Synthetic>,
    /// Runs one after another within a chain (each headroom search started at the last one's),
    /// chains in parallel.
    chains: Vec<Vec<Same<'a>>>,
    /// Rough cost of each chain, and of them all, for running the longest first.
    chain_cost: Vec<u64>,
    cost: u64,
}

/// A finished job: its row or error, and the seconds its run took (0 for a copy of another's).
pub type Done<'a> = (&'a Job, Result<Row, String>, f64);

/// The bundles of `jobs`, chains in the jobs' order (so a sweep's hints, and its rows, do not depend
/// on which thread finishes first); `cost` prices a job.
pub fn bundles<'a>(jobs: &[&'a Job], cost: impl Fn(&Job) -> u64) -> Vec<Bundle<'a>> {
    let mut out: Vec<Bundle<'a>> = Vec::new();
    let mut by_trace: HashMap<String, usize> = HashMap::new();
    // Per bundle (by index in `out`): the chain of each chain key, and the run of each work.
    let mut chains: Vec<HashMap<String, usize>> = Vec::new();
    let mut works: Vec<HashMap<String, (usize, usize)>> = Vec::new();
    // Runs of no synthetic trace (MILP solves, brownout, shared boards) by their work.
    let mut lone: HashMap<String, usize> = HashMap::new();
    for &j in jobs {
        let Some(trace) = synthetic(j) else {
            let work = (!replays_production(j)).then(|| format!("{:?}", j.work));
            if let Some(&b) = work.as_ref().and_then(|w| lone.get(w)) {
                out[b].chains[0][0].jobs.push(j);
                continue;
            }
            if let Some(w) = work {
                lone.insert(w, out.len());
            }
            let chain = vec![Same { jobs: vec![j] }];
            out.push(Bundle { trace: None, chains: vec![chain], chain_cost: vec![cost(j)], cost: cost(j) });
            chains.push(HashMap::new());
            works.push(HashMap::new());
            continue;
        };
        let b = *by_trace.entry(format!("{trace:?}")).or_insert_with(|| {
            out.push(Bundle { trace: Some(trace), chains: Vec::new(), chain_cost: Vec::new(), cost: 0 });
            chains.push(HashMap::new());
            works.push(HashMap::new());
            out.len() - 1
        });
        let work = j.work.outcome_key();
        if let Some(&(c, i)) = works[b].get(&work) {
            out[b].chains[c][i].jobs.push(j);
            continue;
        }
        let c = match chain_key(j) {
            Some(k) => *chains[b].entry(k).or_insert_with(|| {
                out[b].chains.push(Vec::new());
                out[b].chain_cost.push(0);
                out[b].chains.len() - 1
            }),
            None => {
                out[b].chains.push(Vec::new());
                out[b].chain_cost.push(0);
                out[b].chains.len() - 1
            }
        };
        works[b].insert(work, (c, out[b].chains[c].len()));
        out[b].chains[c].push(Same { jobs: vec![j] });
        out[b].chain_cost[c] += cost(j);
        out[b].cost += cost(j);
    }
    out
}

/// Whether a run replays a production trace (whose description is the whole trace: never compared).
fn replays_production(j: &Job) -> bool {
    match &j.work {
        Work::Sim { trace, .. } => matches!(trace, TraceSource::Production(_)),
        Work::Shared { apps, .. } => apps.iter().any(|a| matches!(a, TraceSource::Production(_))),
        Work::Milp { .. } | Work::Brownout { .. } => false,
    }
}

/// The synthetic trace a simulated run replays.
fn synthetic(j: &Job) -> Option<&Synthetic> {
    match &j.work {
        Work::Sim { trace: TraceSource::Synthetic(s), .. } => Some(s),
        _ => None,
    }
}

/// Runs whose headroom searches inform each other: the same scheduler (one that searches) with the
/// same dispatcher, size knowledge, board cap and batching; the platform and release timing may differ.
fn chain_key(j: &Job) -> Option<String> {
    match &j.work {
        Work::Sim { scheduler, dispatcher, sizes, fpga_boards, batching, .. }
            if scheduler.searches_headroom() =>
        {
            Some(format!("{scheduler:?}|{dispatcher:?}|{sizes:?}|{fpga_boards:?}|{batching:?}"))
        }
        _ => None,
    }
}

/// A bundle's trace while its chains run: drawn by the first chain to start, dropped when the last
/// one ends (so only the bundles in progress hold their requests in memory).
#[derive(Default)]
struct Slot {
    recorded: Mutex<Option<Arc<Result<Recorded, String>>>>,
    left: AtomicUsize,
}

impl Slot {
    /// The trace's requests, drawn now if no chain of the bundle drew them yet.
    fn recorded(&self, trace: &Synthetic) -> Arc<Result<Recorded, String>> {
        let mut r = self.recorded.lock().unwrap_or_else(|e| e.into_inner());
        r.get_or_insert_with(|| {
            Arc::new(trace.generate().map(|t| Recorded::of(&t)).map_err(|e| e.to_string()))
        })
        .clone()
    }

    /// One chain done; the last one frees the trace.
    fn chain_done(&self) {
        if self.left.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.recorded.lock().unwrap_or_else(|e| e.into_inner()).take();
        }
    }
}

/// Runs every bundle on `threads` threads, calling `each` as every job finishes. Chains are taken
/// from one queue, bundle by bundle (costliest bundle first, its costliest chains first): the long
/// runs start early so the sweep's tail stays short, and only the bundles being worked on hold
/// their trace.
pub fn run_all<'a>(
    bundles: &[Bundle<'a>],
    threads: usize,
    each: &(dyn Fn(&Done<'a>) + Sync),
) -> Vec<Done<'a>> {
    let slots: Vec<Slot> =
        bundles.iter().map(|b| Slot { left: AtomicUsize::new(b.chains.len()), ..Slot::default() }).collect();
    let mut order: Vec<usize> = (0..bundles.len()).collect();
    order.sort_by_key(|&b| std::cmp::Reverse(bundles[b].cost));
    let tasks = order.into_iter().flat_map(|b| {
        let mut chains: Vec<usize> = (0..bundles[b].chains.len()).collect();
        chains.sort_by_key(|&c| std::cmp::Reverse(bundles[b].chain_cost[c]));
        chains.into_iter().map(move |c| (b, c))
    });
    let queue = Mutex::new(tasks);
    let done = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| {
                loop {
                    let next = queue.lock().unwrap_or_else(|e| e.into_inner()).next();
                    let Some((b, c)) = next else { break };
                    let recorded = bundles[b].trace.map(|t| slots[b].recorded(t));
                    let chain = &bundles[b].chains[c];
                    let finished = match recorded.as_deref() {
                        Some(Err(e)) => failed(chain, e, each),
                        Some(Ok(r)) => run_chain(chain, Some(r), each),
                        None => run_chain(chain, None, each),
                    };
                    slots[b].chain_done();
                    done.lock().unwrap_or_else(|e| e.into_inner()).extend(finished);
                }
            });
        }
    });
    done.into_inner().unwrap_or_else(|e| e.into_inner())
}

/// Every job of a chain whose trace could not be drawn, failed with the reason.
fn failed<'a>(chain: &[Same<'a>], why: &str, each: &(dyn Fn(&Done<'a>) + Sync)) -> Vec<Done<'a>> {
    let all = chain.iter().flat_map(|s| &s.jobs);
    all.map(|&j| (j, Err(why.to_string()), 0.0)).inspect(each).collect()
}

/// A chain's runs in order, each search started near where the one before found its headroom.
fn run_chain<'a>(
    chain: &[Same<'a>],
    recorded: Option<&Recorded>,
    each: &(dyn Fn(&Done<'a>) + Sync),
) -> Vec<Done<'a>> {
    let mut hint = None;
    let mut done = Vec::new();
    for same in chain {
        let started = Instant::now();
        let first = same.jobs[0];
        let result = first.run_on(recorded, &mut hint);
        let secs = started.elapsed().as_secs_f64();
        for (i, &j) in same.jobs.iter().enumerate() {
            let r = result.as_ref().map(|(row, run)| {
                // The same outcome on another platform: its own report of the run.
                let own =
                    run.as_ref().filter(|_| i > 0 && format!("{:?}", j.work) != format!("{:?}", first.work));
                let metrics =
                    own.and_then(|run| j.row_of(run)).map_or_else(|| row.metrics.clone(), |r| r.metrics);
                Row {
                    experiment: j.folder.to_string(),
                    params: j.params.clone(),
                    trace: j.trace,
                    series: j.series.clone(),
                    metrics,
                }
            });
            let d = (j, r.map_err(Clone::clone), if i == 0 { secs } else { 0.0 });
            each(&d);
            done.push(d);
        }
    }
    done
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reproduce::jobs::{Scale, sim, synthetic};
    use crate::reproduce::metric::Metric;
    use spork_core::model::{Platform, time::from_secs};
    use spork_core::policy::{Objective, Scheduler};
    use spork_core::trace::SizeSpec;

    /// Two traces; on each, SporkE, FPGA-static and CPU-dynamic at two spin-ups, SporkE listed again
    /// by a second folder (the same run), and CPU-dynamic, FPGA-static and SporkE beside 25 W boards:
    /// CPU-dynamic's runs are one outcome, reported on three platforms; FPGA-static's at 10 s one,
    /// reported on two (its pool is sized by load and deadlines); SporkE's another run (its allocator
    /// weighs power).
    fn jobs() -> Vec<Job> {
        let scale = Scale { duration: from_secs(600.0), ..Scale::quick() };
        let mut jobs = Vec::new();
        for trace in 0..2 {
            for spin in [1.0, 10.0] {
                let mut platform = Platform::default();
                platform.fpga.spin_up = from_secs(spin);
                for s in [Scheduler::Spork(Objective::ENERGY), Scheduler::FpgaStatic, Scheduler::CpuDynamic] {
                    let source = synthetic(&scale, 0.7, SizeSpec::Short, trace);
                    jobs.push(sim("a", &[("spin", spin)], trace, platform, source, s, None));
                }
            }
            let source = synthetic(&scale, 0.7, SizeSpec::Short, trace);
            let mut platform = Platform::default();
            platform.fpga.spin_up = from_secs(10.0);
            let again =
                sim("b", &[("x", 1.0)], trace, platform, source, Scheduler::Spork(Objective::ENERGY), None);
            jobs.push(again);
            // CPU-dynamic beside boards of another power: the same outcome, reported on this platform.
            platform.fpga.busy_power_w = 25.0;
            for s in [Scheduler::CpuDynamic, Scheduler::FpgaStatic, Scheduler::Spork(Objective::ENERGY)] {
                let source = synthetic(&scale, 0.7, SizeSpec::Short, trace);
                jobs.push(sim("c", &[("w", 25.0)], trace, platform, source, s, None));
            }
        }
        jobs
    }

    #[test]
    fn runs_sharing_a_trace_are_bundled_searches_chained_and_identical_runs_done_once() {
        let jobs = jobs();
        let refs: Vec<&Job> = jobs.iter().collect();
        let b = bundles(&refs, |_| 1);
        assert_eq!(b.len(), 2, "one bundle per trace");
        for bundle in &b {
            // SporkE at 1 s, one chain of FPGA-static (at 10 s for both powers), CPU-dynamic once for
            // its three platforms, SporkE at 10 s (with folder b's copy), and SporkE at 25 W.
            let shapes: Vec<Vec<usize>> =
                bundle.chains.iter().map(|c| c.iter().map(|s| s.jobs.len()).collect()).collect();
            assert_eq!(shapes, [vec![1], vec![1, 2], vec![3], vec![2], vec![1]]);
            assert_eq!(bundle.cost, 6, "a copy costs nothing");
        }
    }

    #[test]
    fn a_bundled_sweep_gives_every_job_the_row_it_gives_alone() {
        let jobs = jobs();
        let refs: Vec<&Job> = jobs.iter().collect();
        let seen = AtomicUsize::new(0);
        let each = |_: &Done| {
            seen.fetch_add(1, Ordering::Relaxed);
        };
        let done = run_all(&bundles(&refs, |_| 1), 2, &each);
        assert_eq!((done.len(), seen.load(Ordering::Relaxed)), (jobs.len(), jobs.len()));
        let mut searched = 0;
        for (j, row, _) in &done {
            let row = row.as_ref().expect("runs");
            assert_eq!(row, &j.run().expect("runs alone"), "{} {}", j.folder, j.key());
            searched += usize::from(row.metrics.contains_key(Metric::Headroom.key()));
        }
        assert_eq!(searched, 6, "FPGA-static's headroom on both traces at both spin-ups, and at 25 W");
    }
}
