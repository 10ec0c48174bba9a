//! From runs to points: means over traces (synthetic) or ratios of sums over applications (production).

use super::store::Row;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// One point of a figure: a series at a parameter setting, averaged over its runs.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Point {
    /// Sweep parameters.
    pub params: BTreeMap<String, f64>,
    /// Series label.
    pub series: String,
    /// Runs behind it.
    pub runs: usize,
    /// Aggregated metrics.
    pub metrics: BTreeMap<String, f64>,
}

/// How runs combine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Combine {
    /// Mean of each metric over the runs (synthetic traces, as the paper averages ten traces).
    Mean,
    /// Energy, cost and their ideal references summed before taking ratios (production traces:
    /// "aggregated across all applications").
    SumRatio,
}

fn group(rows: &[Row]) -> BTreeMap<(String, String), Vec<&Row>> {
    let mut g: BTreeMap<(String, String), Vec<&Row>> = BTreeMap::new();
    for r in rows {
        let key = serde_json::to_string(&r.params).unwrap_or_default();
        g.entry((key, r.series.clone())).or_default().push(r);
    }
    g
}

/// Aggregates rows into points, in parameter then series order.
pub fn points(rows: &[Row], how: Combine) -> Vec<Point> {
    group(rows)
        .into_values()
        .map(|runs| {
            let first = runs[0];
            let mut sums: BTreeMap<String, (f64, usize)> = BTreeMap::new();
            for r in &runs {
                for (k, v) in &r.metrics {
                    if v.is_finite() {
                        let e = sums.entry(k.clone()).or_default();
                        e.0 += v;
                        e.1 += 1;
                    }
                }
            }
            let mut metrics: BTreeMap<String, f64> = sums
                .iter()
                .map(|(k, (s, n))| (k.clone(), if *n > 0 { s / *n as f64 } else { f64::NAN }))
                .collect();
            if how == Combine::SumRatio {
                let total = |k: &str| sums.get(k).map_or(0.0, |v| v.0);
                let (e, ie, c, ic) =
                    (total("energy_j"), total("ideal_energy_j"), total("cost"), total("ideal_cost"));
                if e > 0.0 && ic > 0.0 {
                    metrics.insert("energy_efficiency".into(), ie / e);
                    metrics.insert("relative_cost".into(), c / ic);
                }
                let req = total("requests");
                if req > 0.0 {
                    let on_cpu: f64 = runs
                        .iter()
                        .map(|r| r.metric("cpu_share") * r.metric("requests"))
                        .filter(|v| v.is_finite())
                        .sum();
                    metrics.insert("cpu_share".into(), on_cpu / req);
                }
            }
            Point { params: first.params.clone(), series: first.series.clone(), runs: runs.len(), metrics }
        })
        .collect()
}

/// Looks points up by series and parameters.
#[derive(Clone, Debug, Default)]
pub struct Table {
    /// The points.
    pub points: Vec<Point>,
}

impl Table {
    /// A metric of `series` at parameters matching every `(name, value)` of `at`.
    pub fn get(&self, series: &str, at: &[(&str, f64)], metric: &str) -> Option<f64> {
        self.points
            .iter()
            .find(|p| {
                p.series == series
                    && at.iter().all(|(k, v)| p.params.get(*k).is_some_and(|x| (x - v).abs() < 1e-9))
            })
            .and_then(|p| p.metrics.get(metric).copied())
            .filter(|v| v.is_finite())
    }

    /// Distinct values of parameter `name`, sorted.
    pub fn values(&self, name: &str) -> Vec<f64> {
        let mut v: Vec<f64> = self.points.iter().filter_map(|p| p.params.get(name).copied()).collect();
        v.sort_by(f64::total_cmp);
        v.dedup();
        v
    }

    /// Series labels in first-seen order.
    pub fn series(&self) -> Vec<String> {
        let mut s: Vec<String> = Vec::new();
        for p in &self.points {
            if !s.contains(&p.series) {
                s.push(p.series.clone());
            }
        }
        s
    }

    /// `metric` of `series` along parameter `x`, other parameters fixed by `at`.
    pub fn line(&self, series: &str, x: &str, at: &[(&str, f64)], metric: &str) -> Vec<(f64, f64)> {
        self.values(x)
            .into_iter()
            .filter_map(|xv| {
                let mut q: Vec<(&str, f64)> = at.to_vec();
                q.push((x, xv));
                self.get(series, &q, metric).map(|y| (xv, y))
            })
            .collect()
    }
}

/// Writes points as CSV (parameters, series, runs, then every metric) and JSON.
pub fn write(points: &[Point], stem: &Path) -> Result<(), String> {
    let mut pnames: Vec<String> = points.iter().flat_map(|p| p.params.keys().cloned()).collect();
    pnames.sort();
    pnames.dedup();
    let mut mnames: Vec<String> = points.iter().flat_map(|p| p.metrics.keys().cloned()).collect();
    mnames.sort();
    mnames.dedup();
    let csv_path = stem.with_extension("csv");
    let mut w = csv::Writer::from_path(&csv_path).map_err(|e| format!("{}: {e}", csv_path.display()))?;
    let header: Vec<String> = pnames
        .iter()
        .cloned()
        .chain(["series".to_string(), "runs".to_string()])
        .chain(mnames.iter().cloned())
        .collect();
    w.write_record(&header).map_err(|e| e.to_string())?;
    for p in points {
        let fmt = |v: Option<&f64>| v.filter(|x| x.is_finite()).map_or(String::new(), |x| format!("{x}"));
        let rec: Vec<String> = pnames
            .iter()
            .map(|k| fmt(p.params.get(k)))
            .chain([p.series.clone(), p.runs.to_string()])
            .chain(mnames.iter().map(|k| fmt(p.metrics.get(k))))
            .collect();
        w.write_record(&rec).map_err(|e| e.to_string())?;
    }
    w.flush().map_err(|e| e.to_string())?;
    let json_path = stem.with_extension("json");
    let text = serde_json::to_string_pretty(points).map_err(|e| e.to_string())?;
    std::fs::write(&json_path, text).map_err(|e| format!("{}: {e}", json_path.display()))
}
