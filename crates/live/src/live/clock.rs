//! The runtime's clock: wall time since the run started, in the policy's integer nanoseconds.
//!
//! A run takes its clock as a parameter. Tests can move it forward ([`Clock::advance`]) to make a
//! grace period pass at once instead of waiting it out. Workers, the load generator and the
//! dispatcher read the same clock, so a jump moves everything: running board jobs pass their
//! timeouts, the skipped span counts as wall time (and idle energy), and arrivals it skipped over
//! come at once.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use spork_core::model::Time;

/// Wall time since an origin, plus whatever a test advanced it by.
#[derive(Clone, Debug)]
pub struct Clock {
    origin: Instant,
    skip: Arc<AtomicU64>,
}

impl Default for Clock {
    fn default() -> Self {
        Clock::start()
    }
}

impl Clock {
    /// A clock at 0 now.
    pub fn start() -> Clock {
        Clock { origin: Instant::now(), skip: Arc::new(AtomicU64::new(0)) }
    }

    /// Now.
    pub fn now(&self) -> Time {
        self.origin.elapsed().as_nanos() as Time + self.skip.load(Ordering::Relaxed)
    }

    /// The wall-clock instant at which this clock reads `t` (in the past if it already has).
    pub fn instant(&self, t: Time) -> Instant {
        let wall = t.saturating_sub(self.skip.load(Ordering::Relaxed));
        self.origin + Duration::from_nanos(wall)
    }

    /// Moves the clock forward by `by` for everyone reading it.
    pub fn advance(&self, by: Duration) {
        self.skip.fetch_add(by.as_nanos() as u64, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advancing_moves_now_and_instants_together() {
        let c = Clock::start();
        let before = c.now();
        c.advance(Duration::from_secs(5));
        assert!(c.now() >= before + 5_000_000_000);
        assert!(c.instant(c.now()) <= Instant::now());
    }
}
