//! Figure 7: the sensitivity schedulers across request-size buckets (size 0 short, 1 medium, 2 long).

use super::sensitivity_jobs;
use crate::reproduce::aggregate::Table;
use crate::reproduce::charts::{EE, RC, chart, lines};
use crate::reproduce::claims::{At, Claim, Measure, SIM_CAUSE, pick, ratio};
use crate::reproduce::experiment::{Experiment, Inputs};
use crate::reproduce::jobs::{Job, SIZES};
use crate::reproduce::metric::Metric::{self, EnergyEfficiency, RelativeCost};
use crate::reproduce::plot::Chart;
use spork_core::model::Platform;

/// Figure 7.
pub struct Fig7;

/// Parameters of each size bucket's point, in the order of [`SIZES`].
pub(crate) const SIZE_AT: [At; 3] = [&[("size", 0.0)], &[("size", 1.0)], &[("size", 2.0)]];

/// `metric` of `s` at size `a` over the same at size `b`.
const fn between(s: &'static str, a: usize, b: usize, m: Metric) -> Measure {
    ratio(pick(s, SIZE_AT[a], m), pick(s, SIZE_AT[b], m))
}

static CLAIMS: [Claim; 3] = [
    Claim::new(
        "FPGA-static energy efficiency, long / short requests: up to",
        1.16,
        between("FPGA-static", 2, 0, EnergyEfficiency),
        SIM_CAUSE,
    ),
    Claim::new(
        "FPGA-dynamic energy efficiency, long / short requests",
        1.3,
        between("FPGA-dynamic", 2, 0, EnergyEfficiency),
        SIM_CAUSE,
    ),
    Claim::new(
        "FPGA-dynamic cost, short / long requests",
        1.7,
        between("FPGA-dynamic", 0, 2, RelativeCost),
        SIM_CAUSE,
    ),
];

/// Efficiency and cost of every series along request size (Figure 7 and Table 9).
pub(crate) fn by_size(t: &Table) -> Vec<Chart> {
    let x = "size (0 short, 1 medium, 2 long)";
    vec![
        chart(
            "energy efficiency by request size",
            x,
            EE,
            lines(t, "size", &[], EnergyEfficiency, 100.0),
            false,
        ),
        chart("relative cost by request size", x, RC, lines(t, "size", &[], RelativeCost, 1.0), false),
    ]
}

impl Experiment for Fig7 {
    fn id(&self) -> &'static str {
        "fig7"
    }

    fn title(&self) -> &'static str {
        "Figure 7: request sizes"
    }

    fn folders(&self) -> &'static [&'static str] {
        &["fig7"]
    }

    fn jobs(&self, inputs: &Inputs) -> Vec<Job> {
        let platform = Platform::default();
        (SIZES.iter().zip(SIZE_AT))
            .flat_map(|((size, _), at)| sensitivity_jobs("fig7", at, &inputs.scale, platform, 0.6, *size))
            .collect()
    }

    fn charts(&self, _folder: &str, t: &Table) -> Vec<Chart> {
        by_size(t)
    }

    fn claims(&self) -> Vec<Claim> {
        CLAIMS.to_vec()
    }
}
