//! Algorithm 3: efficient-first dispatch.
//!
//! FPGAs before CPUs; within a type, the busiest worker that can still meet the deadline, then the
//! one idle the shortest time, then a worker still spinning up. Packing work onto the busiest workers
//! lets the others idle out and be reclaimed. Each step is one range query on the pool's ordered
//! index, so a decision is O(log n) in the number of workers.
//!
//! One refinement of the paper's wording: workers still spinning up are ordered by when their queue
//! drains (ready time plus queued work) rather than by queued work alone; the two orders agree for
//! workers that started spinning up together, which is how FPGAs are allocated (at interval ticks).
//!
//! Beyond the paper (SporkD's dispatcher, `efficient-first-wait`): a request that no allocated
//! worker can take waits for a new FPGA instead of taking a new CPU when its deadline leaves room for
//! the FPGA's spin-up and for enough queued work behind it to pay that spin-up. Later requests of the
//! burst queue on that FPGA while it spins up (efficient-first tries allocating FPGAs before CPUs).

use super::{Fleet, Job, Placement, fallback};
use crate::model::time::from_secs;
use crate::model::{Kind, Pool, Time, pool::Phase};

/// Algorithm 3.
#[derive(Clone, Copy, Debug)]
pub struct EfficientFirst {
    fleet: Fleet,
    fpga_spin_up: Time,
    /// With the wait rule: the queued work a new FPGA must have room for to pay its spin-up (`None`
    /// while an FPGA never pays).
    wait_pays_after: Option<Time>,
    /// Whether it follows the wait rule (SporkD's `efficient-first-wait`).
    waits: bool,
}

impl EfficientFirst {
    /// For workers of `fleet`; FPGAs take `fpga_spin_up` to spin up.
    pub fn new(fleet: Fleet, fpga_spin_up: Time) -> Self {
        EfficientFirst { fleet, fpga_spin_up, wait_pays_after: None, waits: false }
    }

    /// With the wait rule: a request that can start on a new FPGA at least `pays_after` after it is
    /// ready spins one up rather than a CPU (never while `pays_after` is `None`: an FPGA never pays).
    pub fn waiting(fleet: Fleet, fpga_spin_up: Time, pays_after: Option<Time>) -> Self {
        EfficientFirst { fleet, fpga_spin_up, wait_pays_after: pays_after, waits: true }
    }

    /// The board's speedup changed, and with it what a burst FPGA must take over to pay its spin-up
    /// (`pays_after_secs`, infinite when it never pays): the wait rule follows.
    pub fn respeed(&mut self, pays_after_secs: f64) {
        if self.waits {
            self.wait_pays_after = pays_after_secs.is_finite().then(|| from_secs(pays_after_secs));
        }
    }

    /// The worker types it places on.
    pub fn fleet(&self) -> Fleet {
        self.fleet
    }

    /// Where to run `job` at `now`.
    #[inline]
    pub fn place(&mut self, pool: &Pool, job: &Job, now: Time) -> Placement {
        self.place_from(pool, job, now, 0)
    }

    /// Whether its first step (the busiest active FPGA that meets the deadline) applies to `job`: a
    /// hardware dispatch engine takes that step in its place ([`Self::place_after_active_fpga`]).
    pub fn first_step_is_active_fpga(&self) -> bool {
        self.fleet.fpga
    }

    /// Where to run `job` at `now` when no active FPGA takes it (a dispatch engine rejected it): the
    /// rule's later steps, FPGAs still spinning up, then CPUs, then the fallback.
    pub fn place_after_active_fpga(&mut self, pool: &Pool, job: &Job, now: Time) -> Placement {
        self.place_from(pool, job, now, 1)
    }

    /// The rule from its `skip`-th step: (FPGA, active), (FPGA, allocating), (CPU, active), (CPU,
    /// allocating), each for the busiest worker that meets the deadline; then waiting or fallback.
    #[inline]
    fn place_from(&mut self, pool: &Pool, job: &Job, now: Time, skip: usize) -> Placement {
        let mut step = 0;
        for kind in Kind::EFFICIENT_FIRST {
            if !self.fleet.allows(kind) {
                step += 2;
                continue;
            }
            let Some(limit) = job.latest_start(kind) else {
                step += 2;
                continue;
            };
            for phase in [Phase::Active, Phase::Allocating] {
                step += 1;
                if step <= skip {
                    continue;
                }
                if let Some(w) = pool.latest_free_by(phase, kind, now, limit) {
                    return Placement::Assign(w);
                }
            }
        }
        if self.waits_for_fpga(job, now) {
            return Placement::SpinUp(Kind::Fpga);
        }
        fallback(pool, self.fleet, job, now, self.fpga_spin_up)
    }

    fn waits_for_fpga(&self, job: &Job, now: Time) -> bool {
        let Some(pays_after) = self.wait_pays_after else { return false };
        let ready = now.saturating_add(self.fpga_spin_up).saturating_add(pays_after);
        self.fleet.fpga && job.latest_start(Kind::Fpga).is_some_and(|ls| ready <= ls)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Platform;
    use crate::policy::objective::Objective;

    /// The wait rule follows the board's speedup: waited for while a burst FPGA pays (its payback
    /// `spin_up * B_f / (S * B_c - B_f)` at the new S), never once it does not, again when it pays.
    #[test]
    fn the_wait_rule_follows_the_speedup() {
        let mut platform = Platform::default();
        let pays = |p: &Platform| Objective::ENERGY.spin_up_pays_after_secs(p);
        let mut d =
            EfficientFirst::waiting(Fleet::HYBRID, platform.fpga.spin_up, Some(from_secs(pays(&platform))));
        platform.fpga.speedup = 0.2;
        d.respeed(pays(&platform));
        assert_eq!(d.wait_pays_after, None, "at S = 0.2 a board never pays: no request waits for one");
        platform.fpga.speedup = 4.0;
        d.respeed(pays(&platform));
        assert_eq!(d.wait_pays_after, Some(from_secs(pays(&platform))));
        let mut plain = EfficientFirst::new(Fleet::HYBRID, platform.fpga.spin_up);
        plain.respeed(1.0);
        assert_eq!(plain.wait_pays_after, None, "efficient-first without the rule never waits");
    }

    /// Where a 10 ms request due in 100 ms goes with an idle board of speedup `s` and an idle CPU,
    /// its services priced as the engine prices them (the board's own speed).
    fn placed_kind(s: f64) -> Kind {
        let mut platform = Platform::default();
        platform.fpga.speedup = s;
        let mut pool = Pool::new();
        pool.prewarm(Kind::Fpga, 0, 1);
        pool.prewarm(Kind::Cpu, 0, 1);
        let size = from_secs(0.01);
        let job = Job {
            deadline: from_secs(0.1),
            service: [platform.cpu.service(size), platform.fpga.service(size)],
        };
        match EfficientFirst::new(Fleet::HYBRID, platform.fpga.spin_up).place(&pool, &job, 0) {
            Placement::Assign(unit) => pool.worker(unit.worker).kind,
            Placement::SpinUp(kind) => panic!("spun up a {kind:?} with both workers idle"),
        }
    }

    #[test]
    fn a_board_too_slow_for_the_deadline_is_passed_over() {
        // At S = 0.2 the board takes 50 ms: in time. At S = 0.09 it takes 111 ms: past the deadline.
        assert_eq!(placed_kind(0.2), Kind::Fpga);
        assert_eq!(placed_kind(0.09), Kind::Cpu);
    }
}
