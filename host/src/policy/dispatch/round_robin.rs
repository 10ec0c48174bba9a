//! MArk's round-robin dispatch: rotate over allocated workers of any type, skipping those that would
//! miss the deadline. It spreads load evenly, so workers rarely idle long enough to be reclaimed.
//! O(n) in the worst case; it is a baseline.

use super::{Fleet, Job, Placement, can_meet, fallback};
use crate::model::{Pool, Time, WorkerId, WorkerState};

/// Round robin over pool slots.
#[derive(Clone, Copy, Debug)]
pub struct RoundRobin {
    fleet: Fleet,
    fpga_spin_up: Time,
    next: usize,
}

impl RoundRobin {
    /// For workers of `fleet`; FPGAs take `fpga_spin_up` to spin up.
    pub fn new(fleet: Fleet, fpga_spin_up: Time) -> Self {
        RoundRobin { fleet, fpga_spin_up, next: 0 }
    }

    /// The worker types it places on.
    pub fn fleet(&self) -> Fleet {
        self.fleet
    }

    /// Where to run `job` at `now`.
    pub fn place(&mut self, pool: &Pool, job: &Job, now: Time) -> Placement {
        let slots = pool.slots();
        let n = slots.len();
        for k in 0..n {
            let i = (self.next + k) % n;
            let w = &slots[i];
            let live = matches!(w.state, WorkerState::Active | WorkerState::SpinningUp);
            if live && self.fleet.allows(w.kind) && can_meet(pool, WorkerId(i as u32), job, now) {
                self.next = i + 1;
                return Placement::Assign(WorkerId(i as u32));
            }
        }
        fallback(pool, self.fleet, job, now, self.fpga_spin_up)
    }
}
