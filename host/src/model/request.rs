//! Requests: a size (the service time on a CPU worker), an arrival and a deadline.

use super::time::Time;

/// One request as the trace gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// Arrival time since the start of the trace.
    pub arrival: Time,
    /// Service time on a CPU worker (the paper's "request size"), of the mandatory part.
    pub size: Time,
    /// Service time on a CPU worker of the optional part (0: none); brownout decides whether it runs.
    pub optional: Time,
}

impl Request {
    /// The absolute deadline: arrival plus `factor` times the size (the paper uses 10).
    pub fn deadline(&self, factor: f64) -> Time {
        self.arrival + (self.size as f64 * factor).round() as Time
    }
}
