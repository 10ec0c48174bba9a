//! The F1 backend's checks (feature `f1`): bad AGFI ids and a machine without slots are refused before
//! any SDK call; with a slot but no SDK library, the configuration fails clearly and every request is
//! still answered on CPUs.

use std::path::Path;
use std::process::{Command, Output};

fn spork(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_spork")).args(args).output().expect("spork runs")
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

const AGFI: &str = "agfi-0123456789abcdef0";

#[test]
fn refused_before_any_sdk_call() {
    let o = spork(&["run", "--board", "f1", "--agfi", "agfi-12", "--duration", "2s"]);
    assert!(!o.status.success() && text(&o).contains("invalid AGFI id"), "{}", text(&o));
    let o = spork(&["run", "--board", "f1", "--agfi", AGFI, "--sys", "/nonexistent", "--duration", "2s"]);
    assert!(
        !o.status.success() && text(&o).contains("no AWS FPGA slot") && text(&o).contains("fix"),
        "{}",
        text(&o)
    );
}

#[test]
fn without_the_sdk_the_slot_fails_to_configure_and_cpus_answer() {
    let sys = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/sysfs");
    let o = spork(&[
        "run",
        "--board",
        "f1",
        "--agfi",
        AGFI,
        "--sys",
        sys.to_str().expect("utf8"),
        "--scheduler",
        "spork-e",
        "--duration",
        "3s",
        "--rate",
        "300",
        "--fpga-spinup",
        "200ms",
        "--clock-mhz",
        "250",
        "--json",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let r = &v["runs"][0];
    assert_eq!(r["board"], format!("f1 slot 0 ({AGFI})"));
    assert!(r["configure_failures"].as_u64().expect("failures") >= 1, "{r}");
    assert!(r["faults"].to_string().contains("libfpga_mgmt"), "{r}");
    assert_eq!(r["answered"], r["offered"], "no request lost");
}
