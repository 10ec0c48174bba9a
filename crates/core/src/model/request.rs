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
    /// The size its deadline is set from: the application's nominal size. Equal to `size` when sizes
    /// are known; with unknown sizes (`--size-cv`) the request's own size varies around it, and only
    /// an estimate of it is known before it runs.
    pub nominal: Time,
}

impl Request {
    /// A request whose size is known: its deadline is set from its own size.
    pub fn new(arrival: Time, size: Time, optional: Time) -> Self {
        Request { arrival, size, optional, nominal: size }
    }

    /// The absolute deadline: arrival plus `factor` times the nominal size (the paper uses 10).
    pub fn deadline(&self, factor: f64) -> Time {
        self.arrival + super::time::round(self.nominal as f64 * factor)
    }
}
