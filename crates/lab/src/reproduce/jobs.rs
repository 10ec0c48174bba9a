//! One independent run of an experiment (a simulation or a MILP solve), the sizes of a sweep, and
//! the building blocks the experiments share to list their runs.

use super::metric::Metric;
use super::store::{Row, run_key};
use crate::evaluate::brownout;
use crate::evaluate::{Plan, Recorded, Report, Run, evaluate_shared, run_near};
use crate::optimal::{MilpSpec, solve};
use rand::{SeedableRng, rngs::Xoshiro256PlusPlus};
use spork_core::engine::Hint;
use spork_core::model::{PerKind, Platform, Time, time::from_secs};
use spork_core::policy::arbitrate::Sharing;
use spork_core::policy::batching::Batching;
use spork_core::policy::brownout::ControllerKind;
use spork_core::policy::estimate::Statistic;
use spork_core::policy::release::ReleaseTiming;
use spork_core::policy::{Caps, DispatcherKind, Objective, Scheduler};
use spork_core::trace::bmodel::bmodel;
use spork_core::trace::{RateTrace, SizeSpec, Synthetic};
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
    /// Seeds per point of the brownout experiment.
    pub brownout_seeds: u32,
    /// Length of each brownout run.
    pub brownout_duration: Time,
}

impl Scale {
    /// The paper's sizes: 10 traces per point, 2-hour traces, 1-hour MILP traces; brownout as the
    /// reference table of docs/brownout.md (5 seeds of 20 minutes).
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
            brownout_seeds: 5,
            brownout_duration: from_secs(1200.0),
        }
    }

    /// A few minutes on 2 cores: 2 traces of 1 hour, 3 burstiness levels, 10-minute MILPs, brownout
    /// runs of 3 minutes (the first three rate steps: the overload and its end).
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
            brownout_seeds: 2,
            brownout_duration: from_secs(180.0),
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
        /// Unknown sizes: dispatch at this estimate (`None`: sizes known).
        sizes: Option<Statistic>,
        /// When surplus FPGAs may start their idle countdown.
        release: ReleaseTiming,
        /// Most boards the pool may hold (`None`: as many as its allocator wants).
        fpga_boards: Option<u32>,
        /// Dynamic batching (`None`: the paper's one job per request).
        batching: Option<Batching>,
    },
    /// Several applications, a pool each, sharing boards (beyond the paper: scarce boards).
    Shared {
        /// Worker figures.
        platform: Platform,
        /// One trace per application.
        apps: Vec<TraceSource>,
        /// Every pool's scheduler.
        scheduler: Scheduler,
        /// Boards shared (`None`: as many as the pools want).
        boards: Option<u32>,
        /// How they are shared.
        sharing: Sharing,
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
    /// One brownout controller on the brownout papers' reference scenario (one processor-sharing
    /// server, [`brownout::Scenario`]).
    Brownout {
        /// The scenario.
        scenario: brownout::Scenario,
        /// The controller.
        controller: ControllerKind,
        /// Seed of the arrivals, service times and dimmer draws.
        seed: u64,
    },
}

impl Work {
    /// A simulation's plan; `None` for other work.
    fn plan(&self) -> Option<Plan> {
        let Work::Sim { scheduler, dispatcher, sizes, release, fpga_boards, batching, .. } = self else {
            return None;
        };
        Some(Plan {
            batching: *batching,
            dispatcher: *dispatcher,
            sizes: *sizes,
            release: *release,
            caps: Caps(PerKind::new(None, *fpga_boards)),
            ..Plan::new(*scheduler)
        })
    }

    /// What identifies its outcome: the work, a simulation's platform reduced to what its scheduler
    /// depends on ([`Scheduler::outcome_platform`]). Works with one key run once.
    pub fn outcome_key(&self) -> String {
        let mut w = self.clone();
        if let Work::Sim { platform, scheduler, dispatcher, .. } = &mut w {
            let dispatcher = dispatcher.unwrap_or_else(|| scheduler.default_dispatcher());
            *platform = scheduler.outcome_platform(platform, dispatcher);
        }
        format!("{w:?}")
    }

