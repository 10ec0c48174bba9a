//! Alveo board power: the xmc sensor (`xmc.*/xmc_power`, microwatts), or hwmon (`hwmon_sdm`'s
//! power inputs, microwatts) under the board's PCI device, integrated over time; and the
//! `xbutil examine -r electrical -f JSON` report's `power_consumption_watts`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::{PowerError, PowerMeter, read_number};

/// An Alveo board's power sensor, integrated into energy.
pub struct AlveoSysfs {
    device: String,
    sensor: PathBuf,
    last: Option<(Instant, f64)>,
    total_j: f64,
}

impl AlveoSysfs {
    /// Finds the power sensor of the board at `device` (`/sys/bus/pci/devices/<BDF>`).
    pub fn open(device: &Path) -> Result<AlveoSysfs, PowerError> {
        let absent =
            || PowerError::Absent { what: "Alveo power sensor (xmc or hwmon_sdm)", root: device.into() };
        let sensor = xmc_sensor(device).or_else(|| hwmon_sensor(device)).ok_or_else(absent)?;
        let name = device.file_name().and_then(|n| n.to_str()).unwrap_or("alveo").to_string();
        Ok(AlveoSysfs { device: name, sensor, last: None, total_j: 0.0 })
    }

    /// Watts now.
    pub fn watts(&self) -> Result<f64, PowerError> {
        Ok(read_number(&self.sensor)? / 1e6)
    }
}

fn sorted_dir(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_or_else(|_| Vec::new(), |e| e.filter_map(|e| e.ok().map(|e| e.path())).collect());
    v.sort();
    v
}

fn xmc_sensor(device: &Path) -> Option<PathBuf> {
    sorted_dir(device)
        .into_iter()
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("xmc")))
        .map(|p| p.join("xmc_power"))
        .find(|p| p.is_file())
}

fn hwmon_sensor(device: &Path) -> Option<PathBuf> {
    for h in sorted_dir(&device.join("hwmon")) {
        let name = std::fs::read_to_string(h.join("name")).unwrap_or_default();
        if name.trim() != "hwmon_sdm" {
            continue;
        }
        let inputs: Vec<PathBuf> = sorted_dir(&h)
            .into_iter()
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("power") && n.ends_with("_input"))
            })
            .collect();
        // Prefer the input labelled as the total.
        let total = inputs.iter().find(|p| {
            let label = p.to_string_lossy().replace("_input", "_label");
            std::fs::read_to_string(label).is_ok_and(|l| l.to_ascii_lowercase().contains("total"))
        });
        if let Some(p) = total.or(inputs.first()) {
            return Some(p.clone());
        }
    }
    None
}

impl PowerMeter for AlveoSysfs {
    fn name(&self) -> String {
        format!("Alveo {} ({})", self.device, self.sensor.display())
    }

    fn measured(&self) -> bool {
        true
    }

    fn energy_j(&mut self) -> Result<f64, PowerError> {
        let w = self.watts()?;
        let now = Instant::now();
        if let Some((t, w0)) = self.last {
            // Trapezoid between samples.
            self.total_j += 0.5 * (w0 + w) * now.duration_since(t).as_secs_f64();
        }
        self.last = Some((now, w));
        Ok(self.total_j)
    }
}

/// The board power in an `xbutil examine -r electrical -f JSON` report: the first
/// `power_consumption_watts` anywhere in it ("N/A" means the board gave none).
pub fn parse_xbutil_power(json: &str) -> Result<f64, PowerError> {
    fn find(v: &serde_json::Value) -> Option<&serde_json::Value> {
        match v {
            serde_json::Value::Object(m) => {
                m.get("power_consumption_watts").or_else(|| m.values().find_map(find))
            }
            serde_json::Value::Array(a) => a.iter().find_map(find),
            _ => None,
        }
    }
    let v: serde_json::Value =
        serde_json::from_str(json).map_err(|e| PowerError::Unavailable(format!("xbutil JSON ({e})")))?;
    let p = find(&v)
        .ok_or_else(|| PowerError::Unavailable("xbutil JSON without power_consumption_watts".into()))?;
    let text = match p {
        serde_json::Value::Number(n) => n.to_string(),
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    text.trim()
        .parse()
        .map_err(|_| PowerError::Unavailable(format!("xbutil (power_consumption_watts = {text})")))
}

/// Board power from `xbutil examine -d <BDF> -r electrical -f JSON`, for boards whose sensors sysfs
/// does not expose.
pub fn xbutil_power(bdf: &str) -> Result<f64, PowerError> {
    let out = std::env::temp_dir().join(format!(
        "spork-xbutil-{}-{}.json",
        std::process::id(),
        bdf.replace(':', "_")
    ));
    let status = std::process::Command::new("xbutil")
        .args(["examine", "-d", bdf, "-r", "electrical", "-f", "JSON", "--force", "-o"])
        .arg(&out)
        .output()
        .map_err(|e| PowerError::Unavailable(format!("xbutil ({e}); source /opt/xilinx/xrt/setup.sh")))?;
    if !status.status.success() {
        return Err(PowerError::Unavailable(format!(
            "xbutil examine -d {bdf}: {}",
            String::from_utf8_lossy(&status.stderr).trim()
        )));
    }
    let text =
        std::fs::read_to_string(&out).map_err(|source| PowerError::Io { path: out.clone(), source })?;
    let _ = std::fs::remove_file(&out);
    parse_xbutil_power(&text)
}
