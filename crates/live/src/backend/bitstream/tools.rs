//! The RTL toolchain steps behind `spork hdl`: Verilator lint and yosys synthesis, run as
//! processes, with a clear error when a tool is missing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use super::Resources;

/// A toolchain step that could not run.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The tool is not installed.
    #[error("`{tool}` was not found on PATH: {purpose}\n  fix: install it ({install})")]
    Missing {
        /// Executable name.
        tool: &'static str,
        /// What it is needed for.
        purpose: &'static str,
        /// How to install it.
        install: &'static str,
    },
    /// The tool ran and failed.
    #[error("{tool} failed on {file}:\n{output}")]
    Failed {
        /// Executable name.
        tool: &'static str,
        /// The input it failed on.
        file: PathBuf,
        /// What it printed.
        output: String,
    },
    /// The tool's output could not be understood.
    #[error("cannot read {tool}'s report for {file}: {problem}")]
    Output {
        /// Executable name.
        tool: &'static str,
        /// The input.
        file: PathBuf,
        /// What is wrong.
        problem: String,
    },
}

fn missing(tool: &'static str) -> ToolError {
    match tool {
        "verilator" => ToolError::Missing {
            tool,
            purpose: "it lints the RTL and builds the simulated board",
            install: "Debian/Ubuntu: apt-get install -y verilator",
        },
        _ => ToolError::Missing {
            tool: "yosys",
            purpose: "it synthesises the RTL for resource counts",
            install: "Debian/Ubuntu: apt-get install -y yosys",
        },
    }
}

/// The tool's first version line, or the missing-tool error.
pub fn tool_version(tool: &'static str) -> Result<String, ToolError> {
    let out = Command::new(tool).arg(if tool == "yosys" { "-V" } else { "--version" }).output();
    match out {
        Ok(o) if o.status.success() => {
            Ok(String::from_utf8_lossy(&o.stdout).lines().next().unwrap_or_default().trim().to_string())
        }
        _ => Err(missing(tool)),
    }
}

/// The result of `verilator --lint-only -Wall` on one design.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LintOutcome {
    /// No warnings or errors after the waivers.
    pub clean: bool,
    /// What Verilator printed.
    pub messages: String,
}

/// Lints `file` (top module `top`) with every warning on, applying the waivers in `waivers`.
pub fn lint(file: &Path, top: &str, waivers: &Path) -> Result<LintOutcome, ToolError> {
    tool_version("verilator")?;
    let out = Command::new("verilator")
        .args(["--lint-only", "-Wall", "--top-module", top])
        .arg(waivers)
        .arg(file)
        .output()
        .map_err(|_| missing("verilator"))?;
    let messages =
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    Ok(LintOutcome { clean: out.status.success() && messages.trim().is_empty(), messages })
}

/// What synthesis reported for one design.
#[derive(Clone, Debug, PartialEq)]
pub struct Synthesis {
    /// Summary and full primitive counts.
    pub resources: Resources,
    /// Wall time of the yosys run.
    pub seconds: f64,
}

/// The yosys script: UltraScale+ mapping, flattened so the statistics cover the whole design.
pub fn synth_script(files: &[&Path], top: &str) -> String {
    let files: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    format!("read_verilog -sv {}; synth_xilinx -family xcup -flatten -top {top}; stat -json", files.join(" "))
}

/// The script as recorded in a manifest: the sources named by their file names.
fn recorded_script(files: &[&Path], top: &str) -> String {
    let names: Vec<&Path> = files.iter().map(|f| Path::new(f.file_name().unwrap_or(f.as_os_str()))).collect();
    synth_script(&names, top)
}

/// Synthesises `files` (one design, top module `top`) for Xilinx UltraScale+ with yosys and counts
/// its primitives.
pub fn synthesize(files: &[&Path], top: &str) -> Result<Synthesis, ToolError> {
    let version = tool_version("yosys")?;
    let file = files.first().copied().unwrap_or(Path::new(""));
    let script = synth_script(files, top);
    let dir = std::env::temp_dir().join(format!("spork-synth-{}-{top}", std::process::id()));
    let stat = dir.join("stat.json");
    std::fs::create_dir_all(&dir).map_err(|e| ToolError::Output {
        tool: "yosys",
        file: file.into(),
        problem: format!("cannot create {}: {e}", dir.display()),
    })?;
    let full = script.replace("stat -json", &format!("tee -q -o {} stat -json", stat.display()));
    let start = Instant::now();
    let out = Command::new("yosys").arg("-q").arg("-p").arg(&full).output().map_err(|_| missing("yosys"))?;
    let seconds = start.elapsed().as_secs_f64();
    if !out.status.success() {
        return Err(ToolError::Failed {
            tool: "yosys",
            file: file.into(),
            output: format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        });
    }
    let text = std::fs::read_to_string(&stat).map_err(|e| ToolError::Output {
        tool: "yosys",
        file: file.into(),
        problem: format!("no statistics at {}: {e}", stat.display()),
    })?;
    let _ = std::fs::remove_dir_all(&dir);
    let cells = parse_stat(&text).map_err(|problem| ToolError::Output {
        tool: "yosys",
        file: file.into(),
        problem,
    })?;
    Ok(Synthesis { resources: Resources::from_cells(cells, version, recorded_script(files, top)), seconds })
}

/// The design-wide primitive histogram from `stat -json`.
fn parse_stat(text: &str) -> Result<BTreeMap<String, u64>, String> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let cells = v
        .get("design")
        .and_then(|d| d.get("num_cells_by_type"))
        .and_then(|c| c.as_object())
        .ok_or("no design.num_cells_by_type")?;
    cells
        .iter()
        .map(|(k, n)| n.as_u64().map(|n| (k.clone(), n)).ok_or(format!("count of {k} is not a number")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_yosys_statistics() {
        let text =
            r#"{"design": {"num_cells": 5, "num_cells_by_type": {"LUT6": 3, "FDRE": 2, "RAM64M8": 1}}}"#;
        let cells = parse_stat(text).unwrap();
        let r = Resources::from_cells(cells, "yosys".into(), "script".into());
        assert_eq!((r.lut, r.ff, r.lutram, r.dsp), (3, 2, 8, 0));
        assert!(parse_stat("{}").is_err());
        assert!(parse_stat("not json").is_err());
    }
}
