//! `spork reproduce --quick --check`: every experiment runs, writes its files, and the paper's
//! qualitative findings hold on our numbers (what CI asserts). Takes a few minutes on 2 cores.

use std::process::Command;

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
    for e in ["fig2", "fig3", "fig4", "fig5", "fig6", "fig7", "table9"] {
        for ext in ["csv", "json", "png", "svg"] {
            let f = out.join(e).join(format!("{e}.{ext}"));
            assert!(f.metadata().map(|m| m.len() > 100).unwrap_or(false), "missing or empty {}", f.display());
        }
    }
    let report = std::fs::read_to_string(out.join("REPORT.md")).unwrap();
    assert!(report.contains("| finding | paper | ours | ours / paper |"));
    assert!(!report.contains("**no**"), "a finding failed:\n{report}");
    assert!(report.contains("Table 8: production traces") && report.contains("--azure DIR"));

    // A second invocation resumes everything and recomputes the same report figures.
    let again = Command::new(env!("CARGO_BIN_EXE_spork"))
        .args(["reproduce", "--quick", "--only", "table9", "--out"])
        .arg(&out)
        .output()
        .expect("spork runs");
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(again.status.success(), "{stderr}");
    assert!(stderr.contains("(18 resumed, 0 failed)"), "{stderr}");
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
    let csv = std::fs::read_to_string(out.join("table8/table8.csv")).unwrap();
    // 2 datasets x 2 buckets x 9 schedulers, one selected app per bucket.
    assert_eq!(csv.lines().count(), 1 + 2 * 2 * 9, "{csv}");
    let report = std::fs::read_to_string(out.join("REPORT.md")).unwrap();
    assert!(report.contains("SporkE energy efficiency, Azure short"), "{report}");
    assert!(report.contains("On the production traces"), "{report}");

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
