//! The board build flow, as far as it can run here: the scripts are shellcheck-clean and their
//! `--dry-run` prints the Vivado, v++ and AFI commands; the Vitis stream wrappers lint clean under
//! Verilator with their kernels and pass the Icarus Verilog smoke test against reference models.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().expect("repo root")
}

fn run(cmd: &mut Command) -> (bool, String) {
    let o = cmd.output().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e} (.ci/run installs it)"));
    (
        o.status.success(),
        format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr)),
    )
}

#[test]
fn scripts_are_shellcheck_clean_and_dry_runs_print_the_flow() {
    let r = root();
    let (ok, out) = run(Command::new("shellcheck")
        .arg(r.join("scripts/build-xclbin.sh"))
        .arg(r.join("scripts/build-afi.sh"))
        .arg(r.join("scripts/remote-bench.sh"))
        .arg(r.join("scripts/latency-guard.sh"))
        .arg(r.join("scripts/setup-debian.sh"))
        .arg(r.join("scripts/attacks.sh"))
        .arg(r.join("scripts/evaluator-outputs.sh"))
        .arg(r.join(".ci/run")));
    assert!(ok, "{out}");
    let (ok, out) = run(Command::new(r.join("scripts/build-xclbin.sh")).args([
        "--kernel",
        "dense",
        "--platform",
        "xilinx_u250_gen3x16_xdma_4_1_202210_1",
        "--dry-run",
    ]));
    assert!(ok, "{out}");
    for needle in [
        "vivado -mode batch",
        "package_kernel.tcl",
        "v++ -c",
        "-k mm2s",
        "-k s2mm",
        "v++ -l",
        "dense_axis",
        "dense.hw.xclbin",
    ] {
        assert!(out.contains(needle), "missing {needle}:\n{out}");
    }
    let (ok, out) = run(Command::new(r.join("scripts/build-afi.sh")).args([
        "--xclbin",
        "build/vitis/sobel.hw/sobel.hw.xclbin",
        "--bucket",
        "b",
        "--dry-run",
    ]));
    assert!(ok, "{out}");
    assert!(out.contains("create_vitis_afi.sh") && out.contains("describe-fpga-images"), "{out}");
    let (ok, out) = run(Command::new(r.join("scripts/build-xclbin.sh")).args([
        "--kernel",
        "fft",
        "--platform",
        "p",
        "--dry-run",
    ]));
    assert!(!ok && out.contains("fft"), "a bad kernel is refused: {out}");
}

/// A repository model's Vitis kernel (`spork kernel package`) goes through the same flow: its
/// generated top and every one of its Verilog files are what Vivado packages, and no manifest is
/// written (the model's model.toml names its image).
#[test]
fn a_packaged_model_builds_through_the_same_flow() {
    let r = root();
    let tmp = tempfile::tempdir().expect("tmp");
    // sobel's 64-bit beats through 64-bit data movers; dense's 512-bit beats through 512-bit ones.
    let mut out = String::new();
    for (model, top, bits) in [("sobel", "sobel8_stream", 64), ("dense", "dense32_stream", 512)] {
        let pkg = tmp.path().join(model);
        let (ok, text) = run(Command::new(env!("CARGO_BIN_EXE_spork"))
            .args(["kernel", "package"])
            .arg(r.join("models").join(model))
            .arg("--out")
            .arg(&pkg));
        assert!(ok, "{text}");
        let written = std::fs::read_to_string(pkg.join("mover_bits.txt")).expect("mover_bits.txt");
        assert_eq!(written.trim(), bits.to_string(), "{model}");
        let (ok, text) = run(Command::new(r.join("scripts/build-xclbin.sh"))
            .arg("--package")
            .arg(&pkg)
            .args(["--platform", "xilinx_u250_gen3x16_xdma_4_1_202210_1", "--dry-run"]));
        assert!(ok, "{text}");
        let vitis = format!("{top}_vitis");
        let source = format!("{top}.v");
        let movers = format!("-D SPORK_MOVER_BITS={bits}");
        let needles: [&str; 7] =
            ["package_kernel.tcl", &vitis, &source, "-k mm2s", &movers, "v++ -l", "[fpga.alveo]"];
        for needle in needles {
            assert!(text.contains(needle), "{model}: missing {needle}:\n{text}");
        }
        out = text;
    }
    assert!(
        !out.contains("write") || !out.contains("source_sha256"),
        "no manifest for a packaged model:\n{out}"
    );
    let (ok, out) = run(Command::new(r.join("scripts/build-xclbin.sh")).args([
        "--package",
        "/nonexistent",
        "--platform",
        "p",
        "--dry-run",
    ]));
    assert!(!ok && out.contains("spork kernel package"), "a missing package names the fix: {out}");
}

