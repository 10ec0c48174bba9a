//! Builds the simulated board's models: each Verilog design under `bitstreams/sim/` is verilated and
//! compiled (as ONE translation unit, optimised) into its own shared library, loadable and
//! unloadable at run time the way a board is reconfigured. The Verilator runtime is compiled once
//! into `libspork_verilated.so`, which every model links against.

use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const DESIGNS: [&str; 4] = ["sobel", "bloom", "dense", "dispatch"];

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let rtl = manifest.join("../bitstreams/sim");
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/shim.cpp");
    println!("cargo:rerun-if-changed={}", rtl.join("lint.vlt").display());

    let root = verilator_root();
    let include = root.join("include");
    let runtime = build_runtime(&include, &out);
    for name in DESIGNS {
        let source = rtl.join(format!("{name}.v"));
        println!("cargo:rerun-if-changed={}", source.display());
        build_model(name, &source, &rtl.join("lint.vlt"), &include, &out, &runtime);
    }
    println!("cargo:rustc-env=SPORK_SIM_BUILT_MODELS={}", out.display());
}

fn fail(what: &str) -> ! {
    panic!("\n\nspork-sim: {what}\n\n");
}

fn verilator_root() -> PathBuf {
    let run = Command::new("verilator").arg("--getenv").arg("VERILATOR_ROOT").output();
    match run {
        Ok(o) if o.status.success() => PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()),
        _ => fail(
            "Verilator 5 was not found on PATH; the simulated board is built with it.\n\
             Install it (Debian/Ubuntu: `apt-get install -y verilator`) and build again.",
        ),
    }
}

fn compiler() -> cc::Build {
    let mut b = cc::Build::new();
    b.cpp(true)
        .pic(true)
        .opt_level(2)
        .debug(false)
        .cargo_metadata(false)
        .flag_if_supported("-std=c++17")
        .flag_if_supported("-faligned-new")
        // Without this, g++ marks template statics STB_GNU_UNIQUE and dlclose never unloads a model.
        .flag_if_supported("-fno-gnu-unique")
        .flag_if_supported("-Wno-unused-parameter")
        .flag_if_supported("-Wno-bool-operation")
        .flag_if_supported("-Wno-sign-compare")
        .flag_if_supported("-Wno-unused-variable")
        .flag_if_supported("-Wno-shadow")
        .warnings(false)
        .define("VM_COVERAGE", "0")
        .define("VM_SC", "0")
        .define("VM_TRACE", "0")
        .define("VM_TRACE_FST", "0")
        .define("VM_TRACE_VCD", "0");
    b
}

/// The Verilator runtime, compiled once and shared by every model.
fn build_runtime(include: &Path, out: &Path) -> PathBuf {
    let lib = out.join("libspork_verilated.so");
    let objects = compiler()
        .include(include)
        .include(include.join("vltstd"))
        .file(include.join("verilated.cpp"))
        .file(include.join("verilated_threads.cpp"))
        .compile_intermediates();
    let mut link = compiler().get_compiler().to_command();
    link.arg("-shared").arg("-o").arg(&lib).args(&objects).arg("-pthread");
    run(&mut link, "linking the Verilator runtime");
    lib
}

