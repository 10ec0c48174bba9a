//! Round-robin dispatch: rotate over allocated workers, skipping those that would miss the deadline.
//! It spreads load evenly, so workers rarely idle long enough to be reclaimed. O(n) in the worst case;
//! it is a baseline.
//!
//! Plain (`round-robin`): over workers of any type. Tiered (`round-robin-tiered`, MArk's): over the
//! provisioned FPGAs only; a request none of them can take in time goes to the burst tier, CPUs that
//! scale per request: packed onto the busiest CPU that still meets the deadline (so the tier shrinks
//! as soon as a burst passes, each CPU idling out on its own timer), or a new one.

use super::{Fleet, Job, Placement, can_meet, fallback};
use crate::model::pool::Phase;
use crate::model::{Kind, Pool, Time, WorkerId, WorkerState};

/// Round robin over pool slots.
#[derive(Clone, Copy, Debug)]
pub struct RoundRobin {
    fleet: Fleet,
    fpga_spin_up: Time,
    next: usize,
    /// Rotate over FPGAs only; CPUs are a packed burst tier.
    tiered: bool,
}

impl RoundRobin {
    /// For workers of `fleet`; FPGAs take `fpga_spin_up` to spin up.
    pub fn new(fleet: Fleet, fpga_spin_up: Time) -> Self {
        RoundRobin { fleet, fpga_spin_up, next: 0, tiered: false }
    }

    /// MArk's: the rotation over FPGAs, CPUs a burst tier packed busiest first.
    pub fn tiered(fleet: Fleet, fpga_spin_up: Time) -> Self {
        RoundRobin { tiered: fleet.fpga, ..Self::new(fleet, fpga_spin_up) }
    }

    /// Whether workers of `kind` are in the rotation.
    fn rotates(&self, kind: Kind) -> bool {
        self.fleet.allows(kind) && !(self.tiered && kind == Kind::Cpu)
    }

    /// The burst tier: the busiest CPU that still meets the deadline (active, then spinning up).
    fn burst(&self, pool: &Pool, job: &Job, now: Time) -> Option<WorkerId> {
        let limit = job.latest_start(Kind::Cpu)?;
        [Phase::Active, Phase::Allocating]
            .into_iter()
            .find_map(|p| pool.latest_free_by(p, Kind::Cpu, now, limit))
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
            if live && self.rotates(w.kind) && can_meet(pool, WorkerId(i as u32), job, now) {
                self.next = i + 1;
                return Placement::Assign(WorkerId(i as u32));
            }
        }
        if self.tiered
            && self.fleet.cpu
            && let Some(w) = self.burst(pool, job, now)
        {
            return Placement::Assign(w);
        }
        fallback(pool, self.fleet, job, now, self.fpga_spin_up)
    }
}
