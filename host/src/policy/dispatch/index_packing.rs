//! AutoScale's index packing: workers are numbered in the order they were allocated; each request goes
//! to the lowest-numbered worker that can meet its deadline, whatever its type, so the newest workers
//! idle out first. Long-lived workers (FPGAs held across intervals) thus tend to get the low numbers and
//! burst CPUs the high ones, but a CPU allocated before an FPGA is preferred to it: index packing is
//! blind to efficiency. Scans in number order until a worker fits; a baseline.

use super::{Fleet, Job, Placement, can_meet, fallback};
use crate::model::{Pool, Time};

/// Index packing over pool slots.
#[derive(Clone, Copy, Debug)]
pub struct IndexPacking {
    fleet: Fleet,
    fpga_spin_up: Time,
}

impl IndexPacking {
    /// For workers of `fleet`; FPGAs take `fpga_spin_up` to spin up.
    pub fn new(fleet: Fleet, fpga_spin_up: Time) -> Self {
        IndexPacking { fleet, fpga_spin_up }
    }

    /// The worker types it places on.
    pub fn fleet(&self) -> Fleet {
        self.fleet
    }

    /// Where to run `job` at `now`.
    pub fn place(&mut self, pool: &Pool, job: &Job, now: Time) -> Placement {
        for id in pool.in_allocation_order() {
            if self.fleet.allows(pool.worker(id).kind) && can_meet(pool, id, job, now) {
                return Placement::Assign(id);
            }
        }
        fallback(pool, self.fleet, job, now, self.fpga_spin_up)
    }
}