#[test]
fn stream_wrappers_lint_clean_and_pass_the_smoke_test() {
    let r = root();
    for k in ["sobel", "bloom", "dense"] {
        let (ok, out) = run(Command::new("verilator")
            .args(["--lint-only", "-Wall"])
            .arg(r.join("bitstreams/sim/lint.vlt"))
            .arg(r.join("scripts/vitis/lint.vlt"))
            .arg(r.join(format!("bitstreams/sim/{k}.v")))
            .arg(r.join(format!("scripts/vitis/{k}_axis.v")))
            .args(["--top-module", &format!("{k}_axis")]));
        assert!(ok && out.trim().is_empty(), "{k}_axis: {out}");
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let exe = tmp.path().join("axis_tb");
    let mut c = Command::new("iverilog");
    c.args(["-g2005", "-o"]).arg(&exe);
    for k in ["sobel", "bloom", "dense"] {
        c.arg(r.join(format!("bitstreams/sim/{k}.v")));
    }
    for k in ["sobel", "bloom", "dense"] {
        c.arg(r.join(format!("scripts/vitis/{k}_axis.v")));
    }
    c.arg(r.join("scripts/vitis/axis_tb.v"));
    let (ok, out) = run(&mut c);
    assert!(ok, "{out}");
    let (ok, out) = run(Command::new("vvp").arg("-n").arg(&exe));
    assert!(ok, "{out}");
    assert_eq!(out.matches("PASS").count(), 3, "{out}");
    assert!(!out.contains("FAIL"), "{out}");
}

/// The Triton side by side (scripts/triton/) cannot run in CI (it downloads Triton), but its parts
/// can be checked here: the scripts are shellcheck-clean and the Python parses, and the C++
/// backend builds with -Werror against our declarations of Triton's API, exporting the entry points
/// Triton calls and leaving only Triton's own symbols (and libc's) to resolve at load.
#[test]
fn the_triton_backend_builds_and_exports_what_triton_loads() {
    let r = root();
    let t = r.join("scripts/triton");
    let (ok, out) = run(Command::new("shellcheck")
        .arg(t.join("setup.sh"))
        .arg(t.join("side-by-side.sh"))
        .arg(t.join("extensions.sh")));
    assert!(ok, "{out}");
    let dir = std::env::temp_dir().join(format!("spork-triton-backend-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let lib = dir.join("libtriton_spork_sobel.so");
    let kernel = dir.join("sobel.o");
    let (ok, out) = run(Command::new("gcc")
        .args(["-O2", "-Wall", "-Wextra", "-Werror", "-fPIC", "-c"])
        .arg(format!("-I{}", r.join("kernel-abi/include").display()))
        .arg(r.join("models/sobel/cpu/sobel.c"))
        .arg("-o")
        .arg(&kernel));
    assert!(ok, "{out}");
    let (ok, out) = run(Command::new("g++")
        .args(["-O2", "-std=c++17", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC"])
        .arg(format!("-I{}", r.join("kernel-abi/include").display()))
        .arg(format!("-I{}", t.display()))
        .arg(t.join("spork_sobel_backend.cc"))
        .arg(&kernel)
        .arg("-o")
        .arg(&lib));
    assert!(ok, "{out}");
    let (ok, symbols) = run(Command::new("nm").args(["-D", "--defined-only"]).arg(&lib));
    assert!(ok, "{symbols}");
    for entry in [
        "TRITONBACKEND_ModelInstanceInitialize",
        "TRITONBACKEND_ModelInstanceFinalize",
        "TRITONBACKEND_ModelInstanceExecute",
    ] {
        assert!(symbols.contains(entry), "{entry} not exported:\n{symbols}");
    }
    let (ok, undefined) = run(Command::new("nm").args(["-D", "--undefined-only"]).arg(&lib));
    assert!(ok, "{undefined}");
    let foreign: Vec<&str> = undefined
        .lines()
        .filter_map(|l| l.split_whitespace().last())
        .filter(|s| {
            !s.starts_with("TRITON") && !s.contains("GLIBC") && !s.contains("CXXABI") && !s.starts_with("_")
        })
        .collect();
    assert!(foreign.is_empty(), "symbols neither Triton's nor the C/C++ runtime's: {foreign:?}");
    for py in [
        "lone.py",
        "sobel_ref.py",
        "side_by_side.py",
        "summarise.py",
        "extensions.py",
        "python_model/model.py",
    ] {
        let parse = "import ast, sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])";
        let (ok, out) = run(Command::new("python3").args(["-c", parse]).arg(t.join(py)));
        assert!(ok, "{py}: {out}");
    }
    std::fs::remove_dir_all(&dir).ok();
}
