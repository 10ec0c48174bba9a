//! SporkD: Spork's allocator with a deadline-aware needed count.
//!
//! Algorithm 2 is unchanged on top (the histogram of needed counts conditioned on the count two
//! intervals earlier, the expected objective, amortised spin-ups); only what an interval "needed" is
//! counted from its arrivals and their deadlines ([`ArrivalProfile`]) instead of its average work:
//! - when every request could wait out an FPGA's spin-up (least slack >= spin-up), the count may fall
//!   below the interval's average work: the backlog waits, and a burst beyond the held FPGAs waits
//!   for new ones (SporkD's dispatcher, `efficient-first-wait`) rather than taking CPUs;
//! - otherwise work cannot wait for capacity that comes later, so the count is never below
//!   Algorithm 1's, and rises above it when the interval's peaks need more than its average.

use super::deadline::ArrivalProfile;
use super::{Allocator, IntervalStats, SporkAllocator};
use crate::model::{Platform, Time, pool::Released};
use crate::policy::objective::Objective;

/// Deadline-aware Spork (`spork-d`, `spork-d:W`).
#[derive(Clone, Debug)]
pub struct SporkD {
    spork: SporkAllocator,
    profile: ArrivalProfile,
    interval: Time,
    spin_up_s: f64,
}

impl SporkD {
    /// An allocator minimising `objective` on `platform`, with empty history.
    pub fn new(objective: Objective, platform: &Platform) -> Self {
        SporkD {
            spork: SporkAllocator::new(objective, platform),
            profile: ArrivalProfile::new(platform.interval()),
            interval: platform.interval(),
            spin_up_s: crate::model::time::to_secs(platform.fpga.spin_up),
        }
    }
}

impl Allocator for SporkD {
    fn on_arrival(&mut self, at: Time, fpga_service: Time, deadline: Time) {
        self.profile.record(at, fpga_service, deadline);
    }

    fn plan(&mut self, stats: &IntervalStats) -> u32 {
        let need = self.profile.close(self.interval.saturating_mul(stats.index as Time));
        if stats.index == 0 {
            return stats.fpgas_allocated; // no interval has run yet
        }
        let by_deadline = self.spork.round(need.fpgas);
        let needed = if need.least_slack_s >= self.spin_up_s {
            by_deadline
        } else {
            by_deadline.max(self.spork.needed(stats))
        };
        self.spork.learn_and_predict(needed, stats.fpgas_allocated)
    }

    fn on_release(&mut self, released: &Released) {
        self.spork.on_release(released);
    }

    fn respeed(&mut self, platform: &Platform) {
        self.spork.respeed(platform);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::time::from_secs;

    #[test]
    fn the_needed_count_comes_from_the_deadlines() {
        // Paper platform: T_s = spin-up = 10 s, energy breakeven 200/270 = 0.74 s of work. Each
        // interval, 40 FPGA-s arrive at its start: Algorithm 1 counts 4 FPGAs whatever the deadline.
        // Slack 1 s: 40 / 1.05 = 38.10 FPGAs (remainder 0.95 s of work > 0.74: 39), the burst drained
        // within the interval. Slack 30 s (beyond the spin-up: the work may wait): 40 / 30.05 = 1.33
        // (3.3 s > 0.74: 2), leaving 39.93 queued; the next interval needs (39.93 + 40) / 30.05 = 2.66
        // (3). Slack 5 s, which cannot wait out a spin-up: 40 / 5.05 = 7.9 (8), never below 4.
        let platform = Platform::default();
        let run = |slack: f64| {
            let mut d = SporkD::new(Objective::ENERGY, &platform);
            let mut plans = vec![];
            for t in 0..6u64 {
                let at = from_secs(10.0 * t as f64);
                d.on_arrival(at, from_secs(40.0), at + from_secs(40.0 + slack));
                let stats = IntervalStats {
                    index: t as usize + 1,
                    fpga_work: from_secs(40.0),
                    cpu_work: 0,
                    fpgas_allocated: 4,
                };
                plans.push(d.plan(&stats));
            }
            plans
        };
        // The first plans have no histogram yet: they keep the last need.
        assert_eq!(run(1.0)[..2], [39, 39]);
        assert_eq!(run(30.0)[..2], [2, 3]);
        assert_eq!(run(5.0)[..2], [8, 8]);
    }
}
