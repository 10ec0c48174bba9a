//! Figure 3: pareto-optimal hybrid schedules, the MILP optimising a weighted sum of energy and cost.

use super::fig2::milp;
use crate::reproduce::aggregate::Table;
use crate::reproduce::charts::{EE, RC, chart};
use crate::reproduce::claims::{Check, Claim, MILP_CAUSE, pick, ratio};
use crate::reproduce::experiment::{Experiment, Inputs};
use crate::reproduce::jobs::{Job, params};
use crate::reproduce::metric::Metric::{self, RelativeCost};
use crate::reproduce::plot::{Chart, Series};
use spork_core::policy::{Fleet, Objective};

/// Figure 3.
pub struct Fig3;

static CLAIMS: [Claim; 1] = [Claim::new(
    "Energy-optimal / cost-optimal hybrid cost at burstiness 0.75: over",
    2.0,
    ratio(
        pick("b=0.75", &[("burstiness", 0.75), ("energy_weight", 1.0)], RelativeCost),
        pick("b=0.75", &[("burstiness", 0.75), ("energy_weight", 0.0)], RelativeCost),
    ),
    MILP_CAUSE,
)];

/// MILP optimality gap tolerance of the checks.
const TOL: f64 = 1.005;

impl Experiment for Fig3 {
    fn id(&self) -> &'static str {
        "fig3"
    }

    fn title(&self) -> &'static str {
        "Figure 3: pareto-optimal hybrid schedules"
    }

    fn folders(&self) -> &'static [&'static str] {
        &["fig3"]
    }

    fn jobs(&self, inputs: &Inputs) -> Vec<Job> {
        let scale = &inputs.scale;
        let mut jobs = Vec::new();
        for &b in &scale.burstiness {
            for trace in 0..scale.milp_traces {
                for &w in &scale.pareto_weights {
                    let Some(objective) = Objective::weighted(w) else { continue };
                    jobs.push(Job {
                        folder: "fig3",
                        params: params(&[("burstiness", b), ("energy_weight", w)]),
                        trace,
                        series: format!("b={b}"),
                        work: milp(scale, b, trace, Fleet::HYBRID, objective),
                    });
                }
            }
        }
        jobs
    }

    fn charts(&self, _folder: &str, t: &Table) -> Vec<Chart> {
        let series = t.series().into_iter().map(|s| pareto(t, s)).collect();
        vec![chart("Pareto-optimal hybrid schedules", RC, EE, series, false)]
    }

    fn claims(&self) -> Vec<Claim> {
        CLAIMS.to_vec()
    }

    fn checks(&self, t: &Table) -> Vec<Check> {
        t.values("burstiness").into_iter().map(|b| monotone(t, b)).collect()
    }
}

/// The curve of series `s` (one burstiness): efficiency (%) against relative cost over the weights.
fn pareto(t: &Table, s: String) -> Series {
    let b = s.trim_start_matches("b=").parse::<f64>().unwrap_or(0.0);
    let mut pts: Vec<(f64, f64)> = t
        .values("energy_weight")
        .into_iter()
        .filter_map(|w| {
            let at = [("burstiness", b), ("energy_weight", w)];
            Some((t.get(&s, &at, "relative_cost")?, t.get(&s, &at, "energy_efficiency")? * 100.0))
        })
        .collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    Series { name: s, points: pts }
}

/// Weighting energy more never lowers efficiency nor cost along the curve at burstiness `b`.
fn monotone(t: &Table, b: f64) -> Check {
    let s = format!("b={b}");
    let ws = t.values("energy_weight");
    let along = |m: Metric| -> Vec<f64> {
        ws.iter().filter_map(|&w| t.get(&s, &[("burstiness", b), ("energy_weight", w)], m.key())).collect()
    };
    let (ee, rc) = (along(Metric::EnergyEfficiency), along(Metric::RelativeCost));
    let mono = ee.windows(2).all(|x| x[1] * TOL >= x[0]) && rc.windows(2).all(|x| x[1] * TOL >= x[0]);
    Check {
        finding: format!(
            "weighting energy more trades cost for energy efficiency along the pareto curve (burstiness {b})"
        ),
        holds: mono && ee.len() == ws.len(),
        detail: format!("efficiency {ee:.3?}, relative cost {rc:.3?} for energy weights {ws:?}"),
    }
}
