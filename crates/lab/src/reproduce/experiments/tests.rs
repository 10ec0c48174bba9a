//! The registry's contract, checked without running a simulation: every job lands in a folder of
//! its experiment, and every claim, chart and check finds the points it reads in rows shaped like a
//! quick run's.

use super::*;
use crate::reproduce::aggregate::Table;
use crate::reproduce::claims::{Measure, pick, value};
use crate::reproduce::experiment::{Inputs, Tables, points};
use crate::reproduce::metric::Metric;
use crate::reproduce::production::Production;
use crate::reproduce::store::Row;
use spork_core::trace::RateTrace;
use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

/// One window of a made-up production application.
fn window() -> Arc<RateTrace> {
    Arc::new(RateTrace {
        minute_rates: vec![100.0; 2],
        size: spork_core::model::time::from_secs(0.01),
        optional: 0,
        size_cv: 0.0,
        duration: spork_core::model::time::from_secs(120.0),
        seed: 1,
    })
}

/// Quick scale with two made-up datasets of two applications per size bucket.
fn inputs() -> Inputs {
    let dataset =
        |d| Production { dataset: d, buckets: vec![(0, vec![window(), window()]), (1, vec![window()])] };
    Inputs { scale: Scale::quick(), production: vec![dataset(0), dataset(1)] }
}

/// The row a job would write, every metric its kind of run records set to 1.
fn fake_row(j: &Job) -> Row {
    Row {
        experiment: j.folder.to_string(),
        params: j.params.clone(),
        trace: j.trace,
        series: j.series.clone(),
        metrics: j.work.metrics().iter().map(|m| (m.key().to_string(), 1.0)).collect(),
    }
}

/// Every folder's points, combined as its experiment combines them.
fn tables() -> Tables {
    let inputs = inputs();
    let mut tables = Tables::default();
    for e in all() {
        let rows: Vec<Row> = e.jobs(&inputs).iter().map(fake_row).collect();
        for &folder in e.folders() {
            let mine: Vec<Row> = rows.iter().filter(|r| r.experiment == folder).cloned().collect();
            tables.0.insert(folder.to_string(), Table { points: points(e, folder, &mine) });
        }
    }
    tables
}

#[test]
fn ids_and_folders_are_unique_and_each_experiment_owns_its_id() {
    let folders: Vec<&str> = all().iter().flat_map(|e| e.folders().iter().copied()).collect();
    assert_eq!(folders.iter().collect::<HashSet<_>>().len(), folders.len(), "{folders:?}");
    for e in all() {
        assert_eq!(e.folders()[0], e.id());
        assert_eq!(by_id(e.id()).map(|x| x.id()), Some(e.id()));
    }
    assert!(by_id("table9prod").is_none(), "a folder is not an experiment");
    assert_eq!(
        ids(),
        [
            "batching", "boards", "brownout", "cus", "deadline", "fig2", "fig3", "fig4", "fig5", "fig6",
            "fig7", "gaps", "release", "sizes", "speedup", "table8", "table9"
        ]
    );
}

#[test]
fn every_job_writes_a_folder_of_its_experiment_under_a_unique_key() {
    let inputs = inputs();
    for e in all() {
        let jobs = e.jobs(&inputs);
        assert!(!jobs.is_empty(), "{} has no runs", e.id());
        let keys: HashSet<(&str, String)> = jobs.iter().map(|j| (j.folder, j.key())).collect();
        assert_eq!(keys.len(), jobs.len(), "{}: two runs share a key", e.id());
        for j in &jobs {
            assert!(e.folders().contains(&j.folder), "{} writes {}", e.id(), j.folder);
        }
    }
}

