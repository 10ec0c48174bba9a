//! This machine's power sensors, sampled over a live run.

use std::path::Path;

use super::report::MeterReading;
use crate::backend::power::PowerMeter;
use spork_core::model::Time;

/// Sample every second: RAPL counters wrap, and Alveo power is integrated over short spans.
const PERIOD: Time = 1_000_000_000;

/// The sensors found, and when they are next read.
pub(super) struct Meters {
    meters: Vec<Box<dyn PowerMeter>>,
    next: Time,
}

impl Meters {
    /// Every sensor under `sysfs`, read once to start their counts at `now`.
    pub fn start(sysfs: &Path, now: Time) -> Meters {
        let mut meters = crate::backend::power::detect(sysfs);
        for m in &mut meters {
            let _ = m.energy_j();
        }
        Meters { meters, next: now + PERIOD }
    }

    /// Reads every sensor if a period has passed.
    pub fn sample(&mut self, now: Time) {
        if now < self.next {
            return;
        }
        for m in &mut self.meters {
            let _ = m.energy_j();
        }
        self.next = now + PERIOD;
    }

    /// Each sensor's energy over the run.
    pub fn readings(mut self) -> Vec<MeterReading> {
        self.meters
            .iter_mut()
            .map(|m| MeterReading {
                name: m.name(),
                measured: m.measured(),
                energy_j: m.energy_j().map_err(|e| e.to_string()),
            })
            .collect()
    }
}
