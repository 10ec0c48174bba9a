//! The checked-in Verilog under `bitstreams/sim/` and the model repository's generated files under
//! `models/` are exactly what the RTL and the seed generate today.

use std::path::PathBuf;

use spork_hdl::verilog::{DESIGNS, generate};

/// This crate's directory in the checkout under test: cargo's variable when it runs the test (a test
/// binary built from another checkout into a shared target directory, and not rebuilt, would
/// otherwise read that checkout's files), else the one it was built in.
fn manifest_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
}

#[test]
fn checked_in_verilog_matches_a_fresh_generation() {
    let dir = manifest_dir().join("../bitstreams/sim");
    for name in DESIGNS {
        let path = dir.join(format!("{name}.v"));
        let on_disk = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let fresh = generate(name).expect("design");
        assert!(on_disk == fresh, "{} is stale: run `cargo run -p spork-hdl -- generate`", path.display());
    }
}

#[test]
fn the_model_repositorys_generated_files_match_a_fresh_generation() {
    let dir = manifest_dir().join("../models");
    for (rel, fresh) in spork_hdl::repository::files() {
        let path = dir.join(&rel);
        let on_disk = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(on_disk == fresh, "{} is stale: run `cargo run -p spork-hdl -- generate`", path.display());
    }
}

#[test]
fn every_design_has_its_own_top_module() {
    for name in DESIGNS {
        let v = generate(name).expect("design");
        assert!(v.contains(&format!("module {name}(")), "{name}");
        assert!(!v.contains("module top("), "{name} still has a module named top");
    }
    assert!(generate("nonexistent").is_none());
}