fn build_model(name: &str, source: &Path, waivers: &Path, include: &Path, out: &Path, runtime: &Path) {
    let dir = out.join(name);
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap_or_else(|e| fail(&format!("cannot create {}: {e}", dir.display())));
    // Keep the exact source beside the model, so tools can tell which Verilog a model was built from.
    fs::copy(source, dir.join("source.v"))
        .unwrap_or_else(|e| fail(&format!("cannot copy {}: {e}", source.display())));
    let prefix = format!("V{name}");
    let mut verilate = Command::new("verilator");
    verilate
        .arg("--cc")
        .arg(waivers)
        .arg(source)
        .args(["--top-module", name, "--prefix", &prefix, "-O3", "--x-assign", "fast", "--x-initial", "fast"])
        .args(["--noassert", "-Wall", "-Mdir"])
        .arg(&dir);
    run(&mut verilate, &format!("verilating {}", source.display()));

    // One translation unit: every generated .cpp plus the shim, whose port table comes from the
    // model's header.
    let header = fs::read_to_string(dir.join(format!("{prefix}.h")))
        .unwrap_or_else(|e| fail(&format!("Verilator wrote no header for {name}: {e}")));
    let ports = parse_ports(&header);
    let mut unit = String::new();
    let mut generated: Vec<_> = fs::read_dir(&dir)
        .unwrap_or_else(|e| fail(&format!("cannot list {}: {e}", dir.display())))
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .filter(|f| f.ends_with(".cpp"))
        .collect();
    generated.sort();
    for f in &generated {
        writeln!(unit, "#include \"{f}\"").expect("write to String");
    }
    writeln!(unit, "#define SPORK_MODEL {prefix}\n#define SPORK_MODEL_NAME \"{name}\"")
        .expect("write to String");
    writeln!(unit, "#define SPORK_PORT_COUNT {}", ports.len()).expect("write to String");
    unit.push_str("#define SPORK_PORTS(X) \\\n");
    for (i, p) in ports.iter().enumerate() {
        writeln!(
            unit,
            "  X({i}, {}, \"{}\", {}, {}) \\",
            p.member,
            p.verilog_name(),
            p.width,
            u8::from(p.input)
        )
        .expect("write to String");
    }
    unit.push('\n');
    let shim = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("set")).join("src/shim.cpp");
    writeln!(unit, "#include \"{}\"", shim.display()).expect("write to String");
    let unit_path = dir.join(format!("{name}_model.cpp"));
    fs::write(&unit_path, unit)
        .unwrap_or_else(|e| fail(&format!("cannot write {}: {e}", unit_path.display())));

    let lib = out.join(format!("libspork_model_{name}.so"));
    let mut cmd =
        compiler().include(include).include(include.join("vltstd")).include(&dir).get_compiler().to_command();
    cmd.arg("-shared")
        .arg("-o")
        .arg(&lib)
        .arg(&unit_path)
        .arg(format!("-L{}", out.display()))
        .arg("-lspork_verilated")
        .arg("-Wl,-rpath,$ORIGIN")
        .arg("-pthread");
    let _ = runtime;
    run(&mut cmd, &format!("compiling the {name} model"));
}

struct Port {
    member: String,
    width: u32,
    input: bool,
}

impl Port {
    /// Verilator escapes `$` in names as `__024`.
    fn verilog_name(&self) -> String {
        self.member.replace("__024", "$")
    }
}

/// Ports from the model header's `VL_IN8(&name,msb,lsb);` style declarations.
fn parse_ports(header: &str) -> Vec<Port> {
    let mut ports = Vec::new();
    for line in header.lines() {
        let line = line.trim();
        let (input, rest) = if let Some(r) = line.strip_prefix("VL_IN") {
            (true, r)
        } else if let Some(r) = line.strip_prefix("VL_OUT") {
            (false, r)
        } else {
            continue;
        };
        let Some(open) = rest.find("(&") else { continue };
        if rest[..open].contains('W') {
            fail(&format!("port in `{line}` is wider than 64 bits; the board's ports must fit in 64"));
        }
        let args: Vec<&str> = rest[open + 2..].trim_end_matches(");").split(',').map(str::trim).collect();
        let [member, msb, lsb] = args[..] else { fail(&format!("cannot parse port declaration `{line}`")) };
        let (msb, lsb): (u32, u32) = match (msb.parse(), lsb.parse()) {
            (Ok(m), Ok(l)) => (m, l),
            _ => fail(&format!("cannot parse port widths in `{line}`")),
        };
        ports.push(Port { member: member.to_string(), width: msb - lsb + 1, input });
    }
    if ports.is_empty() {
        fail("the model header declares no ports");
    }
    ports
}

fn run(cmd: &mut Command, what: &str) {
    match cmd.output() {
        Ok(o) if o.status.success() => {}
        Ok(o) => fail(&format!(
            "{what} failed ({}):\n{:?}\n{}{}",
            o.status,
            cmd,
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )),
        Err(e) => fail(&format!("{what}: cannot run {:?}: {e}", cmd.get_program())),
    }
}
