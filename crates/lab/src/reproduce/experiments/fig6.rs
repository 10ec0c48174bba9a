//! Figure 6: the sensitivity schedulers across FPGA speedup and busy power, at burstiness 0.6.

use super::{sensitivity_jobs, speed_and_power};
use crate::reproduce::aggregate::Table;
use crate::reproduce::charts::efficiency_and_cost;
use crate::reproduce::claims::{At, Claim, Measure, SIM_CAUSE, pick, ratio, value};
use crate::reproduce::experiment::{Experiment, Inputs};
use crate::reproduce::jobs::Job;
use crate::reproduce::metric::Metric::{
    self, EnergyEfficiency as EE, EnergyJ as E, IdleShare as IDLE, RelativeCost as RC,
};
use crate::reproduce::plot::Chart;
use spork_core::trace::SizeSpec;

/// Figure 6.
pub struct Fig6;

/// FPGA speedups swept.
const SPEEDUPS: [f64; 3] = [1.0, 2.0, 4.0];
/// FPGA busy powers swept, W.
const BUSY_W: [f64; 3] = [25.0, 50.0, 100.0];

const X1_50: At = &[("fpga_speedup", 1.0), ("fpga_busy_w", 50.0)];
const X4_50: At = &[("fpga_speedup", 4.0), ("fpga_busy_w", 50.0)];
const X2_25: At = &[("fpga_speedup", 2.0), ("fpga_busy_w", 25.0)];
const X2_100: At = &[("fpga_speedup", 2.0), ("fpga_busy_w", 100.0)];
const X4: At = &[("fpga_speedup", 4.0)];

/// `metric` of `s` at `a` over the same at `b`.
const fn between(s: &'static str, a: At, b: At, m: Metric) -> Measure {
    ratio(pick(s, a, m), pick(s, b, m))
}

/// `metric` of series `a` over series `b` at one point.
const fn against(a: &'static str, b: &'static str, at: At, m: Metric) -> Measure {
    ratio(pick(a, at, m), pick(b, at, m))
}

const fn c(finding: &'static str, paper: f64, ours: Measure) -> Claim {
    Claim::new(finding, paper, ours, SIM_CAUSE)
}

const fn share(finding: &'static str, paper: f64, ours: Measure) -> Claim {
    Claim::share(finding, paper, ours, SIM_CAUSE)
}

static CLAIMS: [Claim; 10] = [
    c(
        "SporkE energy, speedup 1 / speedup 4 (50 W): improvement 3.4-3.7x, midpoint",
        3.55,
        between("SporkE", X1_50, X4_50, E),
    ),
    c(
        "CPU-dynamic / FPGA-dynamic cost at 4x speedup: FPGA-dynamic cheaper by up to",
        1.47,
        against("CPU-dynamic", "FPGA-dynamic", X4, RC).max_over(&["fpga_busy_w"]),
    ),
    c(
        "FPGA-static energy, busy 100 W / 25 W (speedup 2): about",
        2.0,
        between("FPGA-static", X2_100, X2_25, E),
    ),
    c("SporkE energy, busy 100 W / 25 W (speedup 2): over", 3.0, between("SporkE", X2_100, X2_25, E)),
    share("FPGA-static idle share of energy at 100 W", 0.33, value(pick("FPGA-static", X2_100, IDLE))),
    share("FPGA-static idle share of energy at 25 W, over", 0.66, value(pick("FPGA-static", X2_25, IDLE))),
    share("SporkE idle share of energy at 100 W", 0.04, value(pick("SporkE", X2_100, IDLE))),
    share("SporkE idle share of energy at 25 W", 0.13, value(pick("SporkE", X2_25, IDLE))),
    c(
        "SporkE / FPGA-dynamic energy efficiency at 100 W",
        1.04,
        against("SporkE", "FPGA-dynamic", X2_100, EE),
    ),
    c("SporkE / FPGA-dynamic energy efficiency at 25 W", 1.12, against("SporkE", "FPGA-dynamic", X2_25, EE)),
];

impl Experiment for Fig6 {
    fn id(&self) -> &'static str {
        "fig6"
    }

    fn title(&self) -> &'static str {
        "Figure 6: FPGA speedup x busy power"
    }

    fn folders(&self) -> &'static [&'static str] {
        &["fig6"]
    }

    fn jobs(&self, inputs: &Inputs) -> Vec<Job> {
        speed_and_power(&SPEEDUPS, &BUSY_W)
            .into_iter()
            .flat_map(|(platform, at)| {
                sensitivity_jobs("fig6", &at, &inputs.scale, platform, 0.6, SizeSpec::Short)
            })
            .collect()
    }

    fn charts(&self, _folder: &str, t: &Table) -> Vec<Chart> {
        t.values("fpga_speedup")
            .into_iter()
            .flat_map(|s| {
                let x = ("fpga_busy_w", "FPGA busy power (W)");
                efficiency_and_cost(t, &format!("{s}x speedup"), x, &[("fpga_speedup", s)], (true, true))
            })
            .collect()
    }

    fn claims(&self) -> Vec<Claim> {
        CLAIMS.to_vec()
    }
}
