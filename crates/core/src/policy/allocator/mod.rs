//! Per-interval FPGA allocators: each returns how many FPGAs to hold in the interval after next.
//!
//! At the start of interval `t` the driver reports what interval `t-1` ran (service time on FPGAs and
//! on CPUs) and how many FPGAs are allocated; the allocator answers the FPGA count for interval
//! `t+1`, the earliest an FPGA spun up now can serve (the interval equals the FPGA spin-up time).
//! Surplus FPGAs are not killed: they become releasable and spin down once idle for the idle timeout
//! (see [`crate::policy::release`]).

mod baselines;
mod deadline;
mod demand;
mod mark_ideal;
mod spork;
mod spork_d;

pub use baselines::{CpuDynamic, FpgaDynamic, FpgaStatic, SporkIdeal};
pub use deadline::{ArrivalProfile, Need};
pub use demand::{Demand, needed_fpgas};
pub use mark_ideal::MarkIdeal;
pub use spork::{Histogram, SporkAllocator};
pub use spork_d::SporkD;

use crate::model::{Platform, Time, pool::Released, time::to_secs};

/// What the last interval ran, as the allocator sees it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IntervalStats {
    /// Index of the interval that starts now (`t`); the stats describe interval `t - 1`.
    pub index: usize,
    /// Sum of service times of requests run on FPGAs in interval `t - 1` (Algorithm 1's F).
    pub fpga_work: Time,
    /// Sum of service times of requests run on CPUs in interval `t - 1` (Algorithm 1's C).
    pub cpu_work: Time,
    /// FPGAs currently allocated (spinning up or active), Algorithm 2's n_curr.
    pub fpgas_allocated: u32,
}

impl IntervalStats {
    /// Algorithm 1's λ = F + C/S: the interval's work in FPGA-seconds at `speedup`.
    pub fn fpga_seconds(&self, speedup: f64) -> f64 {
        to_secs(self.fpga_work) + to_secs(self.cpu_work) / speedup
    }
}

/// A per-interval FPGA allocator.
pub trait Allocator: Send {
    /// FPGAs to have ready when the run starts (spun up beforehand, their spin-up charged).
    fn initial(&mut self) -> u32 {
        0
    }

    /// The FPGA count to hold in interval `stats.index + 1`.
    fn plan(&mut self, stats: &IntervalStats) -> u32;

    /// A request arrived at `at`, taking `fpga_service` on an FPGA, due by `deadline` (what SporkD
    /// counts its need from; the others count the interval's work).
    fn on_arrival(&mut self, _at: Time, _fpga_service: Time, _deadline: Time) {}

    /// An FPGA finished spinning down (feeds Algorithm 1's lifetime map L).
    fn on_release(&mut self, _released: &Released) {}

    /// The board's speedup is now `platform.fpga.speedup` (a live pool observed it: see
    /// [`crate::policy::speed`]); what the allocator derived from it follows. Its history stays.
    fn respeed(&mut self, _platform: &Platform) {}
}
