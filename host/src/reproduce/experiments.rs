//! The paper's experiments as lists of independent runs.

use super::store::{Row, run_key};
use crate::evaluate::{Plan, Report, evaluate};
use crate::model::{Platform, Time, time::from_secs};
use crate::optimal::{MilpSpec, solve};
use crate::policy::{DispatcherKind, Fleet, Objective, Scheduler};
use crate::trace::bmodel::bmodel;
use crate::trace::{RateTrace, SizeSpec, Synthetic};
use rand::{SeedableRng, rngs::Xoshiro256PlusPlus};
use std::collections::BTreeMap;
use std::sync::Arc;

/// How big a reproduction is.
#[derive(Clone, Debug)]
pub struct Scale {
    /// Synthetic traces per point.
    pub traces: u32,
    /// Length of each synthetic trace.
    pub duration: Time,
    /// Burstiness levels swept.
    pub burstiness: Vec<f64>,
    /// FPGA spin-up times (s) swept in Figure 5.
    pub spin_ups: Vec<f64>,
    /// Traces per MILP point.
    pub milp_traces: u32,
    /// One-second intervals per MILP trace.
    pub milp_intervals: usize,
    /// MILP time limit per solve, in seconds.
    pub milp_time_limit_s: f64,
    /// Energy weights of the pareto curves (Figure 3).
    pub pareto_weights: Vec<f64>,
    /// Minutes of each production application replayed.
    pub production_minutes: usize,
}

impl Scale {
    /// The paper's sizes: 10 traces per point, 2-hour traces, 1-hour MILP traces.
    pub fn full() -> Self {
        Scale {
            traces: 10,
            duration: from_secs(7200.0),
            burstiness: vec![0.5, 0.55, 0.6, 0.65, 0.7, 0.75],
            spin_ups: vec![1.0, 10.0, 60.0, 100.0],
            milp_traces: 10,
            milp_intervals: 3600,
            milp_time_limit_s: 120.0,
            pareto_weights: vec![0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0],
            production_minutes: 120,
        }
    }

    /// A few minutes on 2 cores: 2 traces of 1 hour, 3 burstiness levels, 10-minute MILPs.
    pub fn quick() -> Self {
        Scale {
            traces: 2,
            duration: from_secs(3600.0),
            burstiness: vec![0.5, 0.6, 0.75],
            spin_ups: vec![1.0, 10.0, 60.0, 100.0],
            milp_traces: 2,
            milp_intervals: 600,
            milp_time_limit_s: 30.0,
            pareto_weights: vec![0.0, 0.5, 1.0],
            production_minutes: 30,
        }
    }
}

/// What one run does.
#[derive(Clone, Debug)]
pub enum Work {
    /// Evaluate a scheduler on a trace.
    Sim {
        /// Worker figures.
        platform: Platform,
        /// The trace.
        trace: TraceSource,
        /// The scheduler.
        scheduler: Scheduler,
        /// Dispatcher override.
        dispatcher: Option<DispatcherKind>,
    },
    /// Solve the MILP on b-model per-second load.
    Milp {
        /// The model.
        spec: MilpSpec,
        /// b-model bias of the load.
        burstiness: f64,
        /// Intervals.
        intervals: usize,
        /// Seed of the load.
        seed: u64,
    },
}

/// Where a simulated run's trace comes from.
#[derive(Clone, Debug)]
pub enum TraceSource {
    /// Generated from parameters.
    Synthetic(Synthetic),
    /// A production application's window.
    Production(Arc<RateTrace>),
}

/// One run and where its row goes.
#[derive(Clone, Debug)]
pub struct Job {
    /// Experiment id.
    pub experiment: &'static str,
    /// Sweep parameters.
    pub params: BTreeMap<String, f64>,
    /// Trace index.
    pub trace: u32,
    /// Series label.
    pub series: String,
    /// The run.
    pub work: Work,
}

impl Job {
    /// Identity for resuming.
    pub fn key(&self) -> String {
        run_key(&self.params, self.trace, &self.series)
    }

    /// Runs it.
    pub fn run(&self) -> Result<Row, String> {
        let metrics = match &self.work {
            Work::Sim { platform, trace, scheduler, dispatcher } => {
                let plan = Plan { dispatcher: *dispatcher, ..Plan::new(*scheduler) };
                let report = match trace {
                    TraceSource::Synthetic(s) => {
                        let t = s.generate().map_err(|e| e.to_string())?;
                        evaluate(platform, &t, &plan)
                    }
                    TraceSource::Production(t) => evaluate(platform, t.as_ref(), &plan),
                };
                sim_metrics(&report)
            }
            Work::Milp { spec, burstiness, intervals, seed } => {
                let load = bmodel_load(*burstiness, *intervals, 100.0, *seed);
                let s = solve(spec, &load).map_err(|e| e.to_string())?;
                BTreeMap::from([
                    ("energy_efficiency".into(), s.energy_efficiency),
                    ("relative_cost".into(), s.relative_cost),
                    ("energy_j".into(), s.energy_j),
                    ("cost".into(), s.cost),
                    ("cpu_work_share".into(), s.cpu_work_share),
                    ("gap".into(), s.gap),
                    ("optimal".into(), f64::from(u8::from(s.optimal))),
                    ("solve_s".into(), s.solve_s),
                ])
            }
        };
        Ok(Row {
            experiment: self.experiment.to_string(),
            params: self.params.clone(),
            trace: self.trace,
            series: self.series.clone(),
            metrics,
        })
    }
}

