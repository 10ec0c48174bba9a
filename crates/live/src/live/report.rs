//! What a live pool reports when it ends: its answers, faults, fleet, energy and board timeline.

use serde::Serialize;

use super::PoolRun;
use super::config::PoolConfig;
use super::stats::Faults;
use spork_core::engine::hardware::DispatchCounts;
use spork_core::model::time::to_secs;
use spork_core::model::{Kind, PerKind};

/// Distribution summary.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Spread {
    /// Samples.
    pub count: usize,
    /// Smallest.
    pub min: f64,
    /// Median.
    pub median: f64,
    /// Largest.
    pub max: f64,
}

impl Spread {
    fn of(v: &[f64]) -> Spread {
        if v.is_empty() {
            return Spread::default();
        }
        let mut s = v.to_vec();
        s.sort_by(f64::total_cmp);
        Spread { count: s.len(), min: s[0], median: s[s.len() / 2], max: s[s.len() - 1] }
    }
}

/// The hardware dispatch engine's part in a run.
#[derive(Clone, Debug, Serialize)]
pub struct EngineReport {
    /// "rtl" or "golden".
    pub engine: &'static str,
    /// Its decisions, their agreement with the software rule, cycles and wall time.
    #[serde(flatten)]
    pub counts: DispatchCounts,
}

/// The report of a live pool when it ends.
#[derive(Clone, Debug, Serialize)]
pub struct PoolReport {
    /// The hardware dispatch engine, if one took efficient-first's first step.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dispatch_engine: Option<EngineReport>,
    /// Scheduler.
    pub scheduler: String,
    /// Dispatcher.
    pub dispatcher: String,
    /// Kernel run by every request.
    pub kernel: String,
    /// The FPGA workers: "sim" (simulated board), "alveo <device>" or "f1 slot <n> (<agfi>)".
    pub board: String,
    /// Requests delivered by the load generator.
    pub offered: u64,
    /// Answered requests.
    pub answered: u64,
    /// Answered on FPGAs.
    pub answered_fpga: u64,
    /// Answered on CPUs.
    pub answered_cpu: u64,
    /// Share of answered requests served by FPGAs.
    pub fpga_share: f64,
    /// Brownout controller, if any.
    pub brownout: Option<String>,
    /// Requests that carried an optional part.
    pub optional_offered: u64,
    /// Share of those whose optional part ran (the brownout gate's decisions).
    pub optional_ratio: f64,
    /// Rejected (capped pool or impossible input).
    pub rejected: u64,
    /// Rejected because the run was stopped.
    pub rejected_at_stop: u64,
    /// Stopped early.
    pub stopped: bool,
    /// Latency percentiles, ms (FPGA requests on the board's timeline).
    pub p50_ms: f64,
    /// 95th percentile, ms.
    pub p95_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// Answered after the deadline.
    pub deadline_misses: u64,
    /// Misses over answered.
    pub miss_share: f64,
    /// FPGA reconfigurations: measured part (model load, instantiate, state load), ms.
    pub reconfig_measured_ms: Spread,
    /// Every measured reconfiguration, ms.
    pub reconfig_loads_ms: Vec<f64>,
    /// The configured reconfiguration delay on top, s.
    pub reconfig_configured_s: f64,
    /// The host link each board invocation was booked (and, on an emulated board, charged).
    pub link: spork_core::model::Link,
    /// A real board's invocation as measured at each configuration, us.
    pub invocation_measured_us: Spread,
    /// With dynamic batching: the batches booked and the requests they carried.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batches: Option<(u64, u64)>,
    /// The board's speedup over a CPU worker: as calibrated at the start, and as the answers'
    /// service times left it at the end (what the allocator and dispatch used last).
    pub speedup: (f64, f64),
    /// FPGA spin-ups the policy made.
    pub fpga_spin_ups: u64,
    /// CPU spin-ups the policy made.
    pub cpu_spin_ups: u64,
    /// Measured CPU thread start, ms.
    pub cpu_spin_up_measured_ms: Spread,
    /// Configured CPU spin-up delay, s.
    pub cpu_spin_up_configured_s: f64,
    /// Faults and what was done about them (flattened into the report's JSON).
    #[serde(flatten)]
    pub faults: Faults,
    /// Energy (J) by worker type: modelled from the profile's power and the policy's busy/idle
    /// accounting (this machine has no power sensor for simulated boards or VM CPUs).
    pub energy_j: PerKind<f64>,
    /// Where `energy_j` comes from.
    pub energy_source: String,
    /// Mean power the backends measured after their jobs, per type (Alveo sysfs or xbutil; F1: the
    /// SDK's whole watts, updated once a minute); `None` where no sensor backs a backend (then only
    /// the model above applies).
    pub board_power_w: PerKind<Option<f64>>,
    /// Cost ($) by worker type, from the profile's prices.
    pub cost: PerKind<f64>,
    /// Wall time of the run, s.
    pub wall_s: f64,
    /// RTL cycles run.
    pub device_cycles: u64,
    /// Board time of the FPGA jobs, s (cycles / clock).
    pub device_s: f64,
    /// Wall time the Verilated model took for them, s.
    pub verilator_s: f64,
    /// Verilator time over board time: how much slower than the board the simulation ran.
    pub simulation_lag: f64,
    /// How late board results were beyond their finish on the board's timeline, ms (p50, max).
    pub result_lag_ms: (f64, f64),
    /// Board clock, MHz.
    pub clock_mhz: f64,
}

