//! Beyond the paper: brownout (Klein et al. ICSE'14, Desmeurs et al. ICCAC'15, Nylander et al. ACC'18;
//! the laws in docs/brownout.md). Every controller on the brownout literature's reference scenario, one
//! processor-sharing server with a p95 set-point, at set-points of 0.5, 1 and 2 s, the scale's seeds
//! each. The runs are `spork brownout`'s ([`Comparison`], which also traces each controller's p95 and
//! gate setting over time); here they are compared across set-points, and at the papers' 1 s against
//! what the papers found.

mod compare;

pub use compare::{Comparison, ControllerRuns, Seeds, Summary};

use crate::evaluate::brownout::Scenario;
use crate::reproduce::aggregate::Table;
use crate::reproduce::charts::{chart, lines};
use crate::reproduce::claims::{At, Check, Claim, pick, ratio};
use crate::reproduce::experiment::{Experiment, Inputs, Tables};
use crate::reproduce::jobs::{Job, Work, params};
use crate::reproduce::metric::Metric::{
    self, Iae, IaeOver, MaxS, OptionalRatio, P95S, P99S, PeriodsOver, RequestsOver,
};
use crate::reproduce::plot::Chart;
use spork_core::model::time::to_secs;
use spork_core::policy::brownout::ControllerKind::{self, Cascaded, Dimmer};

/// The brownout experiment.
pub struct Brownout;

/// Set-points on the p95 swept, seconds.
const SETPOINTS: [f64; 3] = [0.5, 1.0, 2.0];

/// The papers' set-point.
const PAPERS: At = &[("setpoint_s", 1.0)];

/// The ICCAC'15 paper's headline number, as our claim states it.
pub(crate) const FOLD: &str = "event-driven brownout holds the p95 closer to the set-point than the \
    competing approach (the paper: 11-fold, RUBiS): IAE of the dimmer over the event-based tuner's";

/// Why our fold differs from the ICCAC'15 paper's.
const CAUSE: &str = "the paper measured RUBiS on real servers at high utilisation against its competing \
    controllers; ours is the brownout simulator's reference scenario, the published event-based tuner \
    against the dimmer, over the scale's seeds and run length. Utilisation alone does not close it: the \
    fold grows with the load and levels off under 11 (`spork brownout --load L --seeds 3`: 1.4x at 0.3, \
    1.8x at 0.5, 4.1x at 0.75, 8.1x at 1, 8.1x at 2, 8.3x at 3, 9.2x at 5)";

