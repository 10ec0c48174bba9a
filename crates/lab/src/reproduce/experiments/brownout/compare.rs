//! The brownout controllers compared on one scenario over consecutive seeds: what `spork brownout`
//! prints and writes. A controller's figures are means over its seeds; its first seed's run is traced
//! per control period (the CSV, and the plots of its p95 and gate setting over time).

use crate::evaluate::brownout::{Outcome, Scenario, run};
use crate::reproduce::plot::{Chart, Series};
use rayon::prelude::*;
use serde::Serialize;
use spork_core::policy::brownout::ControllerKind;

/// Consecutive seeds: `first`, `first + 1`, ... (`count` of them, wrapping at `u64::MAX`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seeds {
    /// The first seed.
    pub first: u64,
    /// How many.
    pub count: u64,
}

impl Seeds {
    /// The seeds in order.
    pub fn iter(self) -> impl Iterator<Item = u64> {
        (0..self.count).map(move |s| self.first.wrapping_add(s))
    }
}

/// One controller's runs, in seed order.
#[derive(Clone, Debug)]
pub struct ControllerRuns {
    /// The controller.
    pub kind: ControllerKind,
    /// One run per seed.
    pub outcomes: Vec<Outcome>,
}

/// A controller's figures, means over its runs: a row of `spork brownout`'s table and JSON (the
/// field names and their order are that JSON's).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    /// The controller (its kebab-case name in JSON).
    pub controller: ControllerKind,
    /// Runs behind the means.
    pub runs: usize,
    /// Σ over periods of |p95 of optional-served responses − set-point| (s).
    pub iae: f64,
    /// The same sum over the periods whose p95 exceeded the set-point, by how much (s).
    pub iae_over: f64,
    /// Share of periods whose p95 exceeded the set-point.
    pub periods_over: f64,
    /// Share of requests answered after the set-point.
    pub requests_over: f64,
    /// Share of requests served with optional content.
    pub optional_ratio: f64,
    /// 95th percentile response time (s).
    pub p95_s: f64,
    /// 99th percentile response time (s).
    pub p99_s: f64,
    /// Largest response time (s).
    pub max_s: f64,
}

impl ControllerRuns {
    /// Its figures, averaged over its runs in seed order.
    pub fn summary(&self) -> Summary {
        let os = &self.outcomes;
        let mean = |f: fn(&Outcome) -> f64| os.iter().map(f).sum::<f64>() / os.len().max(1) as f64;
        Summary {
            controller: self.kind,
            runs: os.len(),
            iae: mean(|o| o.iae),
            iae_over: mean(|o| o.iae_over),
            periods_over: mean(|o| o.periods_over),
            requests_over: mean(|o| o.requests_over),
            optional_ratio: mean(|o| o.optional_ratio),
            p95_s: mean(|o| o.p95_s),
            p99_s: mean(|o| o.p99_s),
            max_s: mean(|o| o.max_s),
        }
    }
}

/// Every controller asked, run on one scenario with the same seeds.
#[derive(Clone, Debug)]
pub struct Comparison {
    /// The scenario every run played.
    pub scenario: Scenario,
    /// One entry per controller, in the order asked.
    pub controllers: Vec<ControllerRuns>,
}

impl Comparison {
    /// Runs every controller of `kinds` on `scenario` with every seed of `seeds`, all runs in
    /// parallel (each is seeded, so the order they finish in changes nothing).
    pub fn run(scenario: Scenario, kinds: &[ControllerKind], seeds: Seeds) -> Self {
        let jobs: Vec<(ControllerKind, u64)> =
            kinds.iter().flat_map(|&k| seeds.iter().map(move |s| (k, s))).collect();
        let outcomes: Vec<Outcome> = jobs.par_iter().map(|&(k, s)| run(&scenario, k, s)).collect();
        let (mut outcomes, per) = (outcomes.into_iter(), seeds.count as usize);
        let controllers = kinds
            .iter()
            .map(|&kind| ControllerRuns { kind, outcomes: outcomes.by_ref().take(per).collect() })
            .collect();
        Comparison { scenario, controllers }
    }

    /// Each controller's means over its runs, in the order asked.
    pub fn summaries(&self) -> Vec<Summary> {
        self.controllers.iter().map(ControllerRuns::summary).collect()
    }

    /// The traced runs: each controller's first seed.
    fn traced(&self) -> impl Iterator<Item = (ControllerKind, &Outcome)> {
        self.controllers.iter().filter_map(|c| c.outcomes.first().map(|o| (c.kind, o)))
    }

    /// Every control period of the traced runs: `controller,t_s,p95_optional_s,knob`, the p95 empty
    /// in a period without optional-served completions.
    pub fn periods_csv(&self) -> String {
        let mut csv = String::from("controller,t_s,p95_optional_s,knob\n");
        for (kind, o) in self.traced() {
            for s in &o.samples {
                csv.push_str(&format!(
                    "{},{},{},{}\n",
                    kind.name(),
                    s.t,
                    s.p95_optional.map_or(String::new(), |v| v.to_string()),
                    s.knob
                ));
            }
        }
        csv
    }

