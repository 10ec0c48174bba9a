//! `spork reproduce --quick --check`: every experiment runs, writes its files, and the paper's
//! qualitative findings hold on our numbers (what CI asserts). Takes a few minutes on 2 cores.

use spork::reproduce::experiment::{Experiment, Inputs};
use spork::reproduce::experiments::{Table8, Table9, all};
use spork::reproduce::jobs::{Job, Scale};
use spork::reproduce::production::Sources;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// The runs `spork reproduce --quick` plans for `experiments` on `inputs`.
fn planned(experiments: &[&dyn Experiment], inputs: &Inputs) -> Vec<Job> {
    experiments.iter().flat_map(|e| e.jobs(inputs)).collect()
}

/// Quick scale, no production dataset: what `spork reproduce --quick` runs by default.
fn synthetic() -> Inputs {
    Inputs { scale: Scale::quick(), production: Vec::new() }
}

/// Claims in `<out>/claims.json`: (experiment, finding, ours).
fn claims(out: &Path) -> Vec<(String, String, Option<f64>)> {
    let text = std::fs::read_to_string(out.join("claims.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    json["claims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["experiment"].as_str().unwrap().into(),
                c["finding"].as_str().unwrap().into(),
                c["ours"].as_f64(),
            )
        })
        .collect()
}

/// Every claim of the experiments that ran resolves to a number: a mistyped key would show n/a.
fn assert_claims_resolve(out: &Path, ran: &[&dyn Experiment]) {
    let claims = claims(out);
    let expected: usize = ran.iter().map(|e| e.claims().len()).sum();
    assert_eq!(claims.len(), expected, "{claims:?}");
    for (e, finding, ours) in &claims {
        assert!(ours.is_some_and(f64::is_finite), "{e}: '{finding}' has no number");
    }
}

#[test]
fn quick_reproduction_holds_the_papers_findings() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results");
    let o = Command::new(env!("CARGO_BIN_EXE_spork"))
        .args(["reproduce", "--quick", "--check", "--out"])
        .arg(&out)
        .output()
        .expect("spork runs");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "reproduce --quick --check failed:\n{stderr}");
    let jobs = planned(&all(), &synthetic());
    assert!(stderr.contains(&format!("{} runs (0 resumed, 0 failed)", jobs.len())), "{stderr}");
    let folders: BTreeSet<&str> = jobs.iter().map(|j| j.folder).collect();
    for e in folders {
        for ext in ["csv", "json", "png", "svg"] {
            let f = out.join(e).join(format!("{e}.{ext}"));
            assert!(f.metadata().map(|m| m.len() > 100).unwrap_or(false), "missing or empty {}", f.display());
        }
    }
    let report = std::fs::read_to_string(out.join("REPORT.md")).unwrap();
    assert!(report.contains("| finding | paper | ours | ours / paper |"));
    assert!(!report.contains("**no**"), "a finding failed:\n{report}");
    assert!(report.contains("Table 8: production traces") && report.contains("--azure DIR"));
    let ran: Vec<&dyn Experiment> = all().into_iter().filter(|e| !e.jobs(&synthetic()).is_empty()).collect();
    assert_claims_resolve(&out, &ran);

    // A second invocation resumes everything and recomputes the same report figures.
    let again = Command::new(env!("CARGO_BIN_EXE_spork"))
        .args(["reproduce", "--quick", "--only", "table9", "--out"])
        .arg(&out)
        .output()
        .expect("spork runs");
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(again.status.success(), "{stderr}");
    let table9 = planned(&[&Table9], &synthetic()).len();
    assert!(stderr.contains(&format!("{table9} runs ({table9} resumed, 0 failed)")), "{stderr}");
}

#[test]
fn production_tables_from_files_in_the_real_formats() {
    use spork::trace::production::{App, write_alibaba, write_azure};
    let dir = tempfile::tempdir().unwrap();
    let (az, ali) = (dir.path().join("azure"), dir.path().join("alibaba"));
    std::fs::create_dir_all(&az).unwrap();
    std::fs::create_dir_all(&ali).unwrap();
    // Two heavy short applications and one that needs less than one worker (not selected).
    let ramp: Vec<f64> = (0..30).map(|m| 200.0 + 150.0 * ((m as f64) / 4.0).sin().abs()).collect();
    let apps = vec![
        App { name: "own/app/short".into(), size_s: 0.04, minute_rates: ramp.clone() },
        App {
            name: "own/app/medium".into(),
            size_s: 0.3,
            minute_rates: ramp.iter().map(|r| r / 8.0).collect(),
        },
        App { name: "own/app/tiny".into(), size_s: 0.02, minute_rates: vec![1.0; 30] },
    ];
    write_azure(&az, 1, &apps).unwrap();
    write_alibaba(&ali, &apps, 2).unwrap();
    let out = dir.path().join("results");
    let o = Command::new(env!("CARGO_BIN_EXE_spork"))
        .args(["reproduce", "--quick", "--only", "table8,table9", "--out"])
        .arg(&out)
        .arg("--azure")
        .arg(&az)
        .arg("--alibaba")
        .arg(&ali)
        .output()
        .expect("spork runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // One point per (dataset, size bucket, scheduler) that has a selected application.
    let sources =
        Sources { azure: Some(az.clone()), azure_day: None, alibaba: Some(ali.clone()), force: false };
    let inputs = Inputs { scale: Scale::quick(), production: sources.load(&Scale::quick()).unwrap() };
    let table8 = planned(&[&Table8], &inputs);
    let points: BTreeSet<String> = table8.iter().map(|j| format!("{:?} {}", j.params, j.series)).collect();
    assert_eq!(points.len(), 2 * 2 * 9, "both datasets select an application in both buckets");
    let csv = std::fs::read_to_string(out.join("table8/table8.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + points.len(), "{csv}");
    let report = std::fs::read_to_string(out.join("REPORT.md")).unwrap();
    assert!(report.contains("SporkE energy efficiency, Azure short"), "{report}");
    assert!(report.contains("On the production traces"), "{report}");
    assert_claims_resolve(&out, &[&Table9, &Table8]);

    let missing = Command::new(env!("CARGO_BIN_EXE_spork"))
        .args(["reproduce", "--quick", "--only", "table8", "--out"])
        .arg(&out)
        .arg("--azure")
        .arg(dir.path())
        .output()
        .expect("spork runs");
    let e = String::from_utf8_lossy(&missing.stderr);
    assert!(!missing.status.success() && e.contains("AzurePublicDataset"), "{e}");
}
