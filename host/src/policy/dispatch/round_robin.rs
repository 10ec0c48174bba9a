//! Round-robin dispatch: rotate over allocated workers, skipping those that would miss the deadline.
//! It spreads load evenly, so workers rarely idle long enough to be reclaimed. O(n) in the live
//! workers in the worst case; it is a baseline.
//!
//! Plain (`round-robin`): over workers of any type. Tiered (`round-robin-tiered`, MArk's): over the
//! provisioned FPGAs only; a request none of them can take in time goes to the burst tier, CPUs that
//! scale per request, placed by efficient-first over CPUs ([`super::rescue`]'s rule): the busiest CPU
//! that still meets the deadline (so the tier shrinks as soon as a burst passes, each CPU idling out
//! on its own timer), or a new one.

use super::{EfficientFirst, Fleet, Job, Placement, can_meet, fallback};
use crate::model::{Kind, Pool, Time, WorkerState};

/// Round robin over pool slots.
#[derive(Clone, Copy, Debug)]
pub struct RoundRobin {
    fleet: Fleet,
    fpga_spin_up: Time,
    next: usize,
    /// The burst tier, when tiered: efficient-first over CPUs (the rotation is then over FPGAs only).
    burst: Option<EfficientFirst>,
}

impl RoundRobin {
    /// For workers of `fleet`; FPGAs take `fpga_spin_up` to spin up.
    pub fn new(fleet: Fleet, fpga_spin_up: Time) -> Self {
        RoundRobin { fleet, fpga_spin_up, next: 0, burst: None }
    }

    /// MArk's: the rotation over FPGAs, CPUs a burst tier (a hybrid fleet; otherwise plain).
    pub fn tiered(fleet: Fleet, fpga_spin_up: Time) -> Self {
        let burst = (fleet.fpga && fleet.cpu).then(|| EfficientFirst::new(Fleet::CPU_ONLY, fpga_spin_up));
        RoundRobin { burst, ..Self::new(fleet, fpga_spin_up) }
    }

    /// Whether workers of `kind` are in the rotation.
    fn rotates(&self, kind: Kind) -> bool {
        self.fleet.allows(kind) && !(self.burst.is_some() && kind == Kind::Cpu)
    }

    /// The worker types it places on.
    pub fn fleet(&self) -> Fleet {
        self.fleet
    }

    /// Where to run `job` at `now`.
    pub fn place(&mut self, pool: &Pool, job: &Job, now: Time) -> Placement {
        let slots = pool.slots();
        for id in pool.rotation_from(self.next) {
            let w = &slots[id.index()];
            debug_assert!(matches!(w.state, WorkerState::Active | WorkerState::SpinningUp));
            if !self.rotates(w.kind) {
                continue;
            }
            let unit = pool.earliest_unit(id);
            if can_meet(pool, unit, job, now) {
                self.next = id.index() + 1;
                return Placement::Assign(unit);
            }
        }
        match &mut self.burst {
            Some(tier) => tier.place(pool, job, now),
            None => fallback(pool, self.fleet, job, now, self.fpga_spin_up),
        }
    }
}
