//! The evaluator's figures beside a live run: the same engine, constructor, seed and trace, in
//! virtual time.

use serde::Serialize;

use spork_core::engine::Outcome;
use spork_core::model::{Kind, Platform};

/// What the policy predicted for the run.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Prediction {
    /// Share on FPGAs.
    pub fpga_share: f64,
    /// FPGA spin-ups.
    pub fpga_spin_ups: u64,
    /// Miss share.
    pub miss_share: f64,
    /// Requests rejected (a cap with no worker, or bounded admission: no queue into a miss).
    pub rejected: u64,
    /// Energy (J) [CPU, FPGA].
    pub energy_j: [f64; 2],
}

impl Prediction {
    /// From the engine's outcome of a virtual-time run on `platform`.
    pub fn from_outcome(o: &Outcome, platform: &Platform) -> Prediction {
        let energy = |k: Kind| o.pool.ledger(k).energy(platform.spec(k)).total_j();
        Prediction {
            fpga_share: o.tally.share(o.tally.served[Kind::Fpga]),
            fpga_spin_ups: o.pool.ledger(Kind::Fpga).spin_ups,
            miss_share: o.tally.share(o.tally.misses),
            rejected: o.tally.rejected,
            energy_j: [energy(Kind::Cpu), energy(Kind::Fpga)],
        }
    }
}
