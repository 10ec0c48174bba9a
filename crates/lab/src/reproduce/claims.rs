//! The numbers the paper states, as data: where each is read from our points and how, so one
//! evaluator computes every comparison and a test can prove that each one finds its points.

use super::aggregate::Table;
use super::metric::Metric;
use serde::Serialize;
use std::borrow::Cow;

/// Parameters that fix a point, e.g. `&[("burstiness", 0.75)]`.
pub type At = &'static [(&'static str, f64)];

/// Where one number is read: a metric of a series at fixed parameters.
#[derive(Clone, Copy, Debug)]
pub struct Pick {
    /// Series label (a scheduler, dispatcher or platform/objective).
    pub series: &'static str,
    /// Parameters of the point.
    pub at: At,
    /// The metric.
    pub metric: Metric,
}

/// Reads `metric` of `series` at `at`.
pub const fn pick(series: &'static str, at: At, metric: Metric) -> Pick {
    Pick { series, at, metric }
}

/// How our number is computed from picks.
#[derive(Clone, Copy, Debug)]
pub struct Measure {
    /// The number, or the numerator of a ratio.
    pub num: Pick,
    /// The denominator of a ratio.
    pub den: Option<Pick>,
    /// Parameters swept: the largest value over every combination of their values in the data, for
    /// the paper's "up to" claims. Empty for a single point.
    pub max_over: &'static [&'static str],
}

/// One number.
pub const fn value(p: Pick) -> Measure {
    Measure { num: p, den: None, max_over: &[] }
}

/// `num / den`.
pub const fn ratio(num: Pick, den: Pick) -> Measure {
    Measure { num, den: Some(den), max_over: &[] }
}

impl Measure {
    /// The largest over every combination of the values of `params` in the data.
    pub const fn max_over(self, params: &'static [&'static str]) -> Measure {
        Measure { max_over: params, ..self }
    }

    /// Evaluates on `t`; `None` when a point it needs is missing.
    pub fn eval(&self, t: &Table) -> Option<f64> {
        let read = |p: &Pick, extra: &[(&'static str, f64)]| {
            let at: Vec<(&str, f64)> = p.at.iter().chain(extra).copied().collect();
            t.get(p.series, &at, p.metric.key())
        };
        let at_combo = |extra: &[(&'static str, f64)]| match &self.den {
            None => read(&self.num, extra),
            Some(d) => div(read(&self.num, extra), read(d, extra)),
        };
        max(combinations(t, self.max_over).iter().map(|c| at_combo(c)))
    }

    /// The picks it reads.
    pub fn picks(&self) -> impl Iterator<Item = &Pick> {
        std::iter::once(&self.num).chain(&self.den)
    }
}

/// Every combination of the values of `params` in `t` (one empty combination for no parameters).
fn combinations(t: &Table, params: &[&'static str]) -> Vec<Vec<(&'static str, f64)>> {
    params.iter().fold(vec![Vec::new()], |acc, &name| {
        let values = t.values(name);
        acc.iter()
            .flat_map(|c| {
                values.iter().map(move |&v| {
                    let mut c = c.clone();
                    c.push((name, v));
                    c
                })
            })
            .collect()
    })
}

/// One number the paper states and how to compute ours.
#[derive(Clone, Debug)]
pub struct Claim {
    /// What is compared.
    pub finding: Cow<'static, str>,
    /// The paper's number.
    pub paper: f64,
    /// How ours is computed.
    pub ours: Measure,
    /// Shown as a percentage (else as a ratio "x").
    pub percent: bool,
    /// Why ours may differ, printed when it differs by more than 15%.
    pub cause: &'static str,
    /// For a cause's run: the paper's numbers (experiment, finding) it tests, each of which this
    /// claim explains when it comes within 15% of the paper.
    pub explains: &'static [(&'static str, &'static str)],
}

impl Claim {
    /// A claim shown as a ratio "x".
    pub const fn new(finding: &'static str, paper: f64, ours: Measure, cause: &'static str) -> Claim {
        Claim { finding: Cow::Borrowed(finding), paper, ours, percent: false, cause, explains: &[] }
    }

    /// A claim about a share, shown as a percentage.
    pub const fn share(finding: &'static str, paper: f64, ours: Measure, cause: &'static str) -> Claim {
        Claim { finding: Cow::Borrowed(finding), paper, ours, percent: true, cause, explains: &[] }
    }

    /// The paper's number beside ours, computed on `t`.
    pub fn compare(&self, experiment: &'static str, t: &Table) -> Comparison {
        Comparison {
            experiment,
            finding: self.finding.to_string(),
            paper: self.paper,
            ours: self.ours.eval(t),
            percent: self.percent,
            cause: self.cause,
            explains: self.explains.iter().map(|&(e, f)| (e.to_string(), f.to_string())).collect(),
            explained_by: None,
        }
    }
}

/// One stated number of the paper and ours (a row of REPORT.md and `claims.json`).
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    /// Experiment id.
    pub experiment: &'static str,
    /// What is compared.
    pub finding: String,
    /// The paper's number.
    pub paper: f64,
    /// Ours, if the experiment ran the points it needs.
    pub ours: Option<f64>,
    /// Shown as a percentage (else as a ratio "x").
    pub percent: bool,
    /// Why ours may differ, printed when it differs by more than 15%.
    pub cause: &'static str,
    /// For a cause's run: the numbers (experiment, finding) it tests.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub explains: Vec<(String, String)>,
    /// For a number over 15%: the cause's run that brings it within 15% ("experiment: finding").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explained_by: Option<String>,
}

impl Comparison {
    /// ours / paper.
    pub fn ratio(&self) -> Option<f64> {
        self.ours.map(|o| o / self.paper)
    }

    /// "experiment: finding", how a cause's claim names it and `explained_by` refers to it.
    pub fn id(&self) -> String {
        format!("{}: {}", self.experiment, self.finding)
    }

    /// Whether ours is within 15% of the paper's.
    pub fn within(&self) -> bool {
        self.ratio().is_some_and(|q| (q - 1.0).abs() <= 0.15)
    }
}

/// Marks every number over 15% that a cause's run within 15% tests as explained by it.
pub fn link_causes(claims: &mut [Comparison]) {
    let causes: Vec<(String, String)> = claims
        .iter()
        .filter(|c| c.within())
        .flat_map(|c| c.explains.iter().map(move |(e, f)| (format!("{e}: {f}"), c.id())))
        .collect();
    for c in claims.iter_mut().filter(|c| !c.within()) {
        let id = c.id();
        c.explained_by = causes.iter().find(|(number, _)| *number == id).map(|(_, by)| by.clone());
    }
}

/// A qualitative finding asserted on our numbers.
#[derive(Clone, Debug, Serialize)]
pub struct Check {
    /// The finding.
    pub finding: String,
    /// Whether it holds.
    pub holds: bool,
    /// The numbers behind it.
    pub detail: String,
}

/// `a / b` when both are known and `b` is not zero.
fn div(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b != 0.0 => Some(a / b),
        _ => None,
    }
}

