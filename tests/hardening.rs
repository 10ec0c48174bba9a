//! Values the parsers accept but no run can honour, refused up front with the flag or field to change;
//! output that cannot be written ends the command with an error, never a panic (issue: hardening).
//! Each case is one of the commands that broke before, run against the real binary.

use std::process::{Command, Output, Stdio};

fn spork(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_spork")).args(args).output().expect("spork runs")
}

/// Fails cleanly (exit 2, no panic) with every needle in its error.
fn refused(args: &[&str], needles: &[&str]) {
    let o = spork(args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: '{n}' not in: {err}");
    }
}

#[test]
fn a_full_stdout_is_an_error_not_a_panic() {
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").expect("/dev/full");
    let o = Command::new(env!("CARGO_BIN_EXE_spork"))
        .args(["simulate", "--duration", "2m", "--workers", "5"])
        .stdout(Stdio::from(full))
        .output()
        .expect("spork runs");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("cannot write to standard output"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn platform_figures_beyond_their_ranges_are_refused() {
    refused(&["simulate", "--fpga-speedup", "1e-300"], &["fpga.speedup", "0.001"]);
    refused(&["simulate", "--fpga-spinup", "1ns"], &["fpga.spin_up", "1 ms"]);
    let dir = tempfile::tempdir().expect("tempdir");
    let config = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).expect("write");
        p.to_string_lossy().into_owned()
    };
    let deadline = config("d.toml", "[requests]\ndeadline_factor = 1e300\n");
    refused(&["simulate", "--config", &deadline], &["d.toml:2", "deadline_factor", "1000000"]);
    let years = config("y.toml", "[cpu]\nspin_up = \"1000000years\"\n");
    refused(&["simulate", "--config", &years], &["y.toml:2", "cpu.spin_up", "out of range"]);
}

#[test]
fn solver_inputs_beyond_their_ranges_are_refused() {
    refused(&["optimal", "--workers", "1e300"], &["--workers"]);
    refused(&["optimal", "--intervals", "10000000"], &["--intervals", "86400"]);
    refused(&["optimal", "--intervals", "60", "--time-limit", "NaN"], &["--time-limit"]);
    refused(&["optimal", "--intervals", "60", "--gap", "NaN"], &["--gap"]);
}

#[test]
fn brownout_work_beyond_the_budget_needs_force() {
    refused(&["brownout", "--seeds", "18446744073709551615"], &["simulated hours", "--force"]);
    refused(&["brownout", "--seeds", "10000000000"], &["--force"]);
    refused(&["brownout", "--duration", "1000000h", "--seeds", "1"], &["--force"]);
}

#[test]
fn a_live_request_too_large_to_build_is_refused_before_the_run() {
    refused(&["run", "--size", "1h", "--rate", "2", "--duration", "2s"], &["live limit", "--size"]);
}
