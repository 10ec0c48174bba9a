//! A worker's power draw as its backend reports it: a sensor's reading or the profile's model. It
//! travels from a board through the worker API to the live pool's statistics, so it is named here,
//! below all three.

/// Power draw as a backend reports it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Power {
    /// Watts now.
    pub watts: f64,
    /// From a sensor (true) or the profile's model (false).
    pub measured: bool,
}
