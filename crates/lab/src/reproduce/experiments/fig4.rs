//! Figure 4: the Spork variants against MArk-ideal with a 60 s FPGA spin-up, along burstiness.

use crate::reproduce::aggregate::Table;
use crate::reproduce::charts::{chart, efficiency_and_cost, lines};
use crate::reproduce::claims::{At, Check, Claim, Measure, SIM_CAUSE, pick, ratio, value};
use crate::reproduce::experiment::{Experiment, Inputs};
use crate::reproduce::jobs::{Job, sim, synthetic};
use crate::reproduce::metric::Metric::{
    self, CpuShare as CPU, EnergyEfficiency as EE, FpgaSpinUps as SU, RelativeCost as RC,
};
use crate::reproduce::plot::Chart;
use spork_core::model::{Platform, time::from_secs};
use spork_core::policy::Scheduler;
use spork_core::trace::SizeSpec;

/// Figure 4.
pub struct Fig4;

const ALL: At = &[];
const SWEEP: &[&str] = &["burstiness"];

/// The largest ratio of `a` to `b` over burstiness.
const fn up_to(a: &'static str, b: &'static str, m: Metric) -> Measure {
    ratio(pick(a, ALL, m), pick(b, ALL, m)).max_over(SWEEP)
}

/// The largest value of `s` over burstiness.
const fn most(s: &'static str, m: Metric) -> Measure {
    value(pick(s, ALL, m)).max_over(SWEEP)
}

const fn c(finding: &'static str, paper: f64, ours: Measure) -> Claim {
    Claim::new(finding, paper, ours, SIM_CAUSE)
}

const fn share(finding: &'static str, paper: f64, ours: Measure) -> Claim {
    Claim::share(finding, paper, ours, SIM_CAUSE)
}

static CLAIMS: [Claim; 10] = [
    c("SporkC / MArk-ideal energy efficiency, up to", 1.13, up_to("SporkC", "MArk-ideal", EE)),
    c("SporkE-ideal / MArk-ideal energy efficiency, up to", 2.1, up_to("SporkE-ideal", "MArk-ideal", EE)),
    c("SporkE / MArk-ideal energy efficiency, up to", 1.34, up_to("SporkE", "MArk-ideal", EE)),
    c(
        "SporkE / MArk-ideal cost at moderate burstiness 0.6",
        1.38,
        ratio(pick("SporkE", &[("burstiness", 0.6)], RC), pick("MArk-ideal", &[("burstiness", 0.6)], RC)),
    ),
    c(
        "SporkE-ideal / SporkE energy efficiency at burstiness 0.75, up to",
        1.75,
        ratio(pick("SporkE-ideal", &[("burstiness", 0.75)], EE), pick("SporkE", &[("burstiness", 0.75)], EE)),
    ),
    share("SporkE share of requests on CPUs, up to", 0.22, most("SporkE", CPU)),
    share("SporkE-ideal share of requests on CPUs, below about", 0.05, most("SporkE-ideal", CPU)),
    share("MArk-ideal share of requests on CPUs, up to", 0.5, most("MArk-ideal", CPU)),
    c("SporkE / MArk-ideal FPGA spin-ups, almost", 2.3, up_to("SporkE", "MArk-ideal", SU)),
    c("SporkE-ideal / MArk-ideal FPGA spin-ups, up to", 1.5, up_to("SporkE-ideal", "MArk-ideal", SU)),
];

impl Experiment for Fig4 {
    fn id(&self) -> &'static str {
        "fig4"
    }

    fn title(&self) -> &'static str {
        "Figure 4: Spork vs MArk-ideal, 60 s FPGA spin-up"
    }

    fn folders(&self) -> &'static [&'static str] {
        &["fig4"]
    }

    fn jobs(&self, inputs: &Inputs) -> Vec<Job> {
        let scale = &inputs.scale;
        let mut platform = Platform::default();
        platform.fpga.spin_up = from_secs(60.0);
        // MArk-ideal and the five Spork variants: the paper's list from MArk-ideal on.
        let schedulers = &Scheduler::PAPER[3..];
        let mut jobs = Vec::new();
        for &b in &scale.burstiness {
            for trace in 0..scale.traces {
                for &s in schedulers {
                    let source = synthetic(scale, b, SizeSpec::Short, trace);
                    jobs.push(sim("fig4", &[("burstiness", b)], trace, platform, source, s, None));
                }
            }
        }
        jobs
    }

    fn charts(&self, _folder: &str, t: &Table) -> Vec<Chart> {
        let max_su = t.points.iter().filter_map(|p| p.metrics.get(SU.key())).fold(1.0f64, |m, v| m.max(*v));
        let x = ("burstiness", "burstiness");
        let mut charts = efficiency_and_cost(t, "60 s spin-up", x, &[], (false, false)).to_vec();
        charts.push(chart("requests on CPUs", x.1, "share (%)", lines(t, x.0, &[], CPU, 100.0), false));
        charts.push(chart(
            "FPGA spin-ups (normalised to max)",
            x.1,
            "spin-ups / max",
            lines(t, x.0, &[], SU, 1.0 / max_su),
            false,
        ));
        charts
    }

    fn claims(&self) -> Vec<Claim> {
        CLAIMS.to_vec()
    }

    fn checks(&self, t: &Table) -> Vec<Check> {
        let mean = |s: &str, m: Metric| {
            let v: Vec<f64> = t
                .values("burstiness")
                .iter()
                .filter_map(|&b| t.get(s, &[("burstiness", b)], m.key()))
                .collect();
            v.iter().sum::<f64>() / v.len().max(1) as f64
        };
        let (ee_e, ee_c) = (mean("SporkE", EE), mean("SporkC", EE));
        let (rc_e, rc_c, rc_m) = (mean("SporkE", RC), mean("SporkC", RC), mean("MArk-ideal", RC));
        // The paper's "up to": the largest ratio over burstiness.
        let best = t
            .values("burstiness")
            .iter()
            .filter_map(|&b| {
                let at = [("burstiness", b)];
                Some(t.get("SporkC", &at, EE.key())? / t.get("MArk-ideal", &at, EE.key())?)
            })
            .fold(f64::NAN, f64::max);
        vec![
            Check {
                finding: "SporkE is more energy efficient than SporkC".into(),
                holds: ee_e > ee_c,
                detail: format!("mean over burstiness: SporkE {ee_e:.3}, SporkC {ee_c:.3}"),
            },
            Check {
                finding: "SporkC is cheaper than SporkE".into(),
                holds: rc_c < rc_e,
                detail: format!("mean relative cost: SporkC {rc_c:.3}, SporkE {rc_e:.3}"),
            },
            Check {
                finding:
                    "SporkC is more energy efficient than MArk-ideal at some burstiness (paper: up to 1.13x)"
                        .into(),
                holds: best > 1.0,
                detail: format!("SporkC / MArk-ideal energy efficiency, largest over burstiness: {best:.3}"),
            },
            Check {
                finding: "MArk-ideal costs about the same as SporkC (within 10%)".into(),
                holds: (rc_m / rc_c - 1.0).abs() <= 0.1,
                detail: format!("mean relative cost: MArk-ideal {rc_m:.3}, SporkC {rc_c:.3}"),
            },
        ]
    }
}
