//! The modelled meter: a constant draw from a worker profile (busy or idle power), integrated over
//! wall time. Used where no sensor exists, and always reported as modelled.

use std::time::Instant;

use super::{PowerError, PowerMeter};

/// `watts` drawn from the moment the meter is opened.
pub struct Modelled {
    what: String,
    watts: f64,
    since: Instant,
}

impl Modelled {
    /// A model of `what` drawing `watts`.
    pub fn new(what: impl Into<String>, watts: f64) -> Modelled {
        Modelled { what: what.into(), watts, since: Instant::now() }
    }
}

impl PowerMeter for Modelled {
    fn name(&self) -> String {
        format!("modelled: {} at {} W (profile)", self.what, self.watts)
    }

    fn measured(&self) -> bool {
        false
    }

    fn energy_j(&mut self) -> Result<f64, PowerError> {
        Ok(self.watts * self.since.elapsed().as_secs_f64())
    }
}
