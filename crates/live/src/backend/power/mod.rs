//! Power meters behind one trait: Linux powercap/RAPL, Alveo boards (sysfs xmc or hwmon, and
//! `xbutil` JSON), and a modelled meter from a worker profile where no sensor exists. Every meter
//! says whether it measures or models.

mod alveo;
mod modelled;
mod rapl;

pub use alveo::{AlveoSysfs, parse_xbutil_power, xbutil_power};
pub use modelled::Modelled;
pub use rapl::Rapl;

use std::path::{Path, PathBuf};

/// A meter that could not be read.
#[derive(Debug, thiserror::Error)]
pub enum PowerError {
    /// A sensor file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A sensor file held something other than a number.
    #[error("{path} holds '{text}', not a number")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What it held.
        text: String,
    },
    /// No sensor of this kind here.
    #[error("no {what} found under {root}")]
    Absent {
        /// Which sensor.
        what: &'static str,
        /// Where it was looked for.
        root: PathBuf,
    },
    /// The sensor reported no value ("N/A").
    #[error("{0} reports no power value")]
    Unavailable(String),
}

/// A source of energy readings.
pub trait PowerMeter: Send {
    /// What it reads.
    fn name(&self) -> String;
    /// From a sensor (true) or a model (false).
    fn measured(&self) -> bool;
    /// Joules consumed since the meter was opened.
    fn energy_j(&mut self) -> Result<f64, PowerError>;
}

pub(crate) fn read_number(path: &Path) -> Result<f64, PowerError> {
    let text =
        std::fs::read_to_string(path).map_err(|source| PowerError::Io { path: path.into(), source })?;
    text.trim().parse().map_err(|_| PowerError::Parse { path: path.into(), text: text.trim().into() })
}

/// Every sensor found on this machine: RAPL packages and Alveo boards. Empty in most VMs.
pub fn detect(sys: &Path) -> Vec<Box<dyn PowerMeter>> {
    let mut meters: Vec<Box<dyn PowerMeter>> = Vec::new();
    if let Ok(r) = Rapl::open(&sys.join("class/powercap")) {
        meters.push(Box::new(r));
    }
    if let Ok(entries) = std::fs::read_dir(sys.join("bus/pci/devices")) {
        let mut devices: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        devices.sort();
        for d in devices {
            if let Ok(m) = AlveoSysfs::open(&d) {
                meters.push(Box::new(m));
            }
        }
    }
    meters
}
