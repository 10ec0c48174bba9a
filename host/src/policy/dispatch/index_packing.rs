//! AutoScale's index packing: workers are numbered; each request goes to the lowest-numbered worker
//! that can meet its deadline, whatever its type, so high-numbered workers idle out. Pool slots are
//! reused lowest first, which is AutoScale's "turn on the lowest free index". O(n); a baseline.

use super::{Fleet, Job, Placement, can_meet, fallback};
use crate::model::{Pool, Time, WorkerId, WorkerState};

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
        for (i, w) in pool.slots().iter().enumerate() {
            let live = matches!(w.state, WorkerState::Active | WorkerState::SpinningUp) && !w.draining;
            if live && self.fleet.allows(w.kind) && can_meet(pool, WorkerId(i as u32), job, now) {
                return Placement::Assign(WorkerId(i as u32));
            }
        }
        fallback(pool, self.fleet, job, now, self.fpga_spin_up)
    }
}