    /// The metrics its row can hold (a simulation leaves out the ones it has no value for).
    pub fn metrics(&self) -> &'static [Metric] {
        match self {
            Work::Sim { .. } | Work::Shared { .. } => &Metric::SIM,
            Work::Milp { .. } => &Metric::MILP,
            Work::Brownout { .. } => &Metric::BROWNOUT,
        }
    }
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
    /// Results folder: its experiment's id, or another folder the experiment owns (`table9prod`).
    pub folder: &'static str,
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
        self.run_on(None, &mut None).map(|(row, _)| row)
    }

    /// Runs it on `recorded`, its synthetic trace's requests drawn already (by the sweep, once for
    /// every run of that trace), its headroom search started near `hint` if it searches one (a like
    /// run's; [`run_near`]), which it sets to its own. The row is the same as [`Self::run`]'s; a
    /// simulation's run comes back too, for jobs that share its outcome ([`Self::row_of`]).
    pub fn run_on(
        &self,
        recorded: Option<&Recorded>,
        hint: &mut Option<Hint>,
    ) -> Result<(Row, Option<Run>), String> {
        let metrics = match &self.work {
            Work::Sim { platform, trace, .. } => {
                let plan = self.work.plan().ok_or("not a simulation")?;
                let near = *hint;
                let (run, found) = match (trace, recorded) {
                    (TraceSource::Synthetic(_), Some(r)) => run_near(platform, r, &plan, near),
                    (TraceSource::Synthetic(s), None) => {
                        let t = s.generate().map_err(|e| e.to_string())?;
                        run_near(platform, &t, &plan, near)
                    }
                    (TraceSource::Production(t), _) => run_near(platform, t.as_ref(), &plan, near),
                };
                *hint = found.or(near);
                let row = self.row(sim_metrics(&run.report(platform, &plan)));
                return Ok((row, Some(run)));
            }
            Work::Shared { platform, apps, scheduler, boards, sharing } => {
                let traces = apps
                    .iter()
                    .map(|a| match a {
                        TraceSource::Synthetic(s) => s.generate().map_err(|e| e.to_string()),
                        TraceSource::Production(t) => Ok(t.as_ref().clone()),
                    })
                    .collect::<Result<Vec<RateTrace>, String>>()?;
                let plan = Plan::new(*scheduler);
                shared_metrics(&evaluate_shared(platform, &traces, &plan, *boards, *sharing))
            }
            Work::Milp { spec, burstiness, intervals, seed } => {
                let load = bmodel_load(*burstiness, *intervals, 100.0, *seed);
                let s = solve(spec, &load).map_err(|e| e.to_string())?;
                milp_metrics(&s)
            }
            Work::Brownout { scenario, controller, seed } => {
                brownout_metrics(&brownout::run(scenario, *controller, *seed))
            }
        };
        Ok((self.row(metrics), None))
    }

    /// Its row from `run`, a simulation of the same outcome ([`Work::outcome_key`]) on another
    /// platform; `None` if it is not a simulation.
    pub fn row_of(&self, run: &Run) -> Option<Row> {
        let Work::Sim { platform, .. } = &self.work else { return None };
        Some(self.row(sim_metrics(&run.report(platform, &self.work.plan()?))))
    }

    fn row(&self, metrics: BTreeMap<String, f64>) -> Row {
        Row {
            experiment: self.folder.to_string(),
            params: self.params.clone(),
            trace: self.trace,
            series: self.series.clone(),
            metrics,
        }
    }
}

