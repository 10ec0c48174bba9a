//! Metrics of a run, as the paper reports them.

use serde::Serialize;
use spork_core::engine::Outcome;
use spork_core::model::platform::ideal_fpga_only;
use spork_core::model::{EnergySplit, Kind, Platform, time::to_secs};
use spork_core::policy::objective::NeverPays;

/// Energy, cost and activity of one worker type.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct KindReport {
    /// Energy by activity, in joules.
    pub energy: EnergySplit,
    /// Cost in dollars.
    pub cost: f64,
    /// Jobs run: requests, a batch counting once.
    pub served: u64,
    /// Spin-ups (including any pool pre-warmed before the run).
    pub spin_ups: u64,
    /// Allocated worker-seconds.
    pub allocated_s: f64,
    /// Busy worker-seconds.
    pub busy_s: f64,
    /// Most workers held at once.
    pub peak: u32,
}

/// Response-time percentiles in milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Latency {
    /// Median.
    pub p50_ms: f64,
    /// 95th percentile.
    pub p95_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Largest.
    pub max_ms: f64,
}

/// The result of evaluating one scheduler on one trace.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    /// Scheduler name.
    pub scheduler: String,
    /// Dispatcher name.
    pub dispatcher: String,
    /// The searched headroom: FPGA-dynamic's multiple of the largest step, FPGA-static's FPGAs above
    /// the busiest interval's need.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub headroom: Option<u32>,
    /// Requests served (every request of the trace that was not rejected).
    pub requests: u64,
    /// Requests rejected: the pool was capped and held no worker of an allowed type.
    pub rejected: u64,
    /// Spin-ups a cap refused (those requests queued on the worker freeing up first).
    pub capped_spin_ups: u64,
    /// Brownout controller, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub brownout: Option<String>,
    /// Share of requests with an optional part whose optional part ran (1 without brownout).
    pub optional_ratio: f64,
    /// Share of requests run on CPU workers.
    pub cpu_share: f64,
    /// Requests that finished after their deadline.
    pub deadline_misses: u64,
    /// Share of requests that missed.
    pub miss_share: f64,
    /// Response times.
    pub latency: Latency,
    /// CPU workers.
    pub cpu: KindReport,
    /// FPGA workers.
    pub fpga: KindReport,
    /// Total energy in joules.
    pub energy_j: f64,
    /// Total cost in dollars.
    pub cost: f64,
    /// Energy of the idealised FPGA-only platform (default parameters, busy compute only).
    pub ideal_energy_j: f64,
    /// Cost of the idealised FPGA-only platform.
    pub ideal_cost: f64,
    /// Ideal energy / energy (1 = as efficient as the idealised FPGA-only platform).
    pub energy_efficiency: f64,
    /// Cost / ideal cost.
    pub relative_cost: f64,
    /// Scheduling intervals.
    pub intervals: u64,
    /// Simulated time until the pool drained, in seconds.
    pub simulated_s: f64,
    /// Events processed.
    pub events: u64,
    /// With unknown sizes, the size estimates' mean absolute error relative to the mean size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size_error: Option<f64>,
    /// With dynamic batching, the batches booked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batches: Option<Batches>,
    /// A hybrid scheduler on a platform where no board pays at its objective, even fully used: it
    /// held none, and these are the figures that say why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fpga_never_pays: Option<NeverPays>,
}

/// What dynamic batching did in a run.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Batches {
    /// Batches booked on boards.
    pub batches: u64,
    /// Requests they carried.
    pub requests: u64,
    /// Requests per batch.
    pub mean_size: f64,
}

impl Report {
    /// Derives the metrics of `outcome` on `platform`.
    pub fn new(scheduler: String, dispatcher: String, platform: &Platform, outcome: &Outcome) -> Self {
        let kind = |k: Kind| {
            let l = outcome.pool.ledger(k);
            let spec = platform.spec(k);
            KindReport {
                energy: l.energy(spec),
                cost: l.cost(spec),
                served: l.served,
                spin_ups: l.spin_ups,
                allocated_s: to_secs(l.allocated),
                busy_s: to_secs(l.busy),
                peak: outcome.pool.peak(k),
            }
        };
        let (cpu, fpga) = (kind(Kind::Cpu), kind(Kind::Fpga));
        let t = &outcome.tally;
        let requests = t.served_total();
        let share = |n: u64| t.share(n);
        let energy_j = cpu.energy.total_j() + fpga.energy.total_j();
        let cost = cpu.cost + fpga.cost;
        let (ideal_energy_j, ideal_cost) = ideal_fpga_only(to_secs(outcome.total_size));
        let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
        Report {
            scheduler,
            dispatcher,
            headroom: None,
            requests,
            rejected: t.rejected,
            capped_spin_ups: outcome.capped,
            brownout: None,
            optional_ratio: if outcome.optional.0 == 0 {
                1.0
            } else {
                outcome.optional.1 as f64 / outcome.optional.0 as f64
            },
            cpu_share: share(t.served[Kind::Cpu]),
            deadline_misses: t.misses,
            miss_share: share(t.misses),
            latency: Latency {
                p50_ms: t.percentile_ms(0.5),
                p95_ms: t.percentile_ms(0.95),
                p99_ms: t.percentile_ms(0.99),
                max_ms: t.latency_us.max() as f64 / 1e3,
            },
            cpu,
            fpga,
            energy_j,
            cost,
            ideal_energy_j,
            ideal_cost,
            energy_efficiency: ratio(ideal_energy_j, energy_j),
            relative_cost: ratio(cost, ideal_cost),
            intervals: outcome.intervals,
            simulated_s: to_secs(outcome.end),
            events: outcome.events,
            size_error: outcome.size_error,
            batches: outcome.batches.map(|(batches, requests)| Batches {
                batches,
                requests,
                mean_size: ratio(requests as f64, batches as f64),
            }),
            fpga_never_pays: None,
        }
    }
}