#[test]
fn runs_follow_the_scale_and_the_datasets() {
    let inputs = inputs();
    let s = &inputs.scale;
    let (b, t, m) = (s.burstiness.len(), s.traces as usize, s.milp_traces as usize);
    let count =
        |e: &dyn Experiment, folder: &str| e.jobs(&inputs).iter().filter(|j| j.folder == folder).count();
    assert_eq!(count(&Fig2, "fig2"), b * m * 3 * 2, "3 platforms x 2 objectives");
    assert_eq!(count(&Fig4, "fig4"), b * t * 6, "MArk-ideal and five Spork variants");
    assert_eq!(count(&Fig5, "fig5"), s.spin_ups.len() * b * t * 4);
    assert_eq!(count(&Fig6, "fig6"), 3 * 3 * t * 4);
    assert_eq!(
        count(&Table9, "table9"),
        3 * t * 4,
        "3 sizes x 3 dispatchers, index packing numbered two ways"
    );
    let seeds = s.brownout_seeds as usize;
    assert_eq!(count(&Brownout, "brownout"), 3 * seeds * 6, "3 set-points x 6 controllers");
    let apps = 2 * 3; // 2 datasets x (2 short + 1 medium) applications
    assert_eq!(count(&Table8, "table8"), apps * 9);
    assert_eq!(count(&Table9, "table9prod"), apps * 3);
}

#[test]
fn every_claim_of_every_experiment_resolves_to_a_number() {
    let tables = tables();
    for e in all() {
        let t = tables.get(e.id()).unwrap();
        let claims = e.claims();
        // An experiment beyond the paper has no paper figure to claim, but checks of its own.
        assert!(!claims.is_empty() || !e.checks(t).is_empty(), "{} states nothing", e.id());
        for c in &claims {
            assert!(c.compare(e.id(), t).ours.is_some(), "{}: '{}' reads a missing point", e.id(), c.finding);
        }
    }
}

#[test]
fn a_mistyped_series_or_point_would_fail_the_test_above() {
    let tables = tables();
    let t = tables.get("fig4").unwrap();
    let read = |m: Measure| m.eval(t);
    assert!(read(value(pick("SporkE", &[("burstiness", 0.6)], Metric::CpuShare))).is_some());
    assert!(read(value(pick("Spork-E", &[("burstiness", 0.6)], Metric::CpuShare))).is_none());
    assert!(read(value(pick("SporkE", &[("burstiness", 0.65)], Metric::CpuShare))).is_none());
    assert!(read(value(pick("SporkE", &[("burstiness", 0.6)], Metric::Gap))).is_none(), "a MILP metric");
}

#[test]
fn every_chart_draws_lines() {
    let tables = tables();
    for e in all() {
        for &folder in e.folders() {
            let charts = e.charts(folder, tables.get(folder).unwrap());
            assert!(!charts.is_empty(), "{folder} draws nothing");
            for c in charts {
                assert!(c.series.iter().any(|s| !s.points.is_empty()), "{folder}: '{}' is empty", c.title);
            }
        }
    }
}

#[test]
fn checks_cover_every_point_they_name() {
    let tables = tables();
    let s = Scale::quick();
    let n = |e: &dyn Experiment| e.checks(tables.get(e.id()).unwrap()).len();
    assert_eq!(n(&Fig2), 2 * s.burstiness.len());
    assert_eq!(n(&Fig3), s.burstiness.len());
    assert_eq!(n(&Fig4), 4);
    assert_eq!(n(&Fig5), 2);
    assert_eq!(n(&Table9), 3);
    assert_eq!(n(&Boards), 5);
    assert_eq!(n(&Deadline), 10);
    assert_eq!(n(&Sizes), 3);
    assert_eq!(n(&Batch), 3);
    assert_eq!(n(&Brownout), 3);
    // On equal numbers nothing strictly better holds: the checks read the points, not constants.
    assert!(!Fig4.checks(tables.get("fig4").unwrap())[0].holds);
}

#[test]
fn the_report_order_lists_synthetic_experiments_before_production() {
    let order: Vec<&str> = all().iter().map(|e| e.id()).collect();
    assert_eq!(
        order,
        [
            "fig2", "fig3", "fig4", "fig5", "fig6", "speedup", "release", "fig7", "boards", "cus",
            "deadline", "sizes", "batching", "brownout", "gaps", "table9", "table8"
        ]
    );
    let production: BTreeSet<&str> = all().iter().filter(|e| e.uses_production()).map(|e| e.id()).collect();
    assert_eq!(production, BTreeSet::from(["table8", "table9"]));
}
