//! When an idle worker spins down.
//!
//! Every scheduler keeps a worker idle for as long as its type's spin-up time before releasing it
//! (section 5.1: insurance against repeated allocations). An FPGA then goes only while more FPGAs are
//! allocated than the allocator's current target, so the allocator's count is held; a CPU goes while
//! more CPUs are allocated than the plan's floor (none in the paper, so CPUs always go).

use crate::model::{Kind, Time};
use std::fmt;
use std::str::FromStr;

/// When a surplus FPGA's idle countdown starts, and which plan releases are judged against.
///
/// The paper plans n_{t+1} at the start of interval t "to have the time to spin up any needed FPGAs"
/// (section 4.2), keeps an idle worker "for as long as the allocation duration" (section 5.1) and
/// deallocates it "after keeping them idle for a fixed duration" (section 4.1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReleaseTiming {
    /// Ours so far: releases follow the newest plan (n_{t+1}) at once, and an FPGA's countdown
    /// starts when its queue drains, so a surplus FPGA may go mid-interval right after the plan drops.
    #[default]
    Drained,
    /// The paper's reading: interval t's releases are judged against the larger of n_t and n_{t+1},
    /// and a surplus FPGA's countdown starts no earlier than when the pool became surplus.
    Planned,
}

impl ReleaseTiming {
    /// Both, in CLI order.
    pub const ALL: [ReleaseTiming; 2] = [ReleaseTiming::Drained, ReleaseTiming::Planned];

    /// Kebab-case name.
    pub fn name(self) -> &'static str {
        match self {
            ReleaseTiming::Drained => "drained",
            ReleaseTiming::Planned => "planned",
        }
    }
}

impl ReleaseTiming {
    /// The FPGA count releases are judged against in the interval that starts now, given the plan
    /// `want` (n_{t+1}) and the previous one `planned` (n_t).
    pub fn held(self, want: u32, planned: u32) -> u32 {
        match self {
            ReleaseTiming::Drained => want,
            ReleaseTiming::Planned => want.max(planned),
        }
    }

    /// Since when the pool has held a surplus, at `now`: it began `since` (if it had one), and it now
    /// holds `allocated` FPGAs against `target`. Always `None` under `Drained`.
    pub fn surplus_since(self, since: Option<Time>, allocated: u32, target: u32, now: Time) -> Option<Time> {
        (self == ReleaseTiming::Planned && allocated > target).then(|| since.unwrap_or(now))
    }
}

/// Since when a worker counts as idle for the release rule: its queue drained at `busy_until`, and an
/// FPGA's countdown starts no earlier than the pool's surplus (`surplus_since`, only under `Planned`).
pub fn idle_since(kind: Kind, busy_until: Time, surplus_since: Option<Time>) -> Time {
    match kind {
        Kind::Fpga => busy_until.max(surplus_since.unwrap_or(0)),
        Kind::Cpu => busy_until,
    }
}

impl fmt::Display for ReleaseTiming {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A release timing that is neither `drained` nor `planned`.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("unknown release timing '{0}': expected drained or planned")]
pub struct UnknownReleaseTiming(pub String);

impl FromStr for ReleaseTiming {
    type Err = UnknownReleaseTiming;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        super::by_name(&Self::ALL, |t| t.name(), s).ok_or_else(|| UnknownReleaseTiming(s.to_string()))
    }
}

/// Whether a worker, idle since `idle_since`, may start spinning down at `now`: once idle for
/// `idle_timeout`, while its type holds more workers (`allocated`) than the pool keeps of it (`keep`:
/// the FPGA target, or the CPU floor).
pub fn may_release(idle_since: Time, now: Time, idle_timeout: Time, allocated: u32, keep: u32) -> bool {
    now >= idle_since.saturating_add(idle_timeout) && allocated > keep
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_planned_timing_holds_the_last_plan_and_counts_from_the_surplus() {
        assert_eq!(ReleaseTiming::Drained.held(2, 5), 2);
        assert_eq!(ReleaseTiming::Planned.held(2, 5), 5);
        assert_eq!(ReleaseTiming::Drained.surplus_since(None, 5, 2, 7), None);
        assert_eq!(ReleaseTiming::Planned.surplus_since(None, 5, 2, 7), Some(7));
        assert_eq!(ReleaseTiming::Planned.surplus_since(Some(3), 5, 2, 7), Some(3));
        assert_eq!(ReleaseTiming::Planned.surplus_since(Some(3), 2, 2, 7), None);
        assert_eq!(idle_since(Kind::Fpga, 4, Some(9)), 9);
        assert_eq!(idle_since(Kind::Cpu, 4, Some(9)), 4);
        assert_eq!(idle_since(Kind::Fpga, 4, None), 4);
    }

    #[test]
    fn workers_the_pool_keeps_are_held() {
        assert!(!may_release(0, 100, 10, 3, 3), "an FPGA within the target");
        assert!(may_release(0, 100, 10, 4, 3));
        assert!(!may_release(95, 100, 10, 4, 3), "not idle long enough");
        assert!(may_release(0, 10, 10, 1, 0), "a CPU with no floor goes once timed out");
        assert!(!may_release(1, 10, 10, 1, 0));
        assert!(!may_release(0, 10, 10, 2, 2), "CPUs at the floor stay");
    }
}
