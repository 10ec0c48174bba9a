//! Round-robin dispatch: rotate over allocated workers, skipping those that would miss the deadline.
//! It spreads load evenly, so workers rarely idle long enough to be reclaimed. O(n) in the live
//! workers in the worst case (a baseline), but a request no rotated worker can take (every board full
//! in a burst) is known so from the first-draining unit of each type, without the walk.
//!
//! Plain (`round-robin`): over workers of any type. Tiered (`round-robin-tiered`, MArk's): over the
//! provisioned FPGAs only; a request none of them can take in time goes to the burst tier, CPUs that
//! scale per request, placed by efficient-first over CPUs ([`super::rescue`]'s rule): the busiest CPU
//! that still meets the deadline (so the tier shrinks as soon as a burst passes, each CPU idling out
//! on its own timer), or a new one.

use super::{EfficientFirst, Fleet, Job, Placement, can_meet, fallback};
use crate::model::{Kind, Pool, Time, Unit, WorkerState};

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
        if self.some_rotated_can_meet(pool, job, now)
            && let Some(unit) = self.rotate(pool, job, now)
        {
            return Placement::Assign(unit);
        }
        match &mut self.burst {
            Some(tier) => tier.place(pool, job, now),
            None => fallback(pool, self.fleet, job, now, self.fpga_spin_up),
        }
    }

    /// Whether a worker in the rotation can meet `job`'s deadline: whether the compute unit of a
    /// rotated type that drains first can (a later one cannot if it cannot). In a burst, when
    /// every board is full, this spares the walk round the whole pool that would find none.
    fn some_rotated_can_meet(&self, pool: &Pool, job: &Job, now: Time) -> bool {
        let kinds = [Kind::Fpga, Kind::Cpu].into_iter().filter(|&k| self.rotates(k));
        kinds.filter_map(|k| pool.earliest_free(k)).any(|u| can_meet(pool, u, job, now))
    }

    /// The next worker in the rotation, from the one after the last taken, that can meet `job`'s
    /// deadline (its compute unit that drains first).
    fn rotate(&mut self, pool: &Pool, job: &Job, now: Time) -> Option<Unit> {
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
                return Some(unit);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::collection::vec;
    use proptest::prelude::*;

    /// The rule without the shortcut: the rotation walked whatever the earliest drains say.
    fn walked(rr: &mut RoundRobin, pool: &Pool, job: &Job, now: Time) -> Placement {
        if let Some(unit) = rr.rotate(pool, job, now) {
            return Placement::Assign(unit);
        }
        match &mut rr.burst {
            Some(tier) => tier.place(pool, job, now),
            None => fallback(pool, rr.fleet, job, now, rr.fpga_spin_up),
        }
    }

    proptest! {
        /// Skipping the walk when no rotated worker's first-draining unit meets the deadline changes
        /// no placement and no rotation position: plain and tiered, over pools of CPUs and boards,
        /// active and spinning up, as requests are placed and queue on them.
        #[test]
        fn skipping_a_walk_that_finds_none_changes_nothing(
            workers in vec((any::<bool>(), any::<bool>(), 0..50u64), 1..40),
            jobs in vec((0..4u64, 1..40u64, 1..8u64), 1..80),
            tiered in any::<bool>(),
        ) {
            let mut pool = Pool::new();
            for (fpga, ready, work) in workers {
                let kind = if fpga { Kind::Fpga } else { Kind::Cpu };
                let id = if ready { pool.prewarm(kind, 0, 10) } else { pool.spin_up(kind, 0, 10) };
                pool.assign(id, 0, work);
            }
            let mut rr = if tiered {
                RoundRobin::tiered(Fleet::HYBRID, 10)
            } else {
                RoundRobin::new(Fleet::HYBRID, 10)
            };
            let mut reference = rr;
            let mut now = 0;
            for (step, slack, service) in jobs {
                now += step;
                let job = Job { deadline: now + slack, service: [service * 3, service] };
                let placed = rr.place(&pool, &job, now);
                prop_assert_eq!(placed, walked(&mut reference, &pool, &job, now));
                prop_assert_eq!(rr.next, reference.next);
                if let Placement::Assign(unit) = placed {
                    let kind = pool.worker(unit.worker).kind;
                    pool.assign(unit, now, job.service[kind.index()]);
                }
            }
        }
    }
}