fn sim_metrics(r: &Report) -> BTreeMap<String, f64> {
    let fpga_total = r.fpga.energy.total_j();
    let idle = r.cpu.energy.idle_j + r.fpga.energy.idle_j;
    BTreeMap::from([
        ("energy_efficiency".into(), r.energy_efficiency),
        ("relative_cost".into(), r.relative_cost),
        ("cpu_share".into(), r.cpu_share),
        ("fpga_spin_ups".into(), r.fpga.spin_ups as f64),
        ("miss_share".into(), r.miss_share),
        ("energy_j".into(), r.energy_j),
        ("cost".into(), r.cost),
        ("ideal_energy_j".into(), r.ideal_energy_j),
        ("ideal_cost".into(), r.ideal_cost),
        ("idle_share".into(), if r.energy_j > 0.0 { idle / r.energy_j } else { 0.0 }),
        ("fpga_idle_share".into(), if fpga_total > 0.0 { r.fpga.energy.idle_j / fpga_total } else { 0.0 }),
        ("requests".into(), r.requests as f64),
        ("p99_ms".into(), r.latency.p99_ms),
        ("headroom".into(), r.headroom.map_or(f64::NAN, f64::from)),
    ])
    .into_iter()
    .filter(|(_, v)| v.is_finite()) // JSON has no NaN: an absent figure is left out
    .collect()
}

/// Per-interval load in CPU workers from the b-model: `intervals` one-second bins with mean `mean`
/// (section 3.2: 10,000 req/s of 10 ms requests is 100 workers).
pub fn bmodel_load(burstiness: f64, intervals: usize, mean: f64, seed: u64) -> Vec<f64> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x3417_0000);
    let levels = (intervals.max(1) as f64).log2().ceil() as u32;
    let mut bins = bmodel(1 << 52, burstiness, levels, &mut rng);
    bins.truncate(intervals);
    let avg = bins.iter().map(|&b| b as f64).sum::<f64>() / intervals.max(1) as f64;
    bins.iter().map(|&b| if avg > 0.0 { b as f64 / avg * mean } else { mean }).collect()
}

/// A simulation run of `scheduler` (with its own dispatcher unless `dispatcher`) on `trace`.
fn sim(
    experiment: &'static str,
    at: &[(&str, f64)],
    trace: u32,
    platform: Platform,
    source: TraceSource,
    scheduler: Scheduler,
    dispatcher: Option<DispatcherKind>,
) -> Job {
    let series = dispatcher.map_or_else(|| scheduler.to_string(), |d| d.name().to_string());
    Job {
        experiment,
        params: params(at),
        trace,
        series,
        work: Work::Sim { platform, trace: source, scheduler, dispatcher },
    }
}

