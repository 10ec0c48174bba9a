//! Fleet reconciliation: how the pool's FPGAs follow the allocator's target.
//!
//! At each interval tick the engine asks [`Reconcile::on_tick`] what to change and applies the
//! answer; at the end of a trace it asks [`Reconcile::at_end`]. The rules, shared by every scheduler:
//!
//! - Below target: draining FPGAs are taken back first (lowest slot first; they are configured
//!   already), then new ones spin up, as many as the FPGA cap leaves room for.
//! - Above target: FPGAs idle past their idle timeout are released, longest idle first, until the
//!   target is met. Surplus FPGAs that are still busy are not killed: under [`Surplus::IdleOut`] they
//!   keep serving and spin down once idle (the release rule, [`super::release`]); under
//!   [`Surplus::Drain`] (MArk-ideal, which terminates surplus instances) the least-loaded ones are taken
//!   out of dispatch at once and finish their queues.
//! - Above the cap (a shared board's grant fell below what the pool holds, see
//!   [`super::arbitrate`]): the least-loaded busy FPGAs leave dispatch under either rule, so the board
//!   frees up for the pool it was granted to.
//!
//! Everything here is pure: it reads the pool and returns [`Change`]s in the order to apply them.

use super::caps::Caps;
use super::release::idle_since;
use crate::model::pool::Phase;
use crate::model::{Kind, Pool, Time, WorkerId};

/// One change to the fleet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// Spin up a new worker of this type.
    SpinUp(Kind),
    /// Return a draining worker to dispatch.
    Undrain(WorkerId),
    /// Take a worker out of dispatch; it finishes its queue, then idles out.
    Drain(WorkerId),
    /// Release an idle worker now.
    Release(WorkerId),
}

/// What happens to FPGAs above the target that are still busy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Surplus {
    /// They keep serving under the dispatcher and spin down once idle for the idle timeout.
    IdleOut,
    /// They leave dispatch at once, least loaded first (MArk-ideal).
    Drain,
}

/// The reconciliation rules of one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reconcile {
    /// How long an FPGA stays idle before it may be released (its spin-up time).
    pub idle_timeout: Time,
    /// What happens to busy surplus FPGAs.
    pub surplus: Surplus,
    /// Caps on the pool.
    pub caps: Caps,
    /// Under [`super::release::ReleaseTiming::Planned`], since when the pool has held more FPGAs
    /// than its target: no idle countdown starts before it.
    pub surplus_since: Option<Time>,
}

impl Reconcile {
    /// The changes that bring the pool's FPGAs towards `target` at `now` (`target` already clipped to
    /// the cap).
    pub fn on_tick(&self, pool: &Pool, target: u32, now: Time) -> Vec<Change> {
        let serving = pool.allocated(Kind::Fpga) - pool.draining(Kind::Fpga);
        if target > serving { self.grow(pool, target - serving) } else { self.shrink(pool, target, now) }
    }

    /// The changes at the end of a trace: no FPGA is needed any more, so every FPGA idle past its
    /// timeout goes now; the rest idle out on their timers.
    pub fn at_end(&self, pool: &Pool, now: Time) -> Vec<Change> {
        let mut out = Vec::new();
        self.release_idle(pool, 0, now, &mut out);
        out
    }

    fn grow(&self, pool: &Pool, missing: u32) -> Vec<Change> {
        let mut out: Vec<Change> =
            pool.draining_workers(Kind::Fpga).take(missing as usize).map(Change::Undrain).collect();
        let spin = (missing - out.len() as u32).min(self.caps.room(pool, Kind::Fpga));
        out.extend((0..spin).map(|_| Change::SpinUp(Kind::Fpga)));
        out
    }

    fn shrink(&self, pool: &Pool, target: u32, now: Time) -> Vec<Change> {
        let mut out = Vec::new();
        let released = self.release_idle(pool, target, now, &mut out);
        let serving = pool.allocated(Kind::Fpga) - released - pool.draining(Kind::Fpga);
        // Busy FPGAs above the cap always leave dispatch (a shared board's cap fell: another pool
        // needs it); above the target only under `Surplus::Drain`. Those draining or spinning down
        // already are on their way out.
        let cap = self.caps.0[Kind::Fpga].unwrap_or(u32::MAX);
        let keep = if self.surplus == Surplus::Drain { target.min(cap) } else { cap };
        if serving > keep {
            // The least-loaded FPGAs after those just released (the active index is ordered by when
            // each queue drains).
            // None of them is idle past its timeout: `release_idle` stopped at the first that is not
            // (the index is ordered by when each queue drains), or met the target already.
            let rest = pool.index(Phase::Active, Kind::Fpga).iter().skip(released as usize);
            out.extend(rest.take((serving - keep) as usize).map(|&(_, id)| Change::Drain(id)));
        }
        out
    }

