//! An allocator that holds a fixed number of FPGAs: a benchmark's pool size.

use spork::policy::allocator::{Allocator, IntervalStats};

/// Holds `.0` FPGAs every interval.
pub struct Fixed(pub u32);

impl Allocator for Fixed {
    fn initial(&mut self) -> u32 {
        self.0
    }
    fn plan(&mut self, _: &IntervalStats) -> u32 {
        self.0
    }
}