fn params(kv: &[(&str, f64)]) -> BTreeMap<String, f64> {
    kv.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

fn synthetic(scale: &Scale, burstiness: f64, size: SizeSpec, trace: u32) -> TraceSource {
    TraceSource::Synthetic(Synthetic {
        burstiness,
        duration: scale.duration,
        size,
        workers: 100.0,
        seed: u64::from(trace) + 1,
        optional_factor: 0.0,
    })
}

/// Size buckets as sweep values.
pub const SIZES: [(SizeSpec, &str); 3] =
    [(SizeSpec::Short, "short"), (SizeSpec::Medium, "medium"), (SizeSpec::Long, "long")];

/// The three dispatchers of Table 9.
pub const DISPATCHERS: [DispatcherKind; 3] =
    [DispatcherKind::EfficientFirst, DispatcherKind::RoundRobin, DispatcherKind::IndexPacking];

/// The four schedulers of the sensitivity figures.
pub const SENSITIVITY: [Scheduler; 4] = [
    Scheduler::CpuDynamic,
    Scheduler::FpgaStatic,
    Scheduler::FpgaDynamic,
    Scheduler::Spork(Objective::ENERGY),
];

/// Figures 2 and 3: MILP optima on per-second b-model load.
pub fn milp_jobs(scale: &Scale) -> Vec<Job> {
    let mut jobs = Vec::new();
    let spec = |fleet, objective| MilpSpec {
        platform: Platform::default(),
        fleet,
        objective,
        interval_s: 1.0,
        time_limit_s: scale.milp_time_limit_s,
        mip_rel_gap: 1e-4,
    };
    for &b in &scale.burstiness {
        for trace in 0..scale.milp_traces {
            let seed = u64::from(trace) + 1;
            let work = |fleet, objective| Work::Milp {
                spec: spec(fleet, objective),
                burstiness: b,
                intervals: scale.milp_intervals,
                seed,
            };
            for (fleet, fname) in
                [(Fleet::CPU_ONLY, "cpu-only"), (Fleet::FPGA_ONLY, "fpga-only"), (Fleet::HYBRID, "hybrid")]
            {
                for (objective, oname) in [(Objective::ENERGY, "energy"), (Objective::COST, "cost")] {
                    jobs.push(Job {
                        experiment: "fig2",
                        params: params(&[("burstiness", b)]),
                        trace,
                        series: format!("{fname}/{oname}"),
                        work: work(fleet, objective),
                    });
                }
            }
            for &w in &scale.pareto_weights {
                let Some(objective) = Objective::weighted(w) else { continue };
                jobs.push(Job {
                    experiment: "fig3",
                    params: params(&[("burstiness", b), ("energy_weight", w)]),
                    trace,
                    series: format!("b={b}"),
                    work: work(Fleet::HYBRID, objective),
                });
            }
        }
    }
    jobs
}

/// Figure 4: Spork variants against MArk-ideal with a 60 s FPGA spin-up.
pub fn fig4_jobs(scale: &Scale) -> Vec<Job> {
    let mut platform = Platform::default();
    platform.fpga.spin_up = from_secs(60.0);
    // MArk-ideal and the five Spork variants: the paper's list from MArk-ideal on.
    let schedulers = &Scheduler::PAPER[3..];
    let mut jobs = Vec::new();
    for &b in &scale.burstiness {
        for trace in 0..scale.traces {
            for &s in schedulers {
                let source = synthetic(scale, b, SizeSpec::Short, trace);
                jobs.push(sim("fig4", &[("burstiness", b)], trace, platform, source, s, None));
            }
        }
    }
    jobs
}

/// Figure 5: burstiness x FPGA spin-up.
pub fn fig5_jobs(scale: &Scale) -> Vec<Job> {
    let mut jobs = Vec::new();
    for &spin in &scale.spin_ups {
        let mut platform = Platform::default();
        platform.fpga.spin_up = from_secs(spin);
        for &b in &scale.burstiness {
            for trace in 0..scale.traces {
                for s in SENSITIVITY {
                    let source = synthetic(scale, b, SizeSpec::Short, trace);
                    let at = [("burstiness", b), ("fpga_spin_up_s", spin)];
                    jobs.push(sim("fig5", &at, trace, platform, source, s, None));
                }
            }
        }
    }
    jobs
}

/// Figure 6: FPGA speedup x busy power at burstiness 0.6.
pub fn fig6_jobs(scale: &Scale) -> Vec<Job> {
    let mut jobs = Vec::new();
    for speedup in [1.0, 2.0, 4.0] {
        for busy in [25.0, 50.0, 100.0] {
            let mut platform = Platform::default();
            platform.fpga.speedup = speedup;
            platform.fpga.busy_power_w = busy;
            for trace in 0..scale.traces {
                for s in SENSITIVITY {
                    let source = synthetic(scale, 0.6, SizeSpec::Short, trace);
                    let at = [("fpga_speedup", speedup), ("fpga_busy_w", busy)];
                    jobs.push(sim("fig6", &at, trace, platform, source, s, None));
                }
            }
        }
    }
    jobs
}

/// Figure 7 and Table 9: request-size buckets (size index 0 short, 1 medium, 2 long).
pub fn size_jobs(scale: &Scale) -> Vec<Job> {
    let mut jobs = Vec::new();
    let platform = Platform::default();
    for (i, (size, _)) in SIZES.iter().enumerate() {
        let at = [("size", i as f64)];
        for trace in 0..scale.traces {
            let source = synthetic(scale, 0.6, *size, trace);
            for s in SENSITIVITY {
                jobs.push(sim("fig7", &at, trace, platform, source.clone(), s, None));
            }
            for d in DISPATCHERS {
                let spork_e = Scheduler::Spork(Objective::ENERGY);
                jobs.push(sim("table9", &at, trace, platform, source.clone(), spork_e, Some(d)));
            }
        }
    }
    jobs
}

/// Table 8 (and Table 9 on production traces): every selected application of a dataset under the nine
/// schedulers and, for SporkE, the three dispatchers. `dataset` is 0 for Azure, 1 for Alibaba.
pub fn production_jobs(dataset: u32, apps: &[(usize, Vec<(String, RateTrace)>)]) -> Vec<Job> {
    let mut jobs = Vec::new();
    let platform = Platform::default();
    for (size_index, selected) in apps {
        let at = [("dataset", f64::from(dataset)), ("size", *size_index as f64)];
        for (i, (_, t)) in selected.iter().enumerate() {
            let source = TraceSource::Production(Arc::new(t.clone()));
            let trace = i as u32;
            for s in Scheduler::PAPER {
                jobs.push(sim("table8", &at, trace, platform, source.clone(), s, None));
            }
            // SporkE with efficient-first is table8's SporkE row; the other two dispatchers go here.
            for d in [DispatcherKind::RoundRobin, DispatcherKind::IndexPacking] {
                let spork_e = Scheduler::Spork(Objective::ENERGY);
                jobs.push(sim("table9prod", &at, trace, platform, source.clone(), spork_e, Some(d)));
            }
        }
    }
    jobs
}
