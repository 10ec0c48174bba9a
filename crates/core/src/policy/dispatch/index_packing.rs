//! AutoScale's index packing: each request goes to the lowest-numbered worker that can meet its
//! deadline, whatever its type, so the highest-numbered workers idle out first. Numbers are the pool's
//! ([`crate::model::pool::Numbering`]): by default a new worker takes the lowest free number, as
//! AutoScale's servers have fixed indices, so a burst CPU that idles out gives its number back; in
//! allocation order (`index-packing-alloc`) the first workers keep the lowest numbers for good, and a CPU
//! allocated early is preferred to every FPGA allocated after it. Index packing is blind to
//! efficiency either way. Scans in number order until a worker fits; a baseline.

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
        for id in pool.in_number_order() {
            let unit = pool.earliest_unit(id);
            if self.fleet.allows(pool.worker(id).kind) && can_meet(pool, unit, job, now) {
                return Placement::Assign(unit);
            }
        }
        fallback(pool, self.fleet, job, now, self.fpga_spin_up)
    }
}
