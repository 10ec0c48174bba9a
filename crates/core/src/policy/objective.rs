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

/// A platform on which no board pays at the objective, even fully used: its allocator holds none.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct NeverPays {
    /// The board's speedup over a CPU worker.
    pub speedup: f64,
    /// The speedup above which a fully used board would pay.
    pub needs: f64,
}

impl NeverPays {
    /// The run report's line for `what` (a model's or a trace's name).
    pub fn describe(&self, what: &str) -> String {
        format!("FPGA never pays for {what} at S = {:.2}: it needs S > {:.2}", self.speedup, self.needs)
    }
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

    /// What a fully used board saves per second over the CPUs that would do its work, in the
    /// objective's units: `N*S*cpu_busy - (fpga_idle + N*(fpga_busy - fpga_idle))` for a board of N
    /// compute units, `S*cpu_busy - fpga_busy` for the paper's one. Boards are held only where this
    /// is positive; it is positive exactly when the breakeven is below a board's capacity, which is
    /// how [`crate::policy::needed_fpgas`] applies it.
    pub fn full_board_saving(&self, platform: &Platform) -> f64 {
        let r = self.rates(platform);
        let n = f64::from(platform.fpga_compute_units());
        n * platform.fpga.speedup * r.cpu_busy - (r.fpga_idle + n * (r.fpga_busy - r.fpga_idle))
    }

    /// Whether a fully used board costs less than CPUs at this objective (see
    /// [`Self::full_board_saving`]).
    pub fn board_pays(&self, platform: &Platform) -> bool {
        self.full_board_saving(platform) > 0.0
    }

    /// The speedup a board needs to pay when fully used: `(fpga_idle + N*(fpga_busy - fpga_idle)) /
    /// (N*cpu_busy)`, `fpga_busy / cpu_busy` for a one-CU board (1/3 at the paper's powers).
    pub fn paying_speedup(&self, platform: &Platform) -> f64 {
        let r = self.rates(platform);
        let n = f64::from(platform.fpga_compute_units());
        (r.fpga_idle + n * (r.fpga_busy - r.fpga_idle)) / (n * r.cpu_busy)
    }

    /// `Some` when no board ever pays on `platform` at this objective: the figures a run report
    /// states ("FPGA never pays ... it needs S > ...").
    pub fn never_pays(&self, platform: &Platform) -> Option<NeverPays> {
        (!self.board_pays(platform))
            .then(|| NeverPays { speedup: platform.fpga.speedup, needs: self.paying_speedup(platform) })
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
    fn a_full_board_pays_above_a_third_at_the_paper_powers() {
        // CPU 150 W busy, FPGA 50 W busy, 20 W idle: a full board pays when S x 150 > 50.
        let at = |s: f64| {
            let mut p = Platform::default();
            p.fpga.speedup = s;
            p
        };
        assert!((Objective::ENERGY.paying_speedup(&at(2.0)) - 1.0 / 3.0).abs() < 1e-12);
        assert!(!Objective::ENERGY.board_pays(&at(0.333)));
        assert!(Objective::ENERGY.board_pays(&at(0.334)));
        let never = Objective::ENERGY.never_pays(&at(0.19)).map(|n| n.describe("polyscan"));
        assert_eq!(never.as_deref(), Some("FPGA never pays for polyscan at S = 0.19: it needs S > 0.33"));
        assert_eq!(Objective::ENERGY.never_pays(&at(0.34)), None);
        // Cost: a board's price over a CPU's, 0.982 / 0.668 = 1.47.
        assert!((Objective::COST.paying_speedup(&at(2.0)) - 0.982 / 0.668).abs() < 1e-12);
        assert!(!Objective::COST.board_pays(&at(1.0)) && Objective::COST.board_pays(&at(1.5)));
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