    /// Two panels per traced run: its p95 of optional-served responses per period against the
    /// set-point, and its gate setting.
    pub fn charts(&self) -> Vec<Chart> {
        self.traced().flat_map(|(kind, o)| self.trace_charts(kind, o)).collect()
    }

    fn trace_charts(&self, kind: ControllerKind, o: &Outcome) -> [Chart; 2] {
        let (sp, end) = (self.scenario.setpoint_s, self.scenario.duration_s);
        let p95: Vec<(f64, f64)> =
            o.samples.iter().filter_map(|s| s.p95_optional.map(|y| (s.t, y))).collect();
        // A threshold far above any queue would flatten the rest of the panel.
        let knob: Vec<(f64, f64)> = o.samples.iter().map(|s| (s.t, s.knob.min(200.0))).collect();
        [
            Chart {
                title: format!("{}: p95 of optional-served responses (seed {})", kind.name(), o.seed),
                x_label: "time (s)".into(),
                y_label: "seconds".into(),
                series: vec![
                    Series { name: "p95".into(), points: p95 },
                    Series { name: "set-point".into(), points: vec![(0.0, sp), (end, sp)] },
                ],
                log_y: true,
            },
            Chart {
                title: format!("{}: gate setting", kind.name()),
                x_label: "time (s)".into(),
                y_label: setting_label(kind).into(),
                series: vec![Series { name: "setting".into(), points: knob }],
                log_y: false,
            },
        ]
    }
}

/// What the gate setting of `kind` is.
fn setting_label(kind: ControllerKind) -> &'static str {
    if kind == ControllerKind::Dimmer { "dimmer value" } else { "queue threshold" }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn short() -> Comparison {
        let scenario = Scenario { duration_s: 30.0, ..Scenario::default() };
        Comparison::run(scenario, &[ControllerKind::Pi, ControllerKind::Dimmer], Seeds { first: 3, count: 2 })
    }

    #[test]
    fn runs_are_grouped_by_controller_in_seed_order_and_averaged() {
        let c = short();
        let kinds: Vec<ControllerKind> = c.controllers.iter().map(|r| r.kind).collect();
        assert_eq!(kinds, [ControllerKind::Pi, ControllerKind::Dimmer]);
        for r in &c.controllers {
            let seeds: Vec<u64> = r.outcomes.iter().map(|o| o.seed).collect();
            assert_eq!(seeds, [3, 4]);
            assert!(r.outcomes.iter().all(|o| o.controller == r.kind.name()));
        }
        let alone = run(&c.scenario, ControllerKind::Dimmer, 4);
        assert_eq!(c.controllers[1].outcomes[1].iae, alone.iae, "a run is the same in a comparison");
        let s = &c.summaries()[1];
        let o = &c.controllers[1].outcomes;
        assert_eq!((s.runs, s.iae), (2, (o[0].iae + o[1].iae) / 2.0));
    }

    #[test]
    fn the_first_seed_is_traced_in_the_csv_and_the_plots() {
        let c = short();
        let periods: usize = c.controllers.iter().map(|r| r.outcomes[0].samples.len()).sum();
        let csv = c.periods_csv();
        assert_eq!(csv.lines().count(), 1 + periods);
        assert!(csv.lines().nth(1).is_some_and(|l| l.starts_with("pi,0.5,")), "{csv}");
        let charts = c.charts();
        let titles: Vec<&str> = charts.iter().map(|c| c.title.as_str()).collect();
        assert_eq!(
            titles,
            [
                "pi: p95 of optional-served responses (seed 3)",
                "pi: gate setting",
                "dimmer: p95 of optional-served responses (seed 3)",
                "dimmer: gate setting"
            ]
        );
        assert_eq!(
            (charts[1].y_label.as_str(), charts[3].y_label.as_str()),
            ("queue threshold", "dimmer value")
        );
    }

    /// `spork brownout --json` prints these rows: the controller by its kebab-case name, then the
    /// figures in this order.
    #[test]
    fn a_summary_serialises_as_the_command_prints_it() {
        let s = Summary {
            controller: ControllerKind::CascadedFf,
            runs: 2,
            iae: 1.5,
            iae_over: 0.5,
            periods_over: 0.25,
            requests_over: 0.0,
            optional_ratio: 1.0,
            p95_s: 2.0,
            p99_s: 3.0,
            max_s: 4.0,
        };
        assert_eq!(
            serde_json::to_string(&s).unwrap(),
            "{\"controller\":\"cascaded-ff\",\"runs\":2,\"iae\":1.5,\"iae_over\":0.5,\"periods_over\":0.25,\
             \"requests_over\":0.0,\"optional_ratio\":1.0,\"p95_s\":2.0,\"p99_s\":3.0,\"max_s\":4.0}"
        );
    }
}