impl Experiment for Brownout {
    fn id(&self) -> &'static str {
        "brownout"
    }

    fn title(&self) -> &'static str {
        "Beyond the paper: brownout controllers on the reference scenario"
    }

    fn folders(&self) -> &'static [&'static str] {
        &["brownout"]
    }

    fn jobs(&self, inputs: &Inputs) -> Vec<Job> {
        let scale = &inputs.scale;
        let mut jobs = Vec::new();
        for setpoint_s in SETPOINTS {
            let duration_s = to_secs(scale.brownout_duration);
            let scenario = Scenario { duration_s, setpoint_s, ..Scenario::default() };
            for trace in 0..scale.brownout_seeds {
                jobs.extend(ControllerKind::ALL.map(|controller| job(&scenario, trace, controller)));
            }
        }
        jobs
    }

    fn charts(&self, _folder: &str, t: &Table) -> Vec<Chart> {
        let x = "set-point on the p95 (s)";
        let line = |m: Metric, scale: f64| lines(t, "setpoint_s", &[], m, scale);
        vec![
            chart("IAE: sum over periods of |p95 - set-point|", x, "IAE (s)", line(Iae, 1.0), true),
            chart("optional content served", x, "optional ratio (%)", line(OptionalRatio, 100.0), false),
            chart("requests answered late", x, "over the set-point (%)", line(RequestsOver, 100.0), false),
        ]
    }

    fn claims(&self) -> Vec<Claim> {
        vec![Claim::new(FOLD, 11.0, ratio(pick("dimmer", PAPERS, Iae), pick("event", PAPERS, Iae)), CAUSE)]
    }

    fn checks(&self, t: &Table) -> Vec<Check> {
        let g = |k: ControllerKind, m: Metric| t.get(k.name(), PAPERS, m.key()).unwrap_or(f64::NAN);
        let browned: Vec<ControllerKind> =
            ControllerKind::ALL.into_iter().filter(|&k| k != ControllerKind::None).collect();
        let names: Vec<&str> = browned.iter().map(|k| k.name()).collect();
        let iae: Vec<f64> = browned.iter().map(|&k| g(k, Iae)).collect();
        let served: Vec<f64> = browned.iter().map(|&k| g(k, OptionalRatio)).collect();
        let (none, none_served) = (g(ControllerKind::None, Iae), g(ControllerKind::None, OptionalRatio));
        vec![
            Check {
                finding: "every brownout controller holds the p95 closer to the set-point than no brownout \
                          (lower IAE)"
                    .into(),
                holds: iae.iter().all(|&v| v < none),
                detail: format!("IAE at 1 s: none {none:.1}; {names:?} {iae:.1?}"),
            },
            Check {
                finding: "BrownoutCC (cascaded) holds the p95 closer to the set-point than the dimmer".into(),
                holds: g(Cascaded, Iae) < g(Dimmer, Iae),
                detail: format!("IAE at 1 s: cascaded {:.1}, dimmer {:.1}", g(Cascaded, Iae), g(Dimmer, Iae)),
            },
            Check {
                finding: "under the overload every brownout controller serves only part of the optional \
                          content, no brownout all of it"
                    .into(),
                holds: (none_served - 1.0).abs() < 1e-12 && served.iter().all(|&v| v > 0.0 && v < 1.0),
                detail: format!("optional ratio at 1 s: none {none_served:.3}; {names:?} {served:.3?}"),
            },
        ]
    }

    fn notes(&self, tables: &Tables) -> String {
        let Some(t) = tables.get("brownout") else { return String::new() };
        let mut rows = String::from(
            "\n| controller | IAE (s) | IAE over (s) | periods over | requests over | optional ratio | p95 s \
             | p99 s | max s |\n|---|---|---|---|---|---|---|---|---|\n",
        );
        for k in ControllerKind::ALL {
            let g = |m: Metric| t.get(k.name(), PAPERS, m.key()).unwrap_or(f64::NAN);
            rows += &format!(
                "| {} | {:.1} | {:.1} | {:.1}% | {:.2}% | {:.1}% | {:.2} | {:.2} | {:.2} |\n",
                k.name(),
                g(Iae),
                g(IaeOver),
                100.0 * g(PeriodsOver),
                100.0 * g(RequestsOver),
                100.0 * g(OptionalRatio),
                g(P95S),
                g(P99S),
                g(MaxS)
            );
        }
        format!(
            "{rows}\nAt the papers' set-point of 1 s, means over seeds (as `spork brownout` prints them; \
             `spork brownout --out DIR` also plots each controller's p95 and gate setting over time). \
             Percentiles interpolate linearly between the closest ranks. BrownoutCC's own finding, a p95 \
             closer to the target than event-driven brownout's, is the cascaded row against the event \
             row: within a few percent on the 20-minute reference, so it is reported here, not asserted.\n"
        )
    }
}

/// One controller's run at trace index `trace`, seeded `trace + 1` (seeds 1, 2, ... as `spork
/// brownout`'s default runs).
fn job(scenario: &Scenario, trace: u32, controller: ControllerKind) -> Job {
    Job {
        folder: "brownout",
        params: params(&[("setpoint_s", scenario.setpoint_s)]),
        trace,
        series: controller.name().to_string(),
        work: Work::Brownout { scenario: scenario.clone(), controller, seed: u64::from(trace) + 1 },
    }
}
