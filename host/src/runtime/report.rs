//! What a live run measured, and its report.

use std::io::IsTerminal;

use hdrhistogram::Histogram;
use serde::Serialize;
use spork_golden::Kernel;

use super::backend::Configured;
use crate::evaluate::engine::Outcome;
use crate::evaluate::{Plan, Report};
use crate::model::time::to_secs;
use crate::model::{Kind, Platform, Time};

/// Faults met in a run, and what was done about them.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Faults {
    /// Boards that failed to configure.
    pub configure_failures: u64,
    /// Board jobs abandoned after the kernel timeout.
    pub kernel_timeouts: u64,
    /// Jobs whose kernel failed.
    pub kernel_errors: u64,
    /// Board results that differed from the reference.
    pub mismatches: u64,
    /// Requests re-run on CPUs after a fault.
    pub redispatched: u64,
    /// Results that came after their request had been answered elsewhere (dropped).
    pub late_discarded: u64,
    /// What went wrong, one line per fault.
    #[serde(rename = "faults")]
    pub log: Vec<String>,
}

/// Counters and distributions gathered while the run goes.
#[derive(Debug)]
pub struct RunStats {
    /// Requests in the trace.
    pub trace_requests: u64,
    /// Requests the load generator delivered.
    pub offered: u64,
    /// Answered, per worker type (indexed by `Kind::index`).
    pub answered: [u64; 2],
    /// Answered after their deadline.
    pub misses: u64,
    /// Rejected: a capped pool with no worker to take them, or an input no kernel accepts.
    pub rejected: u64,
    /// Rejected explicitly because the run was stopped before they finished.
    pub rejected_at_stop: u64,
    /// The run was stopped early (Ctrl-C).
    pub stopped: bool,
    /// Response times (us): CPU wall time; FPGA on the board's timeline.
    pub latency_us: Histogram<u64>,
    /// FPGA reconfigurations: measured part (ms).
    pub reconfig_ms: Vec<f64>,
    /// FPGA reconfigurations: the configured delay added (s).
    pub reconfig_delay_s: f64,
    /// CPU spin-ups started.
    pub cpu_spin_ups: u64,
    /// CPU spin-ups: measured thread start (ms).
    pub cpu_spin_up_ms: Vec<f64>,
    /// CPU spin-up configured delay (s).
    pub cpu_delay_s: f64,
    /// Faults and what was done about them.
    pub faults: Faults,
    /// RTL cycles run on the board.
    pub device_cycles: u64,
    /// Board time the jobs took (ns).
    pub device_ns: u64,
    /// Wall time the Verilated model took for them (ns).
    pub verilator_ns: u64,
    /// How late each board result was, beyond its finish on the board's timeline (us).
    pub lag_us: Histogram<u64>,
    /// The latest board result's lag (ns), exactly.
    pub max_lag: Time,
    /// Power the backends measured after their jobs (W), per type: sum and count.
    pub measured_power: [(f64, u64); 2],
    /// Requests dispatched with an optional part.
    pub optional_offered: u64,
    /// Those whose optional part the gate let run.
    pub optional_served: u64,
}

impl RunStats {
    /// Empty statistics for a trace of `trace_requests`.
    pub fn new(trace_requests: u64) -> RunStats {
        RunStats {
            trace_requests,
            offered: 0,
            answered: [0; 2],
            misses: 0,
            rejected: 0,
            rejected_at_stop: 0,
            stopped: false,
            latency_us: super::driver::histogram(),
            reconfig_ms: Vec::new(),
            reconfig_delay_s: 0.0,
            cpu_spin_ups: 0,
            cpu_spin_up_ms: Vec::new(),
            cpu_delay_s: 0.0,
            faults: Faults::default(),
            device_cycles: 0,
            device_ns: 0,
            verilator_ns: 0,
            lag_us: super::driver::histogram(),
            max_lag: 0,
            measured_power: [(0.0, 0); 2],
            optional_offered: 0,
            optional_served: 0,
        }
    }