impl PoolReport {
    /// The report of pool `cfg`'s `run`: from the engine's outcome (fleet, energy, cost, the gate's
    /// decisions) and what the pool measured.
    pub fn new(cfg: &PoolConfig, run: PoolRun) -> PoolReport {
        let PoolRun { outcome, stats: st, ended: end, dispatch } = run;
        let a = &st.answers;
        let answered = a.served_total();
        let ledger = |k: Kind| outcome.pool.ledger(k);
        let platform = &cfg.platform;
        let (offered_opt, served_opt) = outcome.optional;
        let b = &st.board;
        PoolReport {
            dispatch_engine: dispatch.map(|(kind, counts)| EngineReport { engine: kind.name(), counts }),
            scheduler: cfg.plan.scheduler.to_string(),
            dispatcher: cfg.plan.dispatcher().name().to_string(),
            kernel: cfg.image.kernel.name().to_string(),
            board: match cfg.platform.fpga.compute_units {
                1 => cfg.board.describe(),
                n => format!("{} ({n} CUs per board)", cfg.board.describe()),
            },
            offered: st.offered,
            answered,
            answered_fpga: a.served[Kind::Fpga],
            answered_cpu: a.served[Kind::Cpu],
            fpga_share: a.share(a.served[Kind::Fpga]),
            brownout: cfg.plan.brownout.map(|b| b.controller.name().to_string()),
            optional_offered: offered_opt,
            optional_ratio: if offered_opt > 0 { served_opt as f64 / offered_opt as f64 } else { 1.0 },
            rejected: a.rejected,
            rejected_at_stop: st.rejected_at_stop,
            stopped: st.stopped,
            p50_ms: a.percentile_ms(0.5),
            p95_ms: a.percentile_ms(0.95),
            p99_ms: a.percentile_ms(0.99),
            deadline_misses: a.misses,
            miss_share: a.share(a.misses),
            reconfig_measured_ms: Spread::of(&st.configured.fpga.measured_ms),
            reconfig_loads_ms: st.configured.fpga.measured_ms.clone(),
            reconfig_configured_s: st.configured.fpga.delay_s,
            link: platform.fpga.link(),
            invocation_measured_us: Spread::of(&st.configured.fpga.invocation_us),
            batches: outcome.batches,
            speedup: (platform.fpga.speedup, outcome.speedup),
            fpga_spin_ups: ledger(Kind::Fpga).spin_ups,
            cpu_spin_ups: ledger(Kind::Cpu).spin_ups,
            cpu_spin_up_measured_ms: Spread::of(&st.configured.cpu.measured_ms),
            cpu_spin_up_configured_s: st.configured.cpu.delay_s,
            energy_j: PerKind::from_fn(|k| ledger(k).energy(platform.spec(k)).total_j()),
            energy_source:
                "modelled: the profile's busy/idle power over the policy's accounting of each worker".into(),
            board_power_w: st.measured_power.map(|(sum, n)| (n > 0).then(|| sum / n as f64)),
            cost: PerKind::from_fn(|k| ledger(k).cost(platform.spec(k))),
            wall_s: to_secs(end),
            device_cycles: b.cycles,
            device_s: b.device_ns as f64 / 1e9,
            verilator_s: b.verilator_ns as f64 / 1e9,
            simulation_lag: if b.device_ns > 0 { b.verilator_ns as f64 / b.device_ns as f64 } else { 0.0 },
            result_lag_ms: (b.lag_us.value_at_quantile(0.5) as f64 / 1e3, b.lag_us.max() as f64 / 1e3),
            clock_mhz: cfg.calibration.clock_hz / 1e6,
            faults: st.faults,
        }
    }
}
