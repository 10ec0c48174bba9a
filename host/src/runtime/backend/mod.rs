//! Workers behind one trait: configure with a kernel image (measured), run a job, report power and
//! health. Each worker runs on its own OS thread (see [`super::worker`]).

#[cfg(feature = "xrt")]
mod alveo;
mod board;
mod cpu;
#[cfg(feature = "f1")]
mod f1;

#[cfg(feature = "xrt")]
pub use alveo::{AlveoBoard, AlveoConfig};
pub use board::SimBoardSlot;
pub use cpu::CpuWorker;
#[cfg(feature = "f1")]
pub use f1::{F1Config, F1Slot};

use std::time::Duration;

use super::work::{KernelImage, Output, Payload};
use crate::model::Kind;

/// A worker failure.
#[derive(Debug, Clone, thiserror::Error)]
pub enum BackendError {
    /// The worker could not be configured with the image (a failed reconfiguration).
    #[error("configuring {what} failed: {reason}")]
    Configure {
        /// Which image.
        what: String,
        /// Why.
        reason: String,
    },
    /// The kernel did not produce its result.
    #[error("the kernel failed: {0}")]
    Kernel(String),
    /// A job arrived before the worker was configured.
    #[error("the worker is not configured")]
    NotConfigured,
}

/// What configuring took.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Configured {
    /// Measured on this machine: thread start (CPU) or model load, instantiate and on-chip state
    /// load (simulated board).
    pub measured: Duration,
    /// The profile's configured delay, slept on top (a real board's reconfiguration, a VM's boot).
    pub configured_delay: Duration,
}

/// A finished job.
#[derive(Clone, Debug, PartialEq)]
pub struct Executed {
    /// The result.
    pub output: Output,
    /// FPGA: clock cycles the RTL took, and that at the board's clock.
    pub device: Option<(u64, Duration)>,
}

/// Power draw as a backend reports it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Power {
    /// Watts now.
    pub watts: f64,
    /// From a sensor (true) or the profile's model (false).
    pub measured: bool,
}

/// Whether a worker can take jobs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Health {
    /// Not configured yet.
    Starting,
    /// Configured and serving.
    Ready,
    /// Failed; the reason.
    Failed(String),
}

/// A worker backend.
pub trait Backend: Send {
    /// CPU or FPGA.
    fn kind(&self) -> Kind;
    /// Configures the worker with `image`; returns what it took.
    fn configure(&mut self, image: &KernelImage) -> Result<Configured, BackendError>;
    /// Runs one job to completion.
    fn submit(&mut self, payload: &Payload) -> Result<Executed, BackendError>;
    /// Current power draw.
    fn power(&self) -> Power;
    /// Current health.
    fn health(&self) -> Health;
}
