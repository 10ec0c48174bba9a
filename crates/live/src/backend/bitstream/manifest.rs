//! The bitstream manifest (`<name>.toml` beside the image it describes).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use spork_core::input::{InputError, Location};

/// The `bitstreams/` folder: `$SPORK_BITSTREAMS` if set, else the source tree's.
pub fn default_dir() -> PathBuf {
    std::env::var_os("SPORK_BITSTREAMS").map(PathBuf::from).unwrap_or_else(|| {
        let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../bitstreams"));
        dir.canonicalize().unwrap_or(dir)
    })
}

/// The manifest of `kernel`'s image for `target`: `bitstreams/<target>/<kernel>.toml`.
pub fn manifest_path(target: Target, kernel: &str) -> PathBuf {
    default_dir().join(target.name()).join(format!("{kernel}.toml"))
}

/// Hex SHA-256 of a file's bytes: ties a manifest to the exact source it was built from.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// What the image does on a worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// A request-processing kernel.
    Kernel,
    /// The hardware request-queue/dispatch engine.
    Dispatch,
}

/// Where the image runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Target {
    /// The simulated board: a Verilator model built from the Verilog.
    Sim,
    /// An AMD Alveo card: an xclbin.
    Alveo,
    /// An AWS F1 slot: an AFI.
    F1,
}

impl Target {
    /// Its folder under `bitstreams/`, and its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Target::Sim => "sim",
            Target::Alveo => "alveo",
            Target::F1 => "f1",
        }
    }
}

/// Resource counts from synthesis, in the target family's primitives.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Resources {
    /// LUTs used as logic.
    pub lut: u64,
    /// LUTs used as distributed RAM or shift registers.
    pub lutram: u64,
    /// Flip-flops.
    pub ff: u64,
    /// DSP slices.
    pub dsp: u64,
    /// Block RAM in RAMB36 equivalents (a RAMB18 counts half).
    pub bram: f64,
    /// Carry-chain cells.
    pub carry: u64,
    /// The tool and command that produced the counts.
    pub tool: String,
    /// The synthesis script.
    pub command: String,
    /// Every primitive and its count, as the tool reported them.
    pub cells: BTreeMap<String, u64>,
}

impl Resources {
    /// Folds a primitive histogram (Xilinx UltraScale+ cell names) into the summary counts.
    pub fn from_cells(cells: BTreeMap<String, u64>, tool: String, command: String) -> Resources {
        let mut r = Resources { tool, command, ..Resources::default() };
        for (cell, &n) in &cells {
            match cell.as_str() {
                "LUT1" | "LUT2" | "LUT3" | "LUT4" | "LUT5" | "LUT6" | "INV" => r.lut += n,
                // LUTs per distributed-RAM primitive.
                "RAM64M8" | "RAM32M16" | "RAM512X1S" => r.lutram += 8 * n,
                "RAM256X1S" | "RAM256X1D" | "RAM64M" | "RAM32M" | "RAM128X1D" => r.lutram += 4 * n,
                "RAM128X1S" | "RAM64X1D" | "RAM32X1D" => r.lutram += 2 * n,
                "RAM64X1S" | "RAM32X1S" | "SRL16E" | "SRLC32E" => r.lutram += n,
                "FDRE" | "FDSE" | "FDCE" | "FDPE" | "LDCE" | "LDPE" => r.ff += n,
                "DSP48E2" | "DSP48E1" => r.dsp += n,
                "RAMB36E2" | "RAMB36E1" => r.bram += n as f64,
                "RAMB18E2" | "RAMB18E1" => r.bram += 0.5 * n as f64,
                "CARRY4" | "CARRY8" => r.carry += n,
                _ => {}
            }
        }
        r.cells = cells;
        r
    }
}

/// Measurements taken on a real load of the image.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Measured {
    /// Median load (reconfiguration) latency in seconds.
    pub load_s: f64,
    /// Loads measured.
    pub loads: u32,
    /// Where and when.
    pub machine: String,
}

/// One image a worker can be configured with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Design name (the Verilog top module).
    pub name: String,
    /// Kernel or dispatch engine.
    pub role: Role,
    /// Where it runs.
    pub target: Target,
    /// The source or image file, relative to the manifest.
    pub file: String,
    /// The source the image was built from, relative to the manifest, when it is not `file` itself
    /// (an xclbin's Verilog).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// SHA-256 of the source (`source`, else `file`) when the image and resources were made.
    pub source_sha256: String,
    /// Clock in MHz used to turn cycles into device time.
    pub clock_mhz: f64,
    /// Where the clock figure comes from.
    pub clock_note: String,
    /// Items per cycle for the design's standard workload (measured under Verilator).
    pub items_per_cycle: f64,
    /// What an item is.
    pub item: String,
    /// Compute units in the image: copies of the kernel that serve requests side by side, each at
    /// `clock_mhz` x `items_per_cycle` (1, not written out, for a single kernel).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub compute_units: u32,
    /// The host link's cost per invocation on this image's board (absent: the published XRT/Alveo
    /// figures, `model::link::published`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<ManifestLink>,
    /// Synthesis results.
    pub resources: Resources,
    /// AWS F1: the AFI's global id, once `scripts/build-afi.sh` has made it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agfi: Option<String>,
    /// Load measurements, once a user has run them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured: Option<Measured>,
    /// Place and route on an iCE40 (`spork hdl timing`): whether it fits, and its achieved clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timing: Option<super::timing::Timing>,
    /// The dispatch engine: cycles from a descriptor pushed on an idle engine to its decision on the
    /// ports (measured under Verilator by `spork hdl synth`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision_latency_cycles: Option<u64>,
}