    pub(crate) fn record_configured(&mut self, kind: Kind, c: Configured) {
        let ms = c.measured.as_secs_f64() * 1e3;
        match kind {
            Kind::Fpga => {
                self.reconfig_ms.push(ms);
                self.reconfig_delay_s = c.configured_delay.as_secs_f64();
            }
            Kind::Cpu => {
                self.cpu_spin_up_ms.push(ms);
                self.cpu_delay_s = c.configured_delay.as_secs_f64();
            }
        }
    }

    pub(crate) fn record_answer(&mut self, kind: Kind, latency: Time, missed: bool) {
        self.answered[kind.index()] += 1;
        self.misses += u64::from(missed);
        self.latency_us.saturating_record((latency / 1_000).max(1));
    }

    pub(crate) fn record_power(&mut self, kind: Kind, watts: f64) {
        let p = &mut self.measured_power[kind.index()];
        p.0 += watts;
        p.1 += 1;
    }

    pub(crate) fn record_lag(&mut self, lag: Time, verilator: Time, device: Time) {
        self.lag_us.saturating_record((lag / 1_000).max(1));
        self.max_lag = self.max_lag.max(lag);
        self.verilator_ns += verilator;
        self.device_ns += device;
    }

    fn answered_total(&self) -> u64 {
        self.answered[0] + self.answered[1]
    }
}

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

/// The report at the end of a live run.
#[derive(Clone, Debug, Serialize)]
pub struct RunReport {
    /// Scheduler.
    pub scheduler: String,
    /// Dispatcher.
    pub dispatcher: String,
    /// Kernel run by every request.
    pub kernel: String,
    /// The FPGA workers: "sim" (simulated board) or "alveo <device>".
    pub board: String,
    /// Requests in the trace.
    pub trace_requests: u64,
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
    /// Energy (J) by worker type [CPU, FPGA]: modelled from the profile's power and the policy's
    /// busy/idle accounting (this machine has no power sensor for simulated boards or VM CPUs).
    pub energy_j: [f64; 2],
    /// Where `energy_j` comes from.
    pub energy_source: String,
    /// Mean power the backends measured after their jobs, per type [CPU, FPGA] (Alveo sysfs or
    /// xbutil; F1: the SDK's whole watts, updated once a minute); `None` where no sensor backs a
    /// backend (then only the model above applies).
    pub board_power_w: [Option<f64>; 2],
    /// Power sensors found on this machine and their energy over the run (whole-machine or whole-board
    /// figures, beside the per-type model).
    pub meters: Vec<MeterReading>,
    /// Cost ($) by worker type, from the profile's prices.
    pub cost: [f64; 2],
    /// The same trace and profile in the evaluator (virtual time): what the policy predicted.
    pub evaluator: Prediction,
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

/// One power sensor's energy over the run.
#[derive(Clone, Debug, Serialize)]
pub struct MeterReading {
    /// The sensor.
    pub name: String,
    /// Measured (sensor) or modelled.
    pub measured: bool,
    /// Joules over the run, or why it could not be read.
    pub energy_j: Result<f64, String>,
}

/// The evaluator's figures for comparison.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Prediction {
    /// Share on FPGAs.
    pub fpga_share: f64,
    /// FPGA spin-ups.
    pub fpga_spin_ups: u64,
    /// Miss share.
    pub miss_share: f64,
    /// Energy (J) [CPU, FPGA].
    pub energy_j: [f64; 2],
}

impl Prediction {
    /// From an evaluator report.
    pub fn from_report(r: &Report) -> Prediction {
        let served = (r.cpu.served + r.fpga.served).max(1) as f64;
        Prediction {
            fpga_share: r.fpga.served as f64 / served,
            fpga_spin_ups: r.fpga.spin_ups,
            miss_share: r.deadline_misses as f64 / served,
            energy_j: [r.cpu.energy.total_j(), r.fpga.energy.total_j()],
        }
    }
}