fn sim_metrics(r: &Report) -> BTreeMap<String, f64> {
    let fpga_total = r.fpga.energy.total_j();
    let idle = r.cpu.energy.idle_j + r.fpga.energy.idle_j;
    // JSON has no NaN: an absent figure is left out.
    named([
        (Metric::EnergyEfficiency, r.energy_efficiency),
        (Metric::RelativeCost, r.relative_cost),
        (Metric::CpuShare, r.cpu_share),
        (Metric::FpgaSpinUps, r.fpga.spin_ups as f64),
        (Metric::FpgaSeconds, r.fpga.allocated_s),
        (Metric::MissShare, r.miss_share),
        (Metric::EnergyJ, r.energy_j),
        (Metric::Cost, r.cost),
        (Metric::IdealEnergyJ, r.ideal_energy_j),
        (Metric::IdealCost, r.ideal_cost),
        (Metric::IdleShare, if r.energy_j > 0.0 { idle / r.energy_j } else { 0.0 }),
        (Metric::FpgaIdleShare, if fpga_total > 0.0 { r.fpga.energy.idle_j / fpga_total } else { 0.0 }),
        (Metric::Requests, r.requests as f64),
        (Metric::P99Ms, r.latency.p99_ms),
        (Metric::Headroom, r.headroom.map_or(f64::NAN, f64::from)),
        (Metric::SizeError, r.size_error.unwrap_or(f64::NAN)),
        (Metric::MeanBatch, r.batches.map_or(f64::NAN, |b| b.mean_size)),
    ])
    .filter(|(_, v)| v.is_finite())
    .collect()
}

/// The applications' figures as one machine's: energy and cost summed (efficiency and relative cost
/// as ratios of sums), shares weighted by requests.
fn shared_metrics(reports: &[Report]) -> BTreeMap<String, f64> {
    let sum = |f: &dyn Fn(&Report) -> f64| reports.iter().map(f).sum::<f64>();
    let requests = sum(&|r| r.requests as f64).max(1.0);
    named([
        (Metric::EnergyEfficiency, sum(&|r| r.ideal_energy_j) / sum(&|r| r.energy_j)),
        (Metric::RelativeCost, sum(&|r| r.cost) / sum(&|r| r.ideal_cost)),
        (Metric::CpuShare, sum(&|r| r.cpu_share * r.requests as f64) / requests),
        (Metric::FpgaSpinUps, sum(&|r| r.fpga.spin_ups as f64)),
        (Metric::FpgaSeconds, sum(&|r| r.fpga.allocated_s)),
        (Metric::MissShare, sum(&|r| r.miss_share * r.requests as f64) / requests),
        (Metric::EnergyJ, sum(&|r| r.energy_j)),
        (Metric::Cost, sum(&|r| r.cost)),
        (Metric::IdealEnergyJ, sum(&|r| r.ideal_energy_j)),
        (Metric::IdealCost, sum(&|r| r.ideal_cost)),
        (Metric::Requests, requests),
    ])
    .filter(|(_, v)| v.is_finite())
    .collect()
}

fn milp_metrics(s: &crate::optimal::MilpSolution) -> BTreeMap<String, f64> {
    named([
        (Metric::EnergyEfficiency, s.energy_efficiency),
        (Metric::RelativeCost, s.relative_cost),
        (Metric::EnergyJ, s.energy_j),
        (Metric::Cost, s.cost),
        (Metric::CpuWorkShare, s.cpu_work_share),
        (Metric::Gap, s.gap),
        (Metric::Optimal, f64::from(u8::from(s.optimal))),
        (Metric::SolveS, s.solve_s),
    ])
    .collect()
}

fn brownout_metrics(o: &brownout::Outcome) -> BTreeMap<String, f64> {
    named([
        (Metric::Iae, o.iae),
        (Metric::IaeOver, o.iae_over),
        (Metric::PeriodsOver, o.periods_over),
        (Metric::RequestsOver, o.requests_over),
        (Metric::OptionalRatio, o.optional_ratio),
        (Metric::P95S, o.p95_s),
        (Metric::P99S, o.p99_s),
        (Metric::MaxS, o.max_s),
    ])
    .collect()
}