/// The largest known value.
fn max(v: impl IntoIterator<Item = Option<f64>>) -> Option<f64> {
    v.into_iter().flatten().fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))))
}

/// Why MILP numbers differ from the paper's.
pub const MILP_CAUSE: &str = "the paper's MILP figures are read off its plots and text for its own b-model samples; \
    ratios between platforms at one burstiness move with the sample and with how spin-up energy (busy power \
    for the spin-up time) is charged";
/// Why simulated numbers differ from the paper's.
pub const SIM_CAUSE: &str = "our synthetic traces draw one size per trace from the bucket and per-minute b-model rates, \
    and the paper does not give its exact baselines' parameters (FPGA-dynamic's headroom rule, MArk-ideal's \
    provisioning rule); extreme 'up to' ratios are maxima over few points and move most";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reproduce::aggregate::Point;

    fn table() -> Table {
        let point = |b: f64, s: &str, ee: f64| Point {
            params: [("burstiness".to_string(), b)].into(),
            series: s.into(),
            runs: 1,
            metrics: [("energy_efficiency".to_string(), ee)].into(),
        };
        Table {
            points: vec![
                point(0.5, "a", 0.8),
                point(0.5, "b", 0.4),
                point(0.75, "a", 0.3),
                point(0.75, "b", 0.2),
            ],
        }
    }

    const EE: Metric = Metric::EnergyEfficiency;

    #[test]
    fn values_ratios_and_maxima() {
        let t = table();
        let a = |at| pick("a", at, EE);
        let b = |at| pick("b", at, EE);
        assert_eq!(value(a(&[("burstiness", 0.75)])).eval(&t), Some(0.3));
        assert_eq!(ratio(a(&[("burstiness", 0.5)]), b(&[("burstiness", 0.5)])).eval(&t), Some(2.0));
        assert_eq!(ratio(a(&[]), b(&[])).max_over(&["burstiness"]).eval(&t), Some(2.0));
        assert_eq!(value(a(&[])).max_over(&["burstiness"]).eval(&t), Some(0.8));
    }

    #[test]
    fn a_mistyped_key_finds_nothing() {
        let t = table();
        assert_eq!(value(pick("A", &[("burstiness", 0.5)], EE)).eval(&t), None);
        assert_eq!(value(pick("a", &[("burstines", 0.5)], EE)).eval(&t), None);
        assert_eq!(value(pick("a", &[("burstiness", 0.6)], EE)).eval(&t), None);
        assert_eq!(value(pick("a", &[("burstiness", 0.5)], Metric::Cost)).eval(&t), None);
    }

    #[test]
    fn comparisons_serialise_as_before() {
        let c = Claim::share("f", 2.0, value(pick("a", &[("burstiness", 0.5)], EE)), "why");
        let j = serde_json::to_value(c.compare("fig9", &table())).unwrap();
        assert_eq!(
            j,
            serde_json::json!({"experiment": "fig9", "finding": "f", "paper": 2.0, "ours": 0.8, "percent": true, "cause": "why"})
        );
    }
}