impl RunReport {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        plan: &Plan,
        dispatcher: &str,
        platform: &Platform,
        outcome: &Outcome,
        st: RunStats,
        end: Time,
        clock_hz: f64,
        kernel: Kernel,
    ) -> RunReport {
        let answered = st.answered_total();
        let q = |p: f64| st.latency_us.value_at_quantile(p) as f64 / 1e3;
        let energy = |k: Kind| outcome.pool.ledger(k).energy(platform.spec(k)).total_j();
        let cost = |k: Kind| outcome.pool.ledger(k).cost(platform.spec(k));
        RunReport {
            scheduler: plan.scheduler.to_string(),
            dispatcher: dispatcher.to_string(),
            kernel: kernel.to_string(),
            board: "sim".into(),
            trace_requests: st.trace_requests,
            offered: st.offered,
            answered,
            answered_fpga: st.answered[Kind::Fpga.index()],
            answered_cpu: st.answered[Kind::Cpu.index()],
            fpga_share: st.answered[Kind::Fpga.index()] as f64 / answered.max(1) as f64,
            brownout: plan.brownout.map(|b| b.controller.name().to_string()),
            optional_offered: st.optional_offered,
            optional_ratio: if st.optional_offered > 0 {
                st.optional_served as f64 / st.optional_offered as f64
            } else {
                1.0
            },
            rejected: st.rejected,
            rejected_at_stop: st.rejected_at_stop,
            stopped: st.stopped,
            p50_ms: q(0.5),
            p95_ms: q(0.95),
            p99_ms: q(0.99),
            deadline_misses: st.misses,
            miss_share: st.misses as f64 / answered.max(1) as f64,
            reconfig_measured_ms: Spread::of(&st.reconfig_ms),
            reconfig_loads_ms: st.reconfig_ms.clone(),
            board_power_w: [0, 1].map(|k| {
                let (sum, n) = st.measured_power[k];
                (n > 0).then(|| sum / n as f64)
            }),
            reconfig_configured_s: st.reconfig_delay_s,
            fpga_spin_ups: outcome.pool.ledger(Kind::Fpga).spin_ups,
            cpu_spin_ups: outcome.pool.ledger(Kind::Cpu).spin_ups,
            cpu_spin_up_measured_ms: Spread::of(&st.cpu_spin_up_ms),
            cpu_spin_up_configured_s: st.cpu_delay_s,
            faults: st.faults,
            energy_j: [energy(Kind::Cpu), energy(Kind::Fpga)],
            energy_source:
                "modelled: the profile's busy/idle power over the policy's accounting of each worker".into(),
            meters: Vec::new(),
            cost: [cost(Kind::Cpu), cost(Kind::Fpga)],
            evaluator: Prediction::default(),
            wall_s: to_secs(end),
            device_cycles: st.device_cycles,
            device_s: st.device_ns as f64 / 1e9,
            verilator_s: st.verilator_ns as f64 / 1e9,
            simulation_lag: if st.device_ns > 0 { st.verilator_ns as f64 / st.device_ns as f64 } else { 0.0 },
            result_lag_ms: (st.lag_us.value_at_quantile(0.5) as f64 / 1e3, st.lag_us.max() as f64 / 1e3),
            clock_mhz: clock_hz / 1e6,
        }
    }
}

/// The progress line.
pub(crate) struct Progress {
    bar: Option<indicatif::ProgressBar>,
}

impl Progress {
    pub(crate) fn new(on: bool, total: u64) -> Progress {
        let bar = (on && std::io::stderr().is_terminal()).then(|| {
            let b = indicatif::ProgressBar::new(total);
            b.set_style(
                indicatif::ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
                    .expect("static template"),
            );
            b
        });
        Progress { bar }
    }

    pub(crate) fn update(&self, st: &RunStats, now: Time, in_flight: usize) {
        if let Some(b) = &self.bar {
            b.set_position(st.answered_total() + st.rejected + st.rejected_at_stop);
            b.set_message(format!(
                "t={:.1}s on FPGA {} on CPU {} misses {} in flight {in_flight}",
                to_secs(now),
                st.answered[Kind::Fpga.index()],
                st.answered[Kind::Cpu.index()],
                st.misses
            ));
        }
    }

    pub(crate) fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}
