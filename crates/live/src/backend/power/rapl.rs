//! Linux powercap/RAPL: cumulative package energy counters (`energy_uj`) that wrap at
//! `max_energy_range_uj`. Needs root; absent in most VMs.

use std::path::{Path, PathBuf};

use super::{PowerError, PowerMeter, read_number};

struct Domain {
    name: String,
    energy: PathBuf,
    range_uj: f64,
    last_uj: f64,
}

/// The top-level RAPL domains (packages; their sub-zones are included in them).
pub struct Rapl {
    domains: Vec<Domain>,
    total_uj: f64,
}

impl Rapl {
    /// Opens every `intel-rapl:N` domain under `root` (normally `/sys/class/powercap`).
    pub fn open(root: &Path) -> Result<Rapl, PowerError> {
        let absent = || PowerError::Absent { what: "RAPL domain", root: root.into() };
        let entries = std::fs::read_dir(root).map_err(|_| absent())?;
        let mut dirs: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
                // Top-level zones only: intel-rapl:0, not intel-rapl:0:0.
                n.strip_prefix("intel-rapl:").is_some_and(|rest| !rest.contains(':'))
            })
            .collect();
        dirs.sort();
        let mut domains = Vec::new();
        for d in dirs {
            let energy = d.join("energy_uj");
            let name = std::fs::read_to_string(d.join("name"))
                .map_or_else(|_| "package".into(), |s| s.trim().to_string());
            domains.push(Domain {
                name,
                range_uj: read_number(&d.join("max_energy_range_uj"))?,
                last_uj: read_number(&energy)?,
                energy,
            });
        }
        if domains.is_empty() {
            return Err(absent());
        }
        Ok(Rapl { domains, total_uj: 0.0 })
    }
}

impl PowerMeter for Rapl {
    fn name(&self) -> String {
        let names: Vec<&str> = self.domains.iter().map(|d| d.name.as_str()).collect();
        format!("RAPL ({})", names.join(", "))
    }

    fn measured(&self) -> bool {
        true
    }

    fn energy_j(&mut self) -> Result<f64, PowerError> {
        for d in &mut self.domains {
            let now = read_number(&d.energy)?;
            // The counter wrapped if it went backwards.
            let delta = if now >= d.last_uj { now - d.last_uj } else { now + d.range_uj - d.last_uj };
            self.total_uj += delta;
            d.last_uj = now;
        }
        Ok(self.total_uj / 1e6)
    }
}