/// What one invocation of the board costs beyond its cycles: a live run's board model charges it,
/// and the engine books it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestLink {
    /// Launch and completion of one invocation, in microseconds.
    pub invocation_us: f64,
    /// Host to card and back, in GB/s.
    pub transfer_gb_per_s: f64,
    /// Where the figures come from (a publication, or a measurement on this board).
    pub source: String,
}

impl ManifestLink {
    /// The published XRT/Alveo figures.
    pub fn published() -> ManifestLink {
        use spork_core::model::link::published;
        ManifestLink {
            invocation_us: published::INVOCATION_US,
            transfer_gb_per_s: published::TRANSFER_GB_PER_S,
            source: published::SOURCE.into(),
        }
    }

    /// As the engine's link, moving `bytes_per_cpu_s`.
    pub fn link(&self, bytes_per_cpu_s: f64) -> spork_core::model::Link {
        spork_core::model::Link {
            invocation: spork_core::model::time::from_secs(self.invocation_us * 1e-6),
            bytes_per_s: self.transfer_gb_per_s * 1e9,
            bytes_per_cpu_s,
        }
    }
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

impl Manifest {
    /// Reads and validates a manifest file.
    pub fn load(path: &Path) -> Result<Manifest, InputError> {
        let text = InputError::read(path)?;
        let fix = "rewrite it with `spork hdl synth`, or see bitstreams/README.md for the fields";
        let m: Manifest = toml::from_str(&text).map_err(|e| InputError::from_toml(path, &text, &e, fix))?;
        if !(m.items_per_cycle.is_finite() && m.items_per_cycle > 0.0) {
            let at = text.find("items_per_cycle").unwrap_or(0);
            return Err(InputError::invalid(
                Location::at(path, &text, at),
                "items_per_cycle",
                format!("{} is not a throughput", m.items_per_cycle),
                "give the items the design streams per clock cycle, greater than 0",
            ));
        }
        let most = spork_core::model::units::MAX_COMPUTE_UNITS;
        if !(1..=most).contains(&m.compute_units) {
            let at = text.find("compute_units").unwrap_or(0);
            return Err(InputError::invalid(
                Location::at(path, &text, at),
                "compute_units",
                format!("{} compute units", m.compute_units),
                format!("give the kernel instances the image holds, from 1 to {most}"),
            ));
        }
        if let Some(l) = &m.link
            && !(l.invocation_us.is_finite()
                && (0.0..=1e6).contains(&l.invocation_us)
                && l.transfer_gb_per_s.is_finite()
                && (0.0..=1e4).contains(&l.transfer_gb_per_s))
        {
            let at = text.find("[link]").unwrap_or(0);
            return Err(InputError::invalid(
                Location::at(path, &text, at),
                "link",
                format!("invocation_us = {}, transfer_gb_per_s = {}", l.invocation_us, l.transfer_gb_per_s),
                "give the invocation's cost from 0 to 1e6 us and the link's rate from 0 to 1e4 GB/s (0: not charged)",
            ));
        }
        if !(m.clock_mhz.is_finite() && m.clock_mhz > 0.0) {
            let at = text.find("clock_mhz").unwrap_or(0);
            return Err(InputError::invalid(
                Location::at(path, &text, at),
                "clock_mhz",
                format!("{} is not a clock frequency", m.clock_mhz),
                "give the clock in MHz, greater than 0",
            ));
        }
        Ok(m)
    }

    /// Every manifest (`*.toml`) in `dir`, sorted by name.
    pub fn load_dir(dir: &Path) -> Result<Vec<(PathBuf, Manifest)>, InputError> {
        let entries = std::fs::read_dir(dir).map_err(|source| InputError::Io {
            action: "list",
            path: dir.to_path_buf(),
            source,
        })?;
        let mut paths: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect();
        paths.sort();
        paths.into_iter().map(|p| Manifest::load(&p).map(|m| (p, m))).collect()
    }

    /// Whether the source (relative to `manifest_path`) still has the recorded hash.
    pub fn source_is_current(&self, manifest_path: &Path) -> Result<bool, InputError> {
        let rel = self.source.as_deref().unwrap_or(&self.file);
        let src = manifest_path.parent().unwrap_or(Path::new(".")).join(rel);
        let bytes =
            std::fs::read(&src).map_err(|source| InputError::Io { action: "read", path: src, source })?;
        Ok(sha256_hex(&bytes) == self.source_sha256)
    }

    /// Seconds the design takes for `cycles` clock cycles at its clock.
    pub fn device_seconds(&self, cycles: u64) -> f64 {
        cycles as f64 / (self.clock_mhz * 1e6)
    }

    /// The manifest as TOML, with a header saying how it was made.
    pub fn to_toml(&self) -> String {
        let body = toml::to_string(self).expect("manifest serialises");
        format!(
            "# Written by spork (`spork hdl synth`, `spork run --record-load`): resources from {}.\n{body}",
            self.resources.tool
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compute_units_default_to_one_and_out_of_range_names_the_field() {
        let path = manifest_path(Target::Sim, "sobel");
        let text = std::fs::read_to_string(&path).expect("the sobel manifest");
        assert_eq!(Manifest::load(&path).expect("loads").compute_units, 1, "absent means one");
        assert!(
            !Manifest::load(&path).expect("loads").to_toml().contains("compute_units"),
            "1 is not written"
        );
        let dir = tempfile::tempdir().expect("tempdir");
        let with = |n: &str| {
            let p = dir.path().join("m.toml");
            let body = text.replacen("item = ", &format!("compute_units = {n}\nitem = "), 1);
            std::fs::write(&p, body).expect("write");
            Manifest::load(&p)
        };
        assert_eq!(with("4").expect("four CUs").compute_units, 4);
        let e = with("0").expect_err("zero CUs").to_string();
        assert!(e.contains("compute_units") && e.contains("from 1 to 64"), "{e}");
    }
}
