//! What a live run measures while it goes: answers, reconfigurations, faults, the board's timeline.

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::backend::Configured;
use spork_core::engine::Tally;
use spork_core::model::{Kind, PerKind, Time};

/// Faults met in a run, and what was done about them.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Faults {
    /// Boards that failed to configure.
    pub configure_failures: u64,
    /// Board jobs abandoned after the kernel timeout.
    pub kernel_timeouts: u64,
    /// Jobs whose kernel failed.
    pub kernel_errors: u64,
    /// Board results that differed from the reference, and worker hosts' answers refused (of the
    /// wrong kind or length, an impossible board time, or an audit's difference).
    pub mismatches: u64,
    /// Requests re-run on CPUs after a fault.
    pub redispatched: u64,
    /// Results that came after their request had been answered elsewhere (dropped).
    pub late_discarded: u64,
    /// Workers lost with their host (a worker host that went down or stopped answering).
    pub workers_lost: u64,
    /// What went wrong, one line per fault.
    #[serde(rename = "faults")]
    pub log: Vec<String>,
}

/// How each reconfiguration or spin-up of one worker type went.
#[derive(Clone, Debug, Default)]
pub struct Configurations {
    /// The measured part of each (ms): model load, instantiate, on-chip state; or thread start.
    pub measured_ms: Vec<f64>,
    /// The configured delay slept on top (s).
    pub delay_s: f64,
    /// A real board's invocation measured at each configuration (us).
    pub invocation_us: Vec<f64>,
}

/// The board's own timeline beside the wall time the simulation took.
#[derive(Clone, Debug)]
pub struct BoardTime {
    /// RTL cycles run.
    pub cycles: u64,
    /// Board time the jobs took (ns): cycles / clock.
    pub device_ns: u64,
    /// Wall time the Verilated model took for them (ns).
    pub verilator_ns: u64,
    /// How late each board result was, beyond its finish on the board's timeline (us).
    pub lag_us: Histogram<u64>,
}

impl Default for BoardTime {
    fn default() -> Self {
        let lag_us = Histogram::new_with_bounds(1, 3_600 * 1_000_000, 3).expect("static histogram bounds");
        BoardTime { cycles: 0, device_ns: 0, verilator_ns: 0, lag_us }
    }
}

/// Counters and distributions gathered while the run goes.
#[derive(Debug)]
pub struct RunStats {
    /// Requests handed to the pool.
    pub offered: u64,
    /// What workers answered (CPU latency in wall time, FPGA on the board's timeline) and what was
    /// rejected (a capped pool, an input no kernel accepts).
    pub answers: Tally,
    /// Rejected explicitly because the run was stopped before they finished.
    pub rejected_at_stop: u64,
    /// The run was stopped early (Ctrl-C).
    pub stopped: bool,
    /// Worker configurations, per type.
    pub configured: PerKind<Configurations>,
    /// Faults and what was done about them.
    pub faults: Faults,
    /// The board's timeline.
    pub board: BoardTime,
    /// Power the backends measured after their jobs (W), per type: sum and count.
    pub measured_power: PerKind<(f64, u64)>,
    /// Clients' requests: the size estimate's relative error on each CPU answer, in parts per
    /// thousand.
    pub estimate_error_permille: Histogram<u64>,
}

impl Default for RunStats {
    fn default() -> Self {
        RunStats {
            offered: 0,
            answers: Tally::default(),
            rejected_at_stop: 0,
            stopped: false,
            configured: PerKind::default(),
            faults: Faults::default(),
            board: BoardTime::default(),
            measured_power: PerKind::default(),
            estimate_error_permille: Histogram::new_with_bounds(1, 1_000_000, 3)
                .expect("static histogram bounds"),
        }
    }
}

impl RunStats {
    /// A worker of `kind` finished configuring.
    pub fn record_configured(&mut self, kind: Kind, c: Configured) {
        let k = &mut self.configured[kind];
        k.measured_ms.push(c.measured.as_secs_f64() * 1e3);
        k.delay_s = c.configured_delay.as_secs_f64();
        k.invocation_us.extend(c.invocation.map(|d| d.as_secs_f64() * 1e6));
    }

    /// A backend measured `watts` after a job.
    pub fn record_power(&mut self, kind: Kind, watts: f64) {
        let p = &mut self.measured_power[kind];
        p.0 += watts;
        p.1 += 1;
    }

    /// A board result came `lag` after its finish on the board's timeline; the job took `verilator`
    /// of wall time for `device` of board time and `cycles`.
    pub fn record_board(&mut self, lag: Time, verilator: Time, device: Time, cycles: u64) {
        let b = &mut self.board;
        b.lag_us.saturating_record((lag / 1_000).max(1));
        // Saturating: a board's times can come from a worker host.
        b.verilator_ns = b.verilator_ns.saturating_add(verilator);
        b.device_ns = b.device_ns.saturating_add(device);
        b.cycles = b.cycles.saturating_add(cycles);
    }

    /// A client's size estimate was off by `error` (relative) on a CPU answer.
    pub fn record_estimate(&mut self, error: f64) {
        self.estimate_error_permille.saturating_record(((error * 1e3).round() as u64).max(1));
    }

    /// Requests settled so far: answered, rejected or rejected at the stop.
    pub fn settled(&self) -> u64 {
        self.answers.served_total() + self.answers.rejected + self.rejected_at_stop
    }
}
