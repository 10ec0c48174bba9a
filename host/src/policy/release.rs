//! When an idle worker spins down.
//!
//! Every scheduler keeps a worker idle for as long as its type's spin-up time before releasing it
//! (section 5.1: insurance against repeated allocations). CPUs then always go; an FPGA goes only while
//! more FPGAs are allocated than the allocator's current target, so the allocator's count is held.

use crate::model::{Kind, Time};

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
