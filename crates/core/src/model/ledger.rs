//! Energy and cost accounting per worker type.
//!
//! Each worker adds its totals once, when it is released, so the event loop never integrates power:
//! busy energy = busy power x (service + spin time), idle energy = idle power x the rest of its
//! allocated time, cost = price x allocated time (spin-up and spin-down included).
//!
//! A board of several compute units draws its idle power (shell, clocks, memory) once and each
//! serving CU's dynamic power (busy minus idle: the kernel's) on top: while `k` CUs serve it draws
//! `idle + k x (busy - idle)`. Over a run that is `busy x service - idle x (service - occupied)`,
//! where `occupied` is the time at least one CU served; with one CU the two times are equal and the
//! formula is the one above.

use super::platform::WorkerSpec;
use super::time::{Time, to_secs};
use serde::Serialize;

/// Time totals of the released workers of one type.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Ledger {
    /// Allocated time: from the allocation decision to the end of spin-down, summed over workers.
    pub allocated: Time,
    /// Service time of the requests they ran (summed over compute units).
    pub busy: Time,
    /// Time at least one compute unit of the worker was serving (equal to `busy` with one CU).
    pub occupied: Time,
    /// Time spent spinning up and down.
    pub spinning: Time,
    /// Number of spin-ups.
    pub spin_ups: u64,
    /// Requests served.
    pub served: u64,
}

/// Energy of one worker type, in joules, split by what the worker was doing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct EnergySplit {
    /// Serving requests.
    pub busy_j: f64,
    /// Allocated but idle.
    pub idle_j: f64,
    /// Spinning up or down (at busy power).
    pub spin_j: f64,
}

impl EnergySplit {
    /// Sum of the parts.
    pub fn total_j(&self) -> f64 {
        self.busy_j + self.idle_j + self.spin_j
    }
}

impl Ledger {
    /// Idle time: allocated time not spent serving or spinning.
    pub fn idle(&self) -> Time {
        self.allocated.saturating_sub(self.occupied + self.spinning)
    }

    /// Energy under a worker spec.
    pub fn energy(&self, spec: &WorkerSpec) -> EnergySplit {
        // Service that ran beside another CU of the same board: its idle share was already drawn.
        let overlap = self.busy.saturating_sub(self.occupied);
        let mut busy_j = spec.busy_power_w * to_secs(self.busy);
        if overlap > 0 {
            busy_j -= spec.idle_power_w * to_secs(overlap);
        }
        EnergySplit {
            busy_j,
            idle_j: spec.idle_power_w * to_secs(self.idle()),
            spin_j: spec.busy_power_w * to_secs(self.spinning),
        }
    }

    /// Cost in dollars under a worker spec.
    pub fn cost(&self, spec: &WorkerSpec) -> f64 {
        spec.price_per_sec() * to_secs(self.allocated)
    }
}
