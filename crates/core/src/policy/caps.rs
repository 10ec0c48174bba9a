//! Caps on the pool: at most so many workers of a type, counting those spinning up and down (a
//! machine with a fixed number of boards or cores).
//!
//! A cap clips the allocator's FPGA target and refuses spin-ups beyond it. A request whose dispatcher
//! asked for a refused spin-up queues on the allowed worker that frees up first (a likely miss), or is
//! rejected when the fleet holds no worker of an allowed type at all.

use super::dispatch::Fleet;
use crate::model::{Kind, PerKind, Pool, Time, Unit};

/// The most workers of each type the pool may hold (`None`: unbounded).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Caps(pub PerKind<Option<u32>>);

impl Caps {
    /// No cap on either type.
    pub const NONE: Caps = Caps(PerKind::new(None, None));

    /// Further workers of `kind` the cap allows now (`u32::MAX` without a cap).
    pub fn room(&self, pool: &Pool, kind: Kind) -> u32 {
        self.0[kind].map_or(u32::MAX, |max| max.saturating_sub(held(pool, kind)))
    }

    /// Whether no further worker of `kind` may be added.
    pub fn at_cap(&self, pool: &Pool, kind: Kind) -> bool {
        self.room(pool, kind) == 0
    }

    /// A target count of `kind` clipped to the cap.
    pub fn clip(&self, kind: Kind, target: u32) -> u32 {
        self.0[kind].map_or(target, |max| target.min(max))
    }

    /// Where a request goes when a cap refused its spin-up: the allowed worker that frees up first, or
    /// `None` (reject it) when the fleet holds no worker at all.
    pub fn overflow(pool: &Pool, fleet: Fleet, now: Time) -> Option<Unit> {
        Kind::ALL
            .into_iter()
            .filter(|&k| fleet.allows(k))
            .filter_map(|k| pool.earliest_free(k))
            .min_by_key(|&u| pool.start_at(u, now))
    }
}

/// Workers of `kind` that count against a cap: allocated (spinning up, active, draining) or spinning
/// down.
fn held(pool: &Pool, kind: Kind) -> u32 {
    pool.allocated(kind) + pool.spinning_down(kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spinning_down_workers_count_against_the_cap() {
        let mut pool = Pool::new();
        let caps = Caps(PerKind::new(Some(2), None));
        let a = pool.prewarm(Kind::Cpu, 0, 5);
        assert_eq!(caps.room(&pool, Kind::Cpu), 1);
        pool.begin_spin_down(a, 0, 5);
        pool.spin_up(Kind::Cpu, 0, 5);
        assert!(caps.at_cap(&pool, Kind::Cpu), "one spinning down + one spinning up = 2");
        assert_eq!(caps.room(&pool, Kind::Fpga), u32::MAX);
        assert_eq!((caps.clip(Kind::Cpu, 7), caps.clip(Kind::Fpga, 7)), (2, 7));
    }

    #[test]
    fn overflow_goes_to_the_earliest_free_allowed_worker_or_nowhere() {
        let mut pool = Pool::new();
        assert_eq!(Caps::overflow(&pool, Fleet::HYBRID, 0), None);
        let cpu = pool.prewarm(Kind::Cpu, 0, 5);
        let fpga = pool.prewarm(Kind::Fpga, 0, 5);
        pool.assign(cpu, 0, 100);
        pool.assign(fpga, 0, 50);
        assert_eq!(Caps::overflow(&pool, Fleet::HYBRID, 0), Some(Unit::of(fpga)));
        assert_eq!(Caps::overflow(&pool, Fleet::CPU_ONLY, 0), Some(Unit::of(cpu)));
    }
}
