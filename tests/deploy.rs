//! `deploy/`, what an operator applies: every kustomize target renders (`kubectl kustomize` where it
//! exists, else scripts/kustomize-render.py), validates offline against the Kubernetes schemas
//! (`kubernetes-validate --strict`), and carries the overlays' settings into the containers'
//! arguments; a copy with a broken setting fails (issue: many hosts).

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().expect("repo root")
}

fn check(deploy: &Path) -> (bool, String) {
    let o = Command::new(root().join("scripts/deploy-check.sh"))
        .env("SPORK_DEPLOY", deploy)
        .output()
        .expect("scripts/deploy-check.sh runs (bash, python3)");
    (
        o.status.success(),
        format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr)),
    )
}

#[test]
fn every_overlay_renders_validates_and_reaches_the_containers() {
    let o =
        Command::new("shellcheck").arg(root().join("scripts/deploy-check.sh")).output().expect("shellcheck");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    let (ok, out) = check(&root().join("deploy"));
    assert!(ok, "{out}");
    for target in ["base", "alveo", "f1", "alveo+servicemonitor"] {
        assert!(out.contains(&format!("ok    {target}:")), "{target} not checked:\n{out}");
    }
}

#[test]
fn a_setting_that_does_not_reach_its_container_fails_the_check() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("deploy");
    let status = Command::new("cp").arg("-r").arg(root().join("deploy")).arg(&copy).status().unwrap();
    assert!(status.success());
    // The F1 overlay's worker started on the emulated board: its setting no longer reaches it.
    let patch = copy.join("overlays/f1/fpga-worker.yaml");
    let text = std::fs::read_to_string(&patch).unwrap();
    let broken = text.replacen("--board\n            - f1", "--board\n            - model", 1);
    assert_ne!(broken, text, "the overlay's --board f1 moved: update this test");
    std::fs::write(&patch, broken).unwrap();
    let (ok, out) = check(&copy);
    assert!(!ok, "a broken overlay passed:\n{out}");
    assert!(out.contains("FAIL  f1") && out.contains("--board"), "{out}");
}