    /// Releases FPGAs idle past their timeout, longest idle first, while more than `target` are
    /// allocated; returns how many.
    fn release_idle(&self, pool: &Pool, target: u32, now: Time, out: &mut Vec<Change>) -> u32 {
        let surplus = pool.allocated(Kind::Fpga).saturating_sub(target) as usize;
        let before = out.len();
        out.extend(
            pool.index(Phase::Active, Kind::Fpga)
                .iter()
                .take(surplus)
                .take_while(|&&(busy_until, _)| self.idle_past_timeout(busy_until, now))
                .map(|&(_, id)| Change::Release(id)),
        );
        (out.len() - before) as u32
    }

    fn idle_past_timeout(&self, busy_until: Time, now: Time) -> bool {
        idle_since(Kind::Fpga, busy_until, self.surplus_since).saturating_add(self.idle_timeout) <= now
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::PerKind;

    const TIMEOUT: Time = 10;

    fn rules(surplus: Surplus, fpga_cap: Option<u32>) -> Reconcile {
        Reconcile {
            idle_timeout: TIMEOUT,
            surplus,
            caps: Caps(PerKind::new(None, fpga_cap)),
            surplus_since: None,
        }
    }

    /// Three warm FPGAs whose queues drain at 0 (idle), 50 and 200.
    fn pool() -> (Pool, [WorkerId; 3]) {
        let mut p = Pool::new();
        let ids = [0, 50, 200].map(|busy| {
            let id = p.prewarm(Kind::Fpga, 0, 5);
            if busy > 0 {
                p.assign(id, 0, busy);
            }
            id
        });
        (p, ids)
    }

    #[test]
    fn below_target_takes_draining_back_before_spinning_up_within_the_cap() {
        let (mut p, [a, b, _]) = pool();
        p.drain(b);
        p.drain(a);
        // 1 serving, target 5: undrain both (lowest slot first), then 2 new ones.
        assert_eq!(
            rules(Surplus::IdleOut, None).on_tick(&p, 5, 0),
            vec![
                Change::Undrain(a),
                Change::Undrain(b),
                Change::SpinUp(Kind::Fpga),
                Change::SpinUp(Kind::Fpga)
            ]
        );
        // A cap of 4 leaves room for one new FPGA.
        let capped = rules(Surplus::IdleOut, Some(4)).on_tick(&p, 5, 0);
        assert_eq!(capped.iter().filter(|c| matches!(c, Change::SpinUp(_))).count(), 1);
    }

    #[test]
    fn above_target_releases_only_idle_past_timeout_longest_idle_first() {
        let (p, [a, b, _]) = pool();
        // At 100, a (idle since 0) and b (idle since 50) are past the timeout; c is busy.
        assert_eq!(
            rules(Surplus::IdleOut, None).on_tick(&p, 0, 100),
            vec![Change::Release(a), Change::Release(b)]
        );
        // Target 2: only one may go.
        assert_eq!(rules(Surplus::IdleOut, None).on_tick(&p, 2, 100), vec![Change::Release(a)]);
        // Before b's timeout only a goes, and the busy surplus idles out under IdleOut.
        assert_eq!(rules(Surplus::IdleOut, None).on_tick(&p, 0, 55), vec![Change::Release(a)]);
    }

    #[test]
    fn no_countdown_starts_before_the_pool_became_surplus() {
        let (p, [a, b, _]) = pool();
        // Surplus since 95: a (idle since 0) and b (idle since 50) both wait until 105.
        let r = Reconcile { surplus_since: Some(95), ..rules(Surplus::IdleOut, None) };
        assert_eq!(r.on_tick(&p, 0, 100), vec![]);
        assert_eq!(r.on_tick(&p, 0, 105), vec![Change::Release(a), Change::Release(b)]);
    }

    #[test]
    fn drain_surplus_takes_busy_surplus_out_of_dispatch_least_loaded_first() {
        let (p, [a, b, c]) = pool();
        assert_eq!(
            rules(Surplus::Drain, None).on_tick(&p, 0, 55),
            vec![Change::Release(a), Change::Drain(b), Change::Drain(c)]
        );
        assert_eq!(rules(Surplus::Drain, None).on_tick(&p, 2, 5), vec![Change::Drain(a)]);
        assert_eq!(rules(Surplus::Drain, None).on_tick(&p, 3, 500), vec![]);
    }

    #[test]
    fn a_cap_that_falls_below_the_held_fpgas_drains_busy_ones_under_either_surplus_rule() {
        let (p, [a, b, _]) = pool();
        // A shared board's cap fell to 1 (target clipped to it) at 5: nothing idle past its timeout,
        // so the two least loaded leave dispatch; the busiest keeps serving.
        assert_eq!(
            rules(Surplus::IdleOut, Some(1)).on_tick(&p, 1, 5),
            vec![Change::Drain(a), Change::Drain(b)]
        );
        // At 55, a is released and b drains; c stays.
        assert_eq!(
            rules(Surplus::IdleOut, Some(1)).on_tick(&p, 1, 55),
            vec![Change::Release(a), Change::Drain(b)]
        );
    }

    #[test]
    fn at_end_releases_every_idle_fpga() {
        let (p, [a, b, _]) = pool();
        assert_eq!(rules(Surplus::Drain, None).at_end(&p, 100), vec![Change::Release(a), Change::Release(b)]);
    }
}
