//! Table 8: the nine schedulers on the production traces (Azure Functions 2019, Alibaba
//! microservices 2021), short and medium requests, aggregated over applications.

use crate::reproduce::aggregate::{Combine, Table};
use crate::reproduce::charts::by_dataset;
use crate::reproduce::claims::{At, Claim, pick, value};
use crate::reproduce::experiment::{Experiment, Inputs};
use crate::reproduce::jobs::{Job, sim};
use crate::reproduce::metric::Metric;
use crate::reproduce::plot::Chart;
use spork_core::model::Platform;
use spork_core::policy::Scheduler;
use spork_core::trace::production::{ALIBABA_URL, AZURE_URL};
use std::borrow::Cow;

/// Table 8.
pub struct Table8;

/// Table 8 as printed: per scheduler, energy efficiency and relative cost for each of [`CELLS`].
const ROWS: [(&str, [f64; 8]); 9] = [
    ("CPU-dynamic", [0.165, 1.35, 0.166, 1.34, 0.166, 1.33, 0.166, 1.34]),
    ("FPGA-static", [0.544, 3.08, 0.794, 1.64, 0.722, 1.96, 0.797, 1.63]),
    ("FPGA-dynamic", [0.562, 2.87, 0.777, 1.68, 0.788, 1.63, 0.776, 1.67]),
    ("MArk-ideal", [0.362, 1.41, 0.622, 1.14, 0.748, 1.11, 0.622, 1.16]),
    ("SporkC", [0.735, 1.17, 0.848, 1.08, 0.812, 1.05, 0.795, 1.05]),
    ("SporkB", [0.824, 1.23, 0.919, 1.12, 0.876, 1.09, 0.864, 1.07]),
    ("SporkE", [0.862, 1.34, 0.928, 1.15, 0.91, 1.17, 0.921, 1.16]),
    ("SporkC-ideal", [0.766, 1.19, 0.9, 1.1, 0.924, 1.06, 0.885, 1.06]),
    ("SporkE-ideal", [0.872, 1.31, 0.931, 1.14, 0.944, 1.09, 0.93, 1.13]),
];

/// The table's columns: (point, dataset name, size name).
const CELLS: [(At, &str, &str); 4] = [
    (&[("dataset", 0.0), ("size", 0.0)], "Azure", "short"),
    (&[("dataset", 1.0), ("size", 0.0)], "Alibaba", "short"),
    (&[("dataset", 0.0), ("size", 1.0)], "Azure", "medium"),
    (&[("dataset", 1.0), ("size", 1.0)], "Alibaba", "medium"),
];

const PROD_CAUSE: &str = "production results depend on which applications and which two hours are replayed: \
    we take the first two hours of the first day present and the paper does not say which it used";

impl Experiment for Table8 {
    fn id(&self) -> &'static str {
        "table8"
    }

    fn title(&self) -> &'static str {
        "Table 8: production traces"
    }

    fn folders(&self) -> &'static [&'static str] {
        &["table8"]
    }

    fn uses_production(&self) -> bool {
        true
    }

    fn jobs(&self, inputs: &Inputs) -> Vec<Job> {
        let platform = Platform::default();
        let mut jobs = Vec::new();
        for (at, trace, source) in inputs.production.iter().flat_map(|p| p.windows()) {
            for s in Scheduler::PAPER {
                jobs.push(sim("table8", &at, trace, platform, source.clone(), s, None));
            }
        }
        jobs
    }

    fn combine(&self, _folder: &str) -> Combine {
        // "Aggregated across all applications": ratios of sums, not means of ratios.
        Combine::SumRatio
    }

    fn charts(&self, _folder: &str, t: &Table) -> Vec<Chart> {
        by_dataset(t)
    }

    fn claims(&self) -> Vec<Claim> {
        ROWS.iter()
            .flat_map(|(s, v)| CELLS.iter().enumerate().flat_map(move |(k, cell)| cell_claims(s, v, k, cell)))
            .collect()
    }

    fn not_run(&self) -> String {
        format!(
            "Not run: the production datasets are not bundled. Download the Azure Functions 2019 trace ({AZURE_URL}) and/or the \
             Alibaba microservices 2021 `MSRTQps` files ({ALIBABA_URL}) and pass `--azure DIR` / `--alibaba DIR`."
        )
    }
}

/// Energy efficiency and relative cost of scheduler `s` in column `k` of its printed row `v`.
fn cell_claims(s: &'static str, v: &[f64; 8], k: usize, cell: &(At, &str, &str)) -> [Claim; 2] {
    let (at, dname, sname) = *cell;
    let claim = |what: &str, paper: f64, m: Metric, percent: bool| Claim {
        finding: Cow::Owned(format!("{s} {what}, {dname} {sname}")),
        paper,
        ours: value(pick(s, at, m)),
        percent,
        cause: PROD_CAUSE,
        explains: &[],
    };
    [
        claim("energy efficiency", v[2 * k], Metric::EnergyEfficiency, true),
        claim("relative cost", v[2 * k + 1], Metric::RelativeCost, false),
    ]
}
