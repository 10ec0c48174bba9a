//! End-to-end tests of `spork hdl` on the checked-in RTL (needs Verilator and yosys, which
//! `.ci/run` installs).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn spork(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_spork")).args(args).output().expect("spork runs")
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn sim_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../bitstreams/sim")
}

/// A scratch copy of `bitstreams/sim` to edit.
fn copy_sim_dir() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("tempdir");
    for e in std::fs::read_dir(sim_dir()).expect("bitstreams/sim") {
        let p = e.expect("entry").path();
        std::fs::copy(&p, tmp.path().join(p.file_name().expect("name"))).expect("copy");
    }
    tmp
}

#[test]
fn lint_is_clean_on_every_design() {
    let o = spork(&["hdl", "lint"]);
    assert!(o.status.success(), "{}", text(&o));
    for d in ["sobel", "bloom", "dense", "dispatch"] {
        assert!(text(&o).contains(&format!("{d}: clean")), "{}", text(&o));
    }
}

#[test]
fn lint_fails_on_a_real_warning() {
    let tmp = copy_sim_dir();
    // An unused input is a real -Wall warning that no waiver covers.
    let path = tmp.path().join("sobel.v");
    let v = std::fs::read_to_string(&path).expect("read");
    let v = v.replacen("input wire  clock;", "input wire  clock;\n    input wire  spare;", 1);
    let v = v.replacen("module sobel(clock,", "module sobel(spare,clock,", 1);
    std::fs::write(&path, v).expect("write");
    let o = spork(&["hdl", "lint", "--dir", tmp.path().to_str().expect("utf8")]);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("sobel: FAILED") && text(&o).contains("spare"), "{}", text(&o));
}

#[test]
fn report_measures_every_design_against_its_manifest() {
    let o = spork(&["hdl", "report", "--json"]);
    assert!(o.status.success(), "{}", text(&o));
    let rows: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let rows = rows.as_array().expect("array");
    let mut names: Vec<&str> = rows.iter().filter_map(|r| r["name"].as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["bloom", "bloom8", "dense", "dense32", "dispatch", "sobel", "sobel8"]);
    for r in rows {
        let name = r["name"].as_str().expect("name");
        assert_eq!(r["manifest_current"], true, "{name}: manifest stale; run `spork hdl synth`");
        let per_cycle = 1.0 / r["cycles_per_item"].as_f64().expect("cpi");
        // The wide builds take eight (32) items a beat, less partial beats and idle cycles.
        let want = match name {
            "sobel8" | "bloom8" => 7.5..=8.0,
            "dense32" => 31.0..=32.0,
            _ => 0.99..=1.0,
        };
        assert!(want.contains(&per_cycle), "{name}: {per_cycle} items per cycle, want {want:?}");
        assert!(r["load_ms_median"].as_f64().expect("load") > 0.0);
        assert!(r["lut"].as_u64().expect("lut") > 0, "{name}");
    }
    let dense = rows.iter().find(|r| r["name"] == "dense").expect("dense");
    assert_eq!(dense["dsp"], 8, "one DSP per neuron");
}

#[test]
fn generate_check_finds_stale_verilog_and_generate_fixes_it() {
    let tmp = copy_sim_dir();
    let dir = tmp.path().to_str().expect("utf8");
    let path = tmp.path().join("bloom.v");
    std::fs::write(&path, "// edited by hand\n").expect("write");
    let o = spork(&["hdl", "generate", "--check", "--dir", dir]);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("bloom") && text(&o).contains("differs"), "{}", text(&o));
    let o = spork(&["hdl", "generate", "--dir", dir]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(std::fs::read(&path).expect("read"), std::fs::read(sim_dir().join("bloom.v")).expect("read"));
    assert!(spork(&["hdl", "generate", "--check", "--dir", dir]).status.success());
}

#[test]
fn a_broken_manifest_names_file_line_and_field() {
    let tmp = copy_sim_dir();
    let path = tmp.path().join("dense.toml");
    let m = std::fs::read_to_string(&path).expect("read").replace("clock_mhz = 250.0", "clock_mhz = -5.0");
    std::fs::write(&path, m).expect("write");
    let o = spork(&["hdl", "report", "--dir", tmp.path().to_str().expect("utf8")]);
    assert!(!o.status.success());
    let t = text(&o);
    assert!(t.contains("dense.toml:") && t.contains("clock_mhz") && t.contains("fix"), "{t}");
    let m = std::fs::read_to_string(&path).expect("read").replace("clock_mhz = -5.0", "clock_mhz = 250.0");
    let m = m.replace("items_per_cycle = ", "items_per_cycle = -");
    std::fs::write(&path, m).expect("write");
    let o = spork(&["hdl", "report", "--dir", tmp.path().to_str().expect("utf8")]);
    assert!(!o.status.success() && text(&o).contains("items_per_cycle"), "{}", text(&o));
}

#[test]
fn a_missing_folder_says_what_to_point_at() {
    let o = spork(&["hdl", "lint", "--dir", "/nonexistent/spork"]);
    assert!(!o.status.success());
    assert!(text(&o).contains("bitstreams/sim"), "{}", text(&o));
}

#[test]
fn synth_refuses_verilog_the_simulated_model_was_not_built_from() {
    let tmp = copy_sim_dir();
    let path = tmp.path().join("bloom.v");
    let v = std::fs::read_to_string(&path).expect("read") + "// edited\n";
    std::fs::write(&path, v).expect("write");
    let o = spork(&["hdl", "synth", "--dir", tmp.path().to_str().expect("utf8")]);
    assert!(!o.status.success());
    assert!(text(&o).contains("built from other Verilog") && text(&o).contains("fix"), "{}", text(&o));
}

/// `spork hdl timing` places and routes the smallest design (bloom; a few seconds) on the iCE40 and
/// records whether it fits and its achieved clock in a copy of its manifest; an unknown design is
/// refused naming the ones there are. (The full table, dense not fitting the largest iCE40 among
/// them, is in docs/hardware.md: dense's synthesis alone takes about a minute.)
#[test]
fn timing_places_and_routes_a_design_and_records_its_clock() {
    let tmp = copy_sim_dir();
    let dir = tmp.path().to_str().expect("utf8");
    let o = spork(&["hdl", "timing", "--dir", dir, "--only", "bloom"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("bloom") && text(&o).contains("iCE40 HX8K"), "{}", text(&o));
    let m: toml::Value =
        toml::from_str(&std::fs::read_to_string(tmp.path().join("bloom.toml")).expect("manifest"))
            .expect("toml");
    let t = &m["timing"];
    assert_eq!(t["fits"].as_bool(), Some(true), "{t}");
    let fmax = t["fmax_mhz"].as_float().expect("fmax");
    assert!(fmax > 10.0 && fmax < 1000.0, "{t}");
    assert!(t["logic_cells"].as_integer().expect("cells") > 0, "{t}");
    let o = spork(&["hdl", "timing", "--dir", dir, "--only", "fft"]);
    assert!(
        !o.status.success() && text(&o).contains("no such design") && text(&o).contains("sobel"),
        "{}",
        text(&o)
    );
    // Another nextpnr by --nextpnr (a newer one routes what Debian's cannot); one that is not there
    // is named with the fix.
    let o = spork(&["hdl", "timing", "--dir", dir, "--only", "bloom", "--nextpnr", "/nonexistent/nextpnr"]);
    assert!(!o.status.success() && text(&o).contains("--nextpnr PATH"), "{}", text(&o));
}
