//! Figure 5: the sensitivity schedulers across burstiness and FPGA spin-up time.

use super::sensitivity_jobs;
use crate::reproduce::aggregate::Table;
use crate::reproduce::charts::efficiency_and_cost;
use crate::reproduce::claims::{At, Check, Claim, Measure, SIM_CAUSE, pick, ratio};
use crate::reproduce::experiment::{Experiment, Inputs};
use crate::reproduce::jobs::Job;
use crate::reproduce::metric::Metric::{self, EnergyEfficiency as EE, RelativeCost as RC};
use crate::reproduce::plot::Chart;
use spork_core::model::{Platform, time::from_secs};
use spork_core::trace::SizeSpec;

/// Figure 5.
pub struct Fig5;

/// The largest ratio of `a` to `b` over every burstiness and spin-up.
const fn up_to(a: &'static str, b: &'static str, m: Metric) -> Measure {
    ratio(pick(a, &[], m), pick(b, &[], m)).max_over(&["burstiness", "fpga_spin_up_s"])
}

const HIGH: At = &[("burstiness", 0.75)];

/// The largest ratio of `a` to `b` over spin-up at burstiness 0.75.
const fn up_to_at_high(a: &'static str, b: &'static str, m: Metric) -> Measure {
    ratio(pick(a, HIGH, m), pick(b, HIGH, m)).max_over(&["fpga_spin_up_s"])
}

/// The ratio of `a` to `b` at one point.
const fn at(a: &'static str, b: &'static str, point: At, m: Metric) -> Measure {
    ratio(pick(a, point, m), pick(b, point, m))
}

const B6_S10: At = &[("burstiness", 0.6), ("fpga_spin_up_s", 10.0)];
const B75_S10: At = &[("burstiness", 0.75), ("fpga_spin_up_s", 10.0)];
const B6_S100: At = &[("burstiness", 0.6), ("fpga_spin_up_s", 100.0)];

const fn c(finding: &'static str, paper: f64, ours: Measure) -> Claim {
    Claim::new(finding, paper, ours, SIM_CAUSE)
}

static CLAIMS: [Claim; 13] = [
    c(
        "FPGA-static / CPU-dynamic cost: CPU-dynamic cheaper by up to",
        11.8,
        up_to("FPGA-static", "CPU-dynamic", RC),
    ),
    c(
        "SporkE / CPU-dynamic energy efficiency at burstiness 0.75, up to",
        5.6,
        up_to_at_high("SporkE", "CPU-dynamic", EE),
    ),
    c(
        "CPU-dynamic / SporkE cost at burstiness 0.75: SporkE cheaper by up to",
        1.2,
        up_to_at_high("CPU-dynamic", "SporkE", RC),
    ),
    c("SporkE / FPGA-dynamic energy efficiency, up to", 2.5, up_to("SporkE", "FPGA-dynamic", EE)),
    c("FPGA-dynamic / SporkE cost: SporkE cheaper by up to", 8.4, up_to("FPGA-dynamic", "SporkE", RC)),
    c("SporkE / FPGA-static energy efficiency, up to", 6.0, up_to("SporkE", "FPGA-static", EE)),
    c("FPGA-static / SporkE cost: SporkE cheaper by up to", 13.9, up_to("FPGA-static", "SporkE", RC)),
    c(
        "SporkE / FPGA-dynamic energy efficiency, 10 s spin-up, burstiness 0.6",
        1.1,
        at("SporkE", "FPGA-dynamic", B6_S10, EE),
    ),
    c(
        "FPGA-dynamic / SporkE cost, 10 s spin-up, burstiness 0.6",
        1.4,
        at("FPGA-dynamic", "SporkE", B6_S10, RC),
    ),
    c(
        "SporkE / FPGA-dynamic energy efficiency, 10 s spin-up, burstiness 0.75",
        1.8,
        at("SporkE", "FPGA-dynamic", B75_S10, EE),
    ),
    c(
        "FPGA-dynamic / SporkE cost, 10 s spin-up, burstiness 0.75",
        3.6,
        at("FPGA-dynamic", "SporkE", B75_S10, RC),
    ),
    c(
        "SporkE / FPGA-static energy efficiency, 100 s spin-up, burstiness 0.6",
        1.08,
        at("SporkE", "FPGA-static", B6_S100, EE),
    ),
    c(
        "FPGA-static / SporkE cost, 100 s spin-up, burstiness 0.6",
        2.3,
        at("FPGA-static", "SporkE", B6_S100, RC),
    ),
];

impl Experiment for Fig5 {
    fn id(&self) -> &'static str {
        "fig5"
    }

    fn title(&self) -> &'static str {
        "Figure 5: burstiness x FPGA spin-up"
    }

    fn folders(&self) -> &'static [&'static str] {
        &["fig5"]
    }

    fn jobs(&self, inputs: &Inputs) -> Vec<Job> {
        let scale = &inputs.scale;
        let mut jobs = Vec::new();
        for &spin in &scale.spin_ups {
            let mut platform = Platform::default();
            platform.fpga.spin_up = from_secs(spin);
            for &b in &scale.burstiness {
                let at = [("burstiness", b), ("fpga_spin_up_s", spin)];
                jobs.extend(sensitivity_jobs("fig5", &at, scale, platform, b, SizeSpec::Short));
            }
        }
        jobs
    }

    fn charts(&self, _folder: &str, t: &Table) -> Vec<Chart> {
        t.values("fpga_spin_up_s")
            .into_iter()
            .flat_map(|s| {
                let x = ("burstiness", "burstiness");
                efficiency_and_cost(t, &format!("{s} s spin-up"), x, &[("fpga_spin_up_s", s)], (false, true))
            })
            .collect()
    }

    fn claims(&self) -> Vec<Claim> {
        CLAIMS.to_vec()
    }

    fn checks(&self, t: &Table) -> Vec<Check> {
        let (worst_cpu, worst_static) = worst_ratios(t);
        vec![
            Check {
                finding: "SporkE is more energy efficient than CPU-dynamic at every burstiness and spin-up"
                    .into(),
                holds: worst_cpu > 1.0,
                detail: format!("smallest SporkE / CPU-dynamic efficiency ratio {worst_cpu:.2}"),
            },
            Check {
                finding: "SporkE is cheaper than FPGA-static at every burstiness from 0.6 and every spin-up"
                    .into(),
                holds: worst_static > 1.0,
                detail: format!("smallest FPGA-static / SporkE cost ratio {worst_static:.2}"),
            },
        ]
    }
}

/// The smallest SporkE / CPU-dynamic efficiency ratio and FPGA-static / SporkE cost ratio over
/// burstiness from 0.6: the paper's cost claim is about bursty load; at uniform load (0.5) a static
/// pool is right-sized.
fn worst_ratios(t: &Table) -> (f64, f64) {
    let mut worst_cpu = f64::INFINITY;
    let mut worst_static = f64::INFINITY;
    for b in t.values("burstiness").into_iter().filter(|&b| b >= 0.6) {
        for sp in t.values("fpga_spin_up_s") {
            let g = |s: &str, m: Metric| {
                t.get(s, &[("burstiness", b), ("fpga_spin_up_s", sp)], m.key()).unwrap_or(f64::NAN)
            };
            worst_cpu = worst_cpu.min(g("SporkE", EE) / g("CPU-dynamic", EE));
            worst_static = worst_static.min(g("FPGA-static", RC) / g("SporkE", RC));
        }
    }
    (worst_cpu, worst_static)
}
