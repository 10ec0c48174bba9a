//! A live pool's state as others may read it while it runs (the server's `/metrics`): plain atomics
//! the dispatcher loop overwrites at each housekeeping wake, so a reader never blocks it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use spork_core::engine::hardware::DispatchStats;
use spork_core::engine::{Engine, Tally};
use spork_core::model::{Kind, PerKind, WorkerState};

/// Worker states counted, in this order.
pub const STATES: [WorkerState; 4] =
    [WorkerState::SpinningUp, WorkerState::Active, WorkerState::Draining, WorkerState::SpinningDown];

/// The latest figures of one pool.
#[derive(Debug, Default)]
pub struct Status {
    /// Workers per type and state ([`STATES`] order).
    pub workers: PerKind<[AtomicU64; 4]>,
    /// FPGA configurations so far, and their measured time summed (us).
    pub reconfigurations: AtomicU64,
    /// Sum of the measured part of each FPGA configuration (us).
    pub reconfiguration_us: AtomicU64,
    /// Modelled energy so far per type (mJ): the profile's power over the policy's accounting.
    pub energy_mj: PerKind<AtomicU64>,
    /// The brownout gate's setting (x1000); `u64::MAX` with no brownout.
    pub brownout_milli: AtomicU64,
    /// Requests in flight on workers.
    pub in_flight: AtomicU64,
    /// The allocator's FPGA target, and the FPGA cap in force (`u64::MAX`: none); with shared boards
    /// the cap is the pool's latest grant.
    pub fpga_target: AtomicU64,
    /// See `fpga_target`.
    pub fpga_cap: AtomicU64,
    /// Compute units per FPGA board (the allocator's counts are boards).
    pub fpga_compute_units: AtomicU64,
    /// The size estimator's relative error, median and p95 (x1000).
    pub estimate_error_milli: [AtomicU64; 2],
    /// Requests re-run after their worker failed, and workers lost with their host, so far.
    pub reruns: AtomicU64,
    /// See `reruns`.
    pub workers_lost: AtomicU64,
    /// Requests answered, per worker type.
    pub served: PerKind<AtomicU64>,
    /// Answered after their deadline.
    pub misses: AtomicU64,
    /// Requests settled: answered, rejected or refused at the stop.
    pub settled: AtomicU64,
    /// The hardware dispatch engine's counters (zero while the software rule decides).
    pub dispatch: Arc<DispatchStats>,
}

impl Status {
    /// Overwrites the figures from the engine and the run's counts.
    pub fn publish(&self, engine: &Engine, in_flight: usize, reconfig: (u64, u64), estimate: [u64; 2]) {
        let pool = engine.pool();
        for kind in Kind::ALL {
            let mut counts = [0u64; 4];
            for w in pool.slots().iter().filter(|w| w.kind == kind) {
                if let Some(i) = STATES.iter().position(|&s| s == w.state) {
                    counts[i] += 1;
                }
            }
            for (slot, n) in self.workers[kind].iter().zip(counts) {
                slot.store(n, Ordering::Relaxed);
            }
            let joules = pool.ledger(kind).energy(engine.platform().spec(kind)).total_j();
            self.energy_mj[kind].store((joules * 1e3) as u64, Ordering::Relaxed);
        }
        self.reconfigurations.store(reconfig.0, Ordering::Relaxed);
        self.reconfiguration_us.store(reconfig.1, Ordering::Relaxed);
        let setting = engine.brownout_setting().map_or(u64::MAX, |v| (v * 1e3) as u64);
        self.brownout_milli.store(setting, Ordering::Relaxed);
        self.in_flight.store(in_flight as u64, Ordering::Relaxed);
        self.fpga_target.store(u64::from(engine.target()), Ordering::Relaxed);
        self.fpga_cap.store(engine.fpga_cap().map_or(u64::MAX, u64::from), Ordering::Relaxed);
        let cus = u64::from(engine.platform().fpga_compute_units());
        self.fpga_compute_units.store(cus, Ordering::Relaxed);
        for (slot, v) in self.estimate_error_milli.iter().zip(estimate) {
            slot.store(v, Ordering::Relaxed);
        }
    }

    /// Overwrites the answer counts from the pool's `answers` and its `settled` requests.
    pub fn publish_answers(&self, answers: &Tally, settled: u64) {
        for kind in Kind::ALL {
            self.served[kind].store(answers.served[kind], Ordering::Relaxed);
        }
        self.misses.store(answers.misses, Ordering::Relaxed);
        self.settled.store(settled, Ordering::Relaxed);
    }
}
