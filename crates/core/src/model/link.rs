//! The host link of a board: what one invocation costs beyond the kernel's own cycles.
//!
//! The paper's board charges a request its size over the speedup and nothing else. A real one also
//! pays, per invocation, the launch (arguments written, the run started, its completion seen) and
//! the transfer of the request's bytes to the card and back. Small requests are dominated by it,
//! which is what batching amortises: a batch is one invocation carrying the sum of its items.

use super::time::{Time, from_secs};
use serde::Serialize;

/// Published figures for XRT on an Alveo card, the live default when neither the profile nor the
/// bitstream manifest states its own.
pub mod published {
    /// One kernel invocation: 50 us, the low end of the 50-100 us launch latency reported on an
    /// Alveo U55C with Vitis 2022.1 (Xilinx/XRT issue 8687), and about the first `xrt::run` start
    /// (56 us) on an Alveo U25 with XRT 2.12 (Xilinx/XRT issue 6601).
    pub const INVOCATION_US: f64 = 50.0;
    /// Host to card and back: 9 GB/s, the slower (host-to-card) direction `xbutil validate`
    /// measures on an Alveo card over PCIe Gen3 x16 (AMD Vitis Tutorials XD099, "Determine the
    /// Maximum Achievable Throughput": about 9 GB/s written, 12 GB/s read).
    pub const TRANSFER_GB_PER_S: f64 = 9.0;
    /// Where the figures come from, as reports and manifests cite them.
    pub const SOURCE: &str = "XRT on Alveo: 50 us per invocation (Xilinx/XRT issues 8687, U55C: 50-100 us; \
                              6601, U25: 16-56 us), 9 GB/s host to card (Vitis Tutorials XD099, xbutil validate)";
}

/// A board's host link. Zero everywhere is the paper's board, and costs nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Link {
    /// Fixed cost of one invocation, paid once per job however many requests it carries.
    #[serde(serialize_with = "ser_secs")]
    pub invocation: Time,
    /// Transfer rate to the card and back, in bytes per second (0: transfers are not charged).
    pub bytes_per_s: f64,
    /// Bytes a request moves (its inputs and outputs) per CPU-second of its size: the kernel's data
    /// rate at the CPU reference's speed. A live run measures it; a simulation is told it.
    pub bytes_per_cpu_s: f64,
}

fn ser_secs<S: serde::Serializer>(t: &Time, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(super::time::to_secs(*t))
}

impl Link {
    /// The published XRT/Alveo figures ([`published`]), moving `bytes_per_cpu_s`.
    pub fn published(bytes_per_cpu_s: f64) -> Link {
        Link {
            invocation: from_secs(published::INVOCATION_US * 1e-6),
            bytes_per_s: published::TRANSFER_GB_PER_S * 1e9,
            bytes_per_cpu_s,
        }
    }

    /// `base` with the figures given over it; any figure given states a link (the others 0, not
    /// charged), none leaves `base` as it was. Profiles and flags both state links through here.
    pub fn stated(
        base: Option<Link>,
        invocation: Option<Time>,
        bytes_per_s: Option<f64>,
        bytes_per_cpu_s: Option<f64>,
    ) -> Option<Link> {
        if invocation.is_none() && bytes_per_s.is_none() && bytes_per_cpu_s.is_none() {
            return base;
        }
        let l = base.unwrap_or_default();
        Some(Link {
            invocation: invocation.unwrap_or(l.invocation),
            bytes_per_s: bytes_per_s.unwrap_or(l.bytes_per_s),
            bytes_per_cpu_s: bytes_per_cpu_s.unwrap_or(l.bytes_per_cpu_s),
        })
    }

    /// Whether it charges nothing (the paper's board).
    pub fn is_free(&self) -> bool {
        self.invocation == 0 && self.transfer_per_cpu_s() == 0.0
    }

    /// Seconds of transfer per CPU-second of request size.
    fn transfer_per_cpu_s(&self) -> f64 {
        if self.bytes_per_s > 0.0 { self.bytes_per_cpu_s / self.bytes_per_s } else { 0.0 }
    }

    /// Time `bytes` take across the link (0 when transfers are not charged).
    pub fn transfer(&self, bytes: u64) -> Time {
        if self.bytes_per_s > 0.0 { from_secs(bytes as f64 / self.bytes_per_s) } else { 0 }
    }

    /// What one invocation carrying `size` of work (CPU time, all its requests together) spends on
    /// the link: the invocation once, and its bytes.
    pub fn cost(&self, size: Time) -> Time {
        self.invocation + super::time::round(size as f64 * self.transfer_per_cpu_s())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_paper_board_costs_nothing() {
        assert!(Link::default().is_free());
        assert_eq!(Link::default().cost(1_000_000), 0);
    }

    #[test]
    fn a_batch_pays_one_invocation_and_all_its_bytes() {
        // 1 GB per CPU-second at 10 GB/s: a tenth of the size in transfer.
        let link = Link { invocation: 50_000, bytes_per_s: 1e10, bytes_per_cpu_s: 1e9 };
        assert_eq!(link.cost(1_000_000), 50_000 + 100_000);
        let four = 4 * 1_000_000;
        assert_eq!(link.cost(four), 50_000 + 400_000, "one invocation for four requests");
        assert!(link.cost(four) < 4 * link.cost(1_000_000));
        assert_eq!(link.transfer(10_000), 1_000);
    }

    #[test]
    fn published_figures_are_the_cited_ones() {
        let link = Link::published(0.0);
        assert_eq!(link.invocation, 50_000);
        assert_eq!(link.bytes_per_s, 9e9);
        assert_eq!(link.cost(1_000_000), 50_000, "no bytes, no transfer");
    }
}
