//! What one live pool may hold at once, checked before it starts: threads are bounded by
//! configuration, never by a count the policy computes, and no request's inputs may exceed a size
//! this machine can build.

use spork_core::model::time::to_secs;
use spork_core::model::{Kind, PerKind, Request};
use spork_core::policy::Caps;

/// The bounds of a live run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Worker threads per type at once (a cap the engine applies like `--max-cpu`/`--max-fpga`).
    pub workers: u32,
    /// Input items of one request (64 Mi: at least 64 MiB of input data).
    pub request_items: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { workers: 256, request_items: 64 << 20 }
    }
}

/// A run beyond its limits.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum LimitError {
    /// A request whose inputs are too large to build.
    #[error(
        "a request of {size_s} s of CPU time needs {items} input items at this machine's {rate:.3e} items/s, \
         beyond the live limit of {limit}\n  fix: smaller requests (--size, or size_ms in the trace file)"
    )]
    Request {
        /// The largest request's CPU time (mandatory plus optional), s.
        size_s: f64,
        /// Its items.
        items: u64,
        /// The CPU reference's rate.
        rate: f64,
        /// The limit.
        limit: u64,
    },
}

impl Limits {
    /// Checks a trace's `requests`, built at `rate` input items per second of CPU time, against the
    /// limits.
    pub fn check(&self, requests: &[Request], rate: f64) -> Result<(), LimitError> {
        let largest = requests.iter().map(|r| r.size.saturating_add(r.optional)).max().unwrap_or(0);
        let items = to_secs(largest) * rate;
        if items > self.request_items as f64 {
            return Err(LimitError::Request {
                size_s: to_secs(largest),
                items: items as u64,
                rate,
                limit: self.request_items,
            });
        }
        Ok(())
    }

    /// `caps` within the thread limit for each type: a board of `fpga_units` compute units runs a
    /// thread per CU, so it may hold `workers / fpga_units` boards (at least one).
    pub fn caps(&self, caps: Caps, fpga_units: u32) -> Caps {
        let most = |k: Kind| match k {
            Kind::Cpu => self.workers,
            Kind::Fpga => (self.workers / fpga_units.max(1)).max(1),
        };
        Caps(PerKind::from_fn(|k: Kind| Some(caps.0[k].map_or(most(k), |c| c.min(most(k))))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boards_of_several_cus_count_a_thread_per_cu_against_the_limit() {
        let l = Limits { workers: 256, ..Limits::default() };
        assert_eq!(l.caps(Caps::NONE, 1).0, PerKind::new(Some(256), Some(256)));
        assert_eq!(l.caps(Caps::NONE, 64).0, PerKind::new(Some(256), Some(4)));
        assert_eq!(l.caps(Caps(PerKind::new(Some(3), Some(2))), 64).0, PerKind::new(Some(3), Some(2)));
        assert_eq!(Limits { workers: 8, ..l }.caps(Caps::NONE, 64).0.fpga, Some(1), "one board at least");
    }
}
