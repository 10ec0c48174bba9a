//! `spork kernel`: bring your own kernel. Scaffold a model folder, co-simulate its RTL against its
//! CPU code, synthesise it, lint it, verilate it ahead of serving.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, bail};
use clap::Subcommand;
use spork::backend::bitstream::{self, Manifest, Role, Target};
use spork::repository::check::{self, CheckOptions};
use spork::repository::cpu::{CpuLibrary, HEADER};
use spork::repository::rtl::Rtl;
use spork::repository::spec::{self, ModelSpec, is_identifier};

#[derive(Subcommand)]
pub enum Command {
    /// Scaffold a model folder NAME (streaming Verilog, C and Rust CPU skeletons, model.toml) that
    /// passes `spork kernel check` as generated.
    New {
        /// The model's name (letters, digits, _): the folder, the Verilog top and the library.
        name: String,
        /// Where to create the folder (a model repository).
        #[arg(long, default_value = ".")]
        dir: PathBuf,
        /// Elements per stream beat, 1..=16 (the skeleton's RTL handles this many per cycle).
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=16))]
        lanes: u32,
    },
    /// Co-simulate the RTL against the CPU code on random requests and on the edge shapes (every
    /// dimension at its minimum, then its maximum); report the first mismatch and the cycles per item.
    Check {
        /// The model folder.
        dir: PathBuf,
        /// Random requests beside the two edge cases.
        #[arg(long, default_value_t = 20)]
        requests: usize,
        /// Seed of the random requests.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Largest dimension drawn for random requests (the edge cases use the real bounds).
        #[arg(long, default_value_t = 256)]
        cap: u64,
    },
    /// Synthesise the RTL with yosys (UltraScale+) and write synth.toml: resources, the clock and
    /// the items per cycle measured under Verilator, which the emulated board times by.
    Synth {
        /// The model folder.
        dir: PathBuf,
        /// Clock written into the manifest (yosys gives no timing).
        #[arg(long, default_value_t = 250.0)]
        clock_mhz: f64,
    },
    /// Lint the RTL with `verilator --lint-only -Wall`.
    Lint {
        /// The model folder.
        dir: PathBuf,
    },
    /// Verilate the RTL and compile the CPU code into the cache now, so a server's load is a cache hit.
    Build {
        /// The model folder.
        dir: PathBuf,
    },
    /// Write the RTL as a Vitis kernel: `<top>_vitis.v` (64-bit streams, the scalars taken from each
    /// request's first words) and `sources.txt` (every Verilog file, for scripts/build-xclbin.sh).
    Package {
        /// The model folder.
        dir: PathBuf,
        /// Where to write them [default: DIR/vitis].
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

/// Runs a `spork kernel` subcommand.
pub fn run(cmd: Command) -> anyhow::Result<()> {
    match cmd {
        Command::New { name, dir, lanes } => new(&name, &dir, lanes),
        Command::Check { dir, requests, seed, cap } => check(&dir, CheckOptions { requests, seed, cap }),
        Command::Synth { dir, clock_mhz } => synth(&dir, clock_mhz),
        Command::Lint { dir } => lint(&dir),
        Command::Build { dir } => build(&dir),
        Command::Package { dir, out } => package(&dir, out),
    }
}

fn load(dir: &Path) -> anyhow::Result<ModelSpec> {
    Ok(spec::load(dir)?)
}

/// The template's files: (path in the new folder, text with `{{name}}` placeholders).
const TEMPLATE: [(&str, &str); 6] = [
    ("model.toml", include_str!("../../assets/kernel-template/model.toml")),
    ("rtl/{{name}}.v", include_str!("../../assets/kernel-template/rtl/kernel.v")),
    ("cpu/{{name}}.c", include_str!("../../assets/kernel-template/cpu/kernel.c")),
    ("rust/Cargo.toml", include_str!("../../assets/kernel-template/rust/Cargo.toml")),
    ("rust/src/lib.rs", include_str!("../../assets/kernel-template/rust/src/lib.rs")),
    ("README.md", include_str!("../../assets/kernel-template/README.md")),
];

fn new(name: &str, parent: &Path, lanes: u32) -> anyhow::Result<()> {
    if !is_identifier(name) {
        bail!(
            "'{name}' is not a model name: use letters, digits and _ (starting with a letter); it names a Verilog module"
        );
    }
    let dir = parent.join(name);
    if dir.exists() {
        bail!("{} already exists: choose another name or remove it", dir.display());
    }
    let abi = Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernel-abi");
    let abi = abi.canonicalize().unwrap_or(abi);
    for (path, text) in TEMPLATE.into_iter().chain([("cpu/spork_kernel.h", HEADER)]) {
        let path = dir.join(path.replace("{{name}}", name));
        let text = text
            .replace("{{name}}", name)
            .replace("{{lanes}}", &lanes.to_string())
            .replace("{{spork_kernel_path}}", &abi.display().to_string());
        std::fs::create_dir_all(path.parent().unwrap_or(&dir))?;
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    out!("created {} (model.toml, rtl/{name}.v, cpu/{name}.c, rust/, README.md)", dir.display());
    out!("next: spork kernel check {}", dir.display());
    Ok(())
}

fn check(dir: &Path, opts: CheckOptions) -> anyhow::Result<()> {
    let spec = load(dir)?;
    let start = Instant::now();
    let report = check::check(&spec, opts)?;
    let how = if report.cached { "cache hit" } else { "verilated" };
    out!("{}: RTL {how} in {:.2} s", spec.name, report.verilate_s);
    for c in &report.cases {
        out!("  {:<10} {:<24} {:>9} items {:>10} cycles", c.label, c.dims, c.items, c.cycles);
    }
    if let Some(m) = &report.mismatch {
        bail!("{}: the RTL and the CPU code differ at {m}", spec.name);
    }
    out!(
        "{}: {} requests match; {:.3} cycles per item on the largest request ({:.1} s)",
        spec.name,
        report.cases.len(),
        report.cycles_per_item,
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

fn synth(dir: &Path, clock_mhz: f64) -> anyhow::Result<()> {
    if !(clock_mhz.is_finite() && clock_mhz > 0.0) {
        bail!("--clock-mhz {clock_mhz} is not a clock; give MHz greater than 0");
    }
    let spec = load(dir)?;
    let Some(sim) = &spec.sim else { bail!("{} has no [fpga.sim] sources to synthesise", spec.name) };
    let files: Vec<PathBuf> = sim.sources.iter().map(|s| spec.dir.join(s)).collect();
    let refs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let syn = bitstream::synthesize(&refs, &sim.top)?;
    let report = check::check(&spec, CheckOptions { requests: 0, ..CheckOptions::default() })?;
    if let Some(m) = &report.mismatch {
        bail!("{}: the RTL and the CPU code differ at {m}; fix that before timing it", spec.name);
    }
    let source = std::fs::read(&files[0]).with_context(|| format!("reading {}", files[0].display()))?;
    let m = Manifest {
        name: sim.top.clone(),
        role: Role::Kernel,
        target: Target::Sim,
        file: sim.sources[0].display().to_string(),
        source: None,
        source_sha256: bitstream::sha256_hex(&source),
        clock_mhz,
        clock_note: "nominal: yosys reports no timing; a vendor flow records its achieved clock".into(),
        items_per_cycle: 1.0 / report.cycles_per_item.max(1e-9),
        item: "item".into(),
        compute_units: 1,
        link: Some(bitstream::ManifestLink::published()),
        resources: syn.resources,
        agfi: None,
        measured: None,
        timing: None,
        decision_latency_cycles: None,
    };
    let path = spec.dir.join("synth.toml");
    std::fs::write(&path, m.to_toml()).with_context(|| format!("writing {}", path.display()))?;
    let r = &m.resources;
    out!(
        "{}: {} LUT, {} LUTRAM, {} FF, {} DSP, {} BRAM; {:.3} items/cycle; yosys {:.1} s -> {}",
        spec.name,
        r.lut,
        r.lutram,
        r.ff,
        r.dsp,
        r.bram,
        m.items_per_cycle,
        syn.seconds,
        path.display()
    );
    Ok(())
}

fn lint(dir: &Path) -> anyhow::Result<()> {
    let spec = load(dir)?;
    let Some(sim) = &spec.sim else { bail!("{} has no [fpga.sim] sources to lint", spec.name) };
    let out = std::process::Command::new("verilator")
        .current_dir(&spec.dir)
        .args(["--lint-only", "-Wall", "--top-module", &sim.top])
        .args(&sim.sources)
        .output()
        .context("running verilator (install it: apt-get install -y verilator)")?;
    let messages =
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    if !out.status.success() || !messages.trim().is_empty() {
        bail!("{}: Verilator's lint found problems:\n{}", spec.name, messages.trim());
    }
    out!("{}: lint clean (verilator --lint-only -Wall)", spec.name);
    Ok(())
}

fn build(dir: &Path) -> anyhow::Result<()> {
    let spec = load(dir)?;
    if let Some(cpu) = &spec.cpu {
        let start = Instant::now();
        let lib = CpuLibrary::load(&spec, cpu)?;
        out!("{}: CPU library '{}' ready in {:.2} s", spec.name, lib.name(), start.elapsed().as_secs_f64());
    }
    if let Some(sim) = &spec.sim {
        let rtl = Rtl::load(&spec, sim)?;
        let how = if rtl.built.cached { "cache hit" } else { "verilated and compiled" };
        out!(
            "{}: RTL {how} in {:.2} s ({})",
            spec.name,
            rtl.built.took.as_secs_f64(),
            rtl.built.library.display()
        );
    }
    Ok(())
}

fn package(dir: &Path, out: Option<PathBuf>) -> anyhow::Result<()> {
    let spec = load(dir)?;
    let sim = spec.sim.as_ref().with_context(|| format!("{} has no [fpga.sim] to package", spec.name))?;
    // The design's own port widths, from its verilated model.
    let rtl = Rtl::load(&spec, sim)?;
    let width = |name: &str| rtl.model.ports().iter().find(|p| p.name == name).map_or(0, |p| p.width);
    let text = spork::repository::vitis::top(&spec, width)?;
    let out = out.unwrap_or_else(|| spec.dir.join("vitis"));
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let top = out.join(format!("{}_vitis.v", sim.top));
    std::fs::write(&top, text).with_context(|| format!("writing {}", top.display()))?;
    let absolute = |p: &Path| std::fs::canonicalize(spec.dir.join(p)).unwrap_or_else(|_| spec.dir.join(p));
    let mut sources: Vec<String> = sim.sources.iter().map(|p| absolute(p).display().to_string()).collect();
    sources.push(absolute(&top).display().to_string());
    std::fs::write(out.join("sources.txt"), sources.join("\n") + "\n")
        .with_context(|| format!("writing {}", out.join("sources.txt").display()))?;
    // The data movers' word width, which scripts/build-xclbin.sh compiles them at.
    let bits = spec.mover_bits();
    std::fs::write(out.join("mover_bits.txt"), format!("{bits}\n"))
        .with_context(|| format!("writing {}", out.join("mover_bits.txt").display()))?;
    out!(
        "{}: Vitis kernel {}_vitis written to {} (with sources.txt; {bits}-bit data movers)",
        spec.name,
        sim.top,
        out.display()
    );
    out!(
        "  then, where Vitis is installed: scripts/build-xclbin.sh --package {} --platform NAME",
        out.display()
    );
    Ok(())
}