/// Figures under their names in the results files.
fn named<const N: usize>(values: [(Metric, f64); N]) -> impl Iterator<Item = (String, f64)> {
    values.into_iter().map(|(m, v)| (m.key().to_string(), v))
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

/// A simulation run of `scheduler` (with its own dispatcher unless `dispatcher`) on `trace`, in series
/// named after the dispatcher when one is given, else after the scheduler.
pub(crate) fn sim(
    folder: &'static str,
    at: &[(&str, f64)],
    trace: u32,
    platform: Platform,
    source: TraceSource,
    scheduler: Scheduler,
    dispatcher: Option<DispatcherKind>,
) -> Job {
    let series = dispatcher.map_or_else(|| scheduler.to_string(), |d| d.name().to_string());
    Job {
        folder,
        params: params(at),
        trace,
        series,
        work: Work::Sim {
            platform,
            trace: source,
            scheduler,
            dispatcher,
            sizes: None,
            release: ReleaseTiming::Drained,
            fpga_boards: None,
            batching: None,
        },
    }
}

/// Sweep parameters from name/value pairs.
pub(crate) fn params(kv: &[(&str, f64)]) -> BTreeMap<String, f64> {
    kv.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

/// A synthetic trace of `scale`'s length; trace `i` is seeded `i + 1` so every figure sees the same load.
pub(crate) fn synthetic(scale: &Scale, burstiness: f64, size: SizeSpec, trace: u32) -> TraceSource {
    TraceSource::Synthetic(Synthetic {
        burstiness,
        duration: scale.duration,
        size,
        workers: 100.0,
        seed: u64::from(trace) + 1,
        optional_factor: 0.0,
        size_cv: 0.0,
    })
}

/// Size buckets as sweep values.
pub const SIZES: [(SizeSpec, &str); 3] =
    [(SizeSpec::Short, "short"), (SizeSpec::Medium, "medium"), (SizeSpec::Long, "long")];

/// The three dispatchers of Table 9, index packing under both numberings.
pub const DISPATCHERS: [DispatcherKind; 4] = [
    DispatcherKind::EfficientFirst,
    DispatcherKind::RoundRobin,
    DispatcherKind::IndexPacking,
    DispatcherKind::IndexPackingAlloc,
];

/// The four schedulers of the sensitivity figures.
pub const SENSITIVITY: [Scheduler; 4] = [
    Scheduler::CpuDynamic,
    Scheduler::FpgaStatic,
    Scheduler::FpgaDynamic,
    Scheduler::Spork(Objective::ENERGY),
];

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn keys(j: &Job) -> BTreeSet<String> {
        j.run().unwrap().metrics.into_keys().collect()
    }

    fn declared(j: &Job) -> BTreeSet<String> {
        j.work.metrics().iter().map(|m| m.key().to_string()).collect()
    }

    #[test]
    fn a_run_records_the_metrics_its_kind_declares() {
        let scale = Scale { duration: from_secs(120.0), ..Scale::quick() };
        let source = synthetic(&scale, 0.6, SizeSpec::Short, 0);
        let platform = Platform::default();
        let (headroom, size_error, batch) = (
            Metric::Headroom.key().to_string(),
            Metric::SizeError.key().to_string(),
            Metric::MeanBatch.key().to_string(),
        );
        // Sizes known, no batching: no estimate error or batch size to report.
        let fpga = sim("t", &[], 0, platform, source.clone(), Scheduler::FpgaDynamic, None);
        assert_eq!(keys(&fpga), &declared(&fpga) - &BTreeSet::from([size_error.clone(), batch.clone()]));
        // A scheduler that searches no headroom has none to report.
        let mut cpu = sim("t", &[], 0, platform, source, Scheduler::CpuDynamic, None);
        let absent = BTreeSet::from([headroom.clone(), size_error, batch.clone()]);
        assert_eq!(keys(&cpu), &declared(&cpu) - &absent);
        // Sizes estimated and requests batched: the error and the batch size are reported.
        if let Work::Sim { sizes, batching, .. } = &mut cpu.work {
            *sizes = Some(Statistic::Mean);
            *batching = Some(Batching::new(8, &[], 100_000).expect("valid"));
        }
        assert_eq!(keys(&cpu), &declared(&cpu) - &BTreeSet::from([headroom]));
        let spec = MilpSpec {
            platform,
            fleet: spork_core::policy::Fleet::HYBRID,
            objective: Objective::ENERGY,
            interval_s: 1.0,
            time_limit_s: 10.0,
            mip_rel_gap: 1e-4,
        };
        let work = Work::Milp { spec, burstiness: 0.6, intervals: 16, seed: 1 };
        let milp = Job { folder: "t", params: params(&[]), trace: 0, series: "s".into(), work };
        assert_eq!(keys(&milp), declared(&milp));
    }
}
