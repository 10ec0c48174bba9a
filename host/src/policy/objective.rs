//! What an allocator minimises: a weighted sum of energy and cost.
//!
//! Energy (joules) and cost (dollars) are made commensurable by expressing both in "busy FPGA
//! seconds" of the platform at hand: energy is divided by the FPGA busy power and cost by the FPGA
//! price. SporkE is the weight pair (1, 0), SporkC (0, 1), SporkB (1/2, 1/2).

use crate::model::{Platform, time::to_secs};
use serde::Serialize;

/// Weights of energy and cost; they need not sum to one but both are non-negative.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Objective {
    /// Weight of energy.
    pub energy: f64,
    /// Weight of cost.
    pub cost: f64,
}

/// Per-second rates of the objective for the three activities Algorithm 2 weighs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rates {
    /// A CPU worker serving.
    pub cpu_busy: f64,
    /// An FPGA worker serving, spinning up or down.
    pub fpga_busy: f64,
    /// An FPGA worker allocated and idle.
    pub fpga_idle: f64,
}

impl Objective {
    /// SporkE: energy only.
    pub const ENERGY: Objective = Objective { energy: 1.0, cost: 0.0 };
    /// SporkC: cost only.
    pub const COST: Objective = Objective { energy: 0.0, cost: 1.0 };
    /// SporkB: energy and cost weighted equally.
    pub const BALANCED: Objective = Objective { energy: 0.5, cost: 0.5 };

    /// `energy_weight` on energy and the rest on cost; the weight must lie in [0, 1].
    pub fn weighted(energy_weight: f64) -> Option<Objective> {
        (0.0..=1.0)
            .contains(&energy_weight)
            .then_some(Objective { energy: energy_weight, cost: 1.0 - energy_weight })
    }

    /// The objective's per-second rates on `platform`, in busy-FPGA-second units.
    pub fn rates(&self, platform: &Platform) -> Rates {
        let e0 = platform.fpga.busy_power_w.max(f64::MIN_POSITIVE);
        let c0 = platform.fpga.price_per_sec().max(f64::MIN_POSITIVE);
        let rate = |power: f64, price_per_sec: f64| self.energy * power / e0 + self.cost * price_per_sec / c0;
        Rates {
            cpu_busy: rate(platform.cpu.busy_power_w, platform.cpu.price_per_sec()),
            fpga_busy: rate(platform.fpga.busy_power_w, platform.fpga.price_per_sec()),
            fpga_idle: rate(platform.fpga.idle_power_w, platform.fpga.price_per_sec()),
        }
    }

    /// The breakeven threshold T_b, in FPGA-seconds of work within one interval: above it, one more
    /// FPGA serves that remainder for less than CPUs would.
    ///
    /// Serving `r` FPGA-seconds on an extra FPGA for an interval T_s costs
    /// `r*fpga_busy + (T_s - r)*fpga_idle`; on CPUs it costs `r*S*cpu_busy`. Equating gives
    /// `T_b = T_s*fpga_idle / (S*cpu_busy - fpga_busy + fpga_idle)`. For energy this is Equation 1
    /// divided by S (Equation 1 states T_b in CPU-seconds, while Algorithm 1 compares it with
    /// FPGA-seconds); for cost it is exactly the paper's `T_s*C_f/(S*C_c)`. Infinite when an FPGA never
    /// pays off.
    pub fn breakeven_secs(&self, platform: &Platform) -> f64 {
        let r = self.rates(platform);
        let ts = to_secs(platform.interval());
        let denom = platform.fpga.speedup * r.cpu_busy - r.fpga_busy + r.fpga_idle;
        if denom <= 0.0 { f64::INFINITY } else { ts * r.fpga_idle / denom }
    }

    /// The work, in FPGA-seconds, an FPGA spun up for a burst must take over from CPUs to pay its
    /// spin-up (charged at the busy rate): `spin_up * B_f / (S * B_c - B_f)`. Infinite when an FPGA
    /// never saves over a CPU.
    pub fn spin_up_pays_after_secs(&self, platform: &Platform) -> f64 {
        let r = self.rates(platform);
        let saving = platform.fpga.speedup * r.cpu_busy - r.fpga_busy;
        if saving <= 0.0 { f64::INFINITY } else { to_secs(platform.fpga.spin_up) * r.fpga_busy / saving }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn breakeven_matches_paper_forms_on_defaults() {
        let p = Platform::default();
        // Equation 1: T_b*B_c = T_b/S*B_f + (T_s - T_b/S)*I_f, T_b in CPU seconds.
        let (bc, bf, i_f, s, ts) = (150.0, 50.0, 20.0, 2.0, 10.0);
        let tb_cpu = ts * i_f / (bc - bf / s + i_f / s);
        assert!((Objective::ENERGY.breakeven_secs(&p) - tb_cpu / s).abs() < 1e-9);
        // Cost form: T_b = T_s*C_f/(S*C_c).
        let tb_cost = ts * 0.982 / (s * 0.668);
        assert!((Objective::COST.breakeven_secs(&p) - tb_cost).abs() < 1e-9);
        // The balanced threshold lies between the two.
        let b = Objective::BALANCED.breakeven_secs(&p);
        assert!(b > tb_cpu / s && b < tb_cost, "{b}");
    }

    #[test]
    fn a_burst_fpga_pays_after_its_spin_up_energy_in_savings() {
        // Energy: 10 s * 50 W = 500 J to spin up; each FPGA-second taken from CPUs saves
        // 2 * 150 - 50 = 250 J: 2 s of work.
        let p = Platform::default();
        assert!((Objective::ENERGY.spin_up_pays_after_secs(&p) - 2.0).abs() < 1e-9);
    }

    #[test]
    fn fpga_that_never_pays_has_infinite_breakeven() {
        let mut p = Platform::default();
        p.fpga.busy_power_w = 1000.0;
        p.fpga.idle_power_w = 0.0;
        p.fpga.speedup = 1.0;
        assert!(Objective::ENERGY.breakeven_secs(&p).is_infinite());
        assert_eq!(Objective::weighted(1.5), None);
    }
}
