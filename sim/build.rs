//! Builds the simulated board's models: each Verilog design under `bitstreams/sim/`, and each
//! kernel inside its Vitis stream wrapper (`scripts/vitis/<kernel>_axis.v`, the RTL a real board
//! runs, checked on the generic stream driver against the references), is verilated and compiled (as ONE
//! translation unit, optimised) into its own shared library, loadable and unloadable at run time the
//! way a board is reconfigured. The Verilator runtime is compiled once
//! into `libspork_verilated.so`, which every model links against. A model repository's RTL goes
//! through the same code (`src/verilate.rs`) at run time.

use std::env;
use std::fs;
use std::path::PathBuf;

#[path = "src/verilate.rs"]
#[allow(dead_code)]
mod verilate;

// verilate.rs runs its tools through it (`crate::bounded`).
#[path = "src/bounded.rs"]
#[allow(dead_code)]
mod bounded;

const DESIGNS: [&str; 7] = ["sobel", "sobel8", "bloom", "bloom8", "dense", "dense32", "dispatch"];

/// The kernels with a Vitis stream wrapper, built as `<kernel>_axis`.
const WRAPPED: [&str; 3] = ["sobel", "bloom", "dense"];

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let rtl = manifest.join("../bitstreams/sim");
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/shim.cpp");
    println!("cargo:rerun-if-changed=src/fatal.cpp");
    println!("cargo:rerun-if-changed=src/verilate.rs");
    println!("cargo:rerun-if-changed={}", rtl.join("lint.vlt").display());

    let tools = verilate::Toolchain::find().unwrap_or_else(|e| fail(&e));
    let runtime = tools.build_runtime(&out).unwrap_or_else(|e| fail(&e));
    for name in DESIGNS {
        let source = rtl.join(format!("{name}.v"));
        println!("cargo:rerun-if-changed={}", source.display());
        let design = verilate::Design {
            name: name.into(),
            top: name.into(),
            sources: vec![source.clone()],
            dir: rtl.clone(),
            waivers: vec![rtl.join("lint.vlt")],
            strict: true,
        };
        verilate::build(&tools, &design, &out, &runtime).unwrap_or_else(|e| fail(&e));
        // Keep the exact source beside the model, so tools can tell which Verilog it was built from.
        fs::copy(&source, out.join(name).join("source.v"))
            .unwrap_or_else(|e| fail(&format!("cannot copy {}: {e}", source.display())));
    }
    let vitis = manifest.join("../scripts/vitis");
    println!("cargo:rerun-if-changed={}", vitis.join("lint.vlt").display());
    for kernel in WRAPPED {
        let wrapper = vitis.join(format!("{kernel}_axis.v"));
        println!("cargo:rerun-if-changed={}", wrapper.display());
        let design = verilate::Design {
            name: format!("{kernel}_axis"),
            top: format!("{kernel}_axis"),
            sources: vec![wrapper, rtl.join(format!("{kernel}.v"))],
            dir: vitis.clone(),
            waivers: vec![rtl.join("lint.vlt"), vitis.join("lint.vlt")],
            strict: true,
        };
        verilate::build(&tools, &design, &out, &runtime).unwrap_or_else(|e| fail(&e));
    }
    println!("cargo:rustc-env=SPORK_SIM_BUILT_MODELS={}", out.display());
}

fn fail(what: &dyn std::fmt::Display) -> ! {
    panic!("\n\nspork-sim: {what}\n\n");
}
