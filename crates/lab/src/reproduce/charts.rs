//! Panels the experiments share: a metric of every series along one parameter, and the axis labels
//! the paper uses.

use super::aggregate::Table;
use super::metric::Metric;
use super::plot::{Chart, Series};
use super::production::dataset_name;

/// Y label of energy efficiency panels.
pub const EE: &str = "energy efficiency (%)";
/// Y label of relative cost panels.
pub const RC: &str = "relative cost (x)";

/// A panel.
pub fn chart(title: &str, x: &str, y: &str, series: Vec<Series>, log_y: bool) -> Chart {
    Chart { title: title.into(), x_label: x.into(), y_label: y.into(), series, log_y }
}

/// `metric` (times `scale`) of every series along parameter `x`, other parameters fixed by `at`;
/// series with no point are left out.
pub fn lines(t: &Table, x: &str, at: &[(&str, f64)], metric: Metric, scale: f64) -> Vec<Series> {
    t.series()
        .into_iter()
        .map(|s| Series {
            points: t.line(&s, x, at, metric.key()).into_iter().map(|(a, b)| (a, b * scale)).collect(),
            name: s,
        })
        .filter(|s| !s.points.is_empty())
        .collect()
}

/// Energy efficiency (%) and relative cost of every series along `x`, titled `"{prefix}: ..."`.
pub fn efficiency_and_cost(
    t: &Table,
    prefix: &str,
    x: (&str, &str),
    at: &[(&str, f64)],
    log: (bool, bool),
) -> [Chart; 2] {
    let (param, label) = x;
    [
        chart(
            &format!("{prefix}: energy efficiency"),
            label,
            EE,
            lines(t, param, at, Metric::EnergyEfficiency, 100.0),
            log.0,
        ),
        chart(
            &format!("{prefix}: relative cost"),
            label,
            RC,
            lines(t, param, at, Metric::RelativeCost, 1.0),
            log.1,
        ),
    ]
}

/// Efficiency and cost along request size, one pair of panels per production dataset
/// (Table 8 and Table 9's production runs).
pub fn by_dataset(t: &Table) -> Vec<Chart> {
    t.values("dataset")
        .into_iter()
        .flat_map(|d| {
            let x = ("size", "size (0 short, 1 medium)");
            efficiency_and_cost(t, dataset_name(d), x, &[("dataset", d)], (false, false))
        })
        .collect()
}
