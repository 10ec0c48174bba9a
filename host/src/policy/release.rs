//! When an idle worker spins down.
//!
//! Every scheduler keeps a worker idle for as long as its type's spin-up time before releasing it
//! (section 5.1: insurance against repeated allocations). CPUs then always go; an FPGA goes only while
//! more FPGAs are allocated than the allocator's current target, so the allocator's count is held.

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

/// Whether a worker of `kind`, idle since `idle_since`, may start spinning down at `now`.
pub fn may_release(
    kind: Kind,
    idle_since: Time,
    now: Time,
    idle_timeout: Time,
    fpgas_allocated: u32,
    fpga_target: u32,
) -> bool {
    let timed_out = now >= idle_since.saturating_add(idle_timeout);
    match kind {
        Kind::Cpu => timed_out,
        Kind::Fpga => timed_out && fpgas_allocated > fpga_target,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fpgas_within_target_are_held() {
        assert!(!may_release(Kind::Fpga, 0, 100, 10, 3, 3));
        assert!(may_release(Kind::Fpga, 0, 100, 10, 4, 3));
        assert!(!may_release(Kind::Fpga, 95, 100, 10, 4, 3));
        assert!(may_release(Kind::Cpu, 0, 10, 10, 0, 0));
        assert!(!may_release(Kind::Cpu, 1, 10, 10, 0, 0));
    }
}
