//! Workers behind one trait: configure with a kernel image (measured), run a job, report power.
//! Each worker runs on a thread of the live pool's worker runner (`crate::live::worker`), or of a
//! worker host's; [`spawn`] builds the backend for one.
//!
//! Beside the backends: the measured calibration
//! ([`calibrate`]), the remote client ([`remote`]), and what the boards need: [`xrt`], [`f1`]
//! (feature), [`power`] sensors and [`bitstream`] manifests.

#[cfg(feature = "xrt")]
mod alveo;
pub mod bitstream;
mod board;
pub mod calibrate;
mod cpu;
pub mod crosscheck;
pub mod dispatch_engine;
#[cfg(feature = "f1")]
pub mod f1;
mod model;
pub mod power;
pub mod remote;
pub mod xrt;

#[cfg(feature = "xrt")]
pub use alveo::{AlveoBoard, AlveoConfig};
pub use board::SimBoardSlot;
pub use calibrate::Calibration;
pub use cpu::CpuWorker;
#[cfg(feature = "f1")]
pub use f1::{F1Config, F1Slot};
pub use model::ModelBoardSlot;

use std::sync::Arc;
use std::time::{Duration, Instant};

use crosscheck::{Checker, CrossCheck};

use crate::datapath::work::{KernelImage, Output, Payload};
pub use spork_core::model::Power;
use spork_core::model::{Kind, Platform};
use spork_core::policy::placement::{self, CpuSite};

/// What the FPGA workers are.
#[derive(Clone, Debug)]
pub enum Board {
    /// Slots of the simulated board (Verilated RTL).
    Sim,
    /// Slots of a board emulated in real time: reference answers released on the board's timeline;
    /// with a [`CrossCheck`], each answer is also checked on the Verilated RTL in the background.
    Model(Option<Arc<CrossCheck>>),
    /// An Alveo board over XRT.
    #[cfg(feature = "xrt")]
    Alveo(AlveoConfig),
    /// An AWS F1 slot.
    #[cfg(feature = "f1")]
    F1(F1Config),
    /// Slots of worker hosts (`spork worker`): FPGA workers always, CPU workers while a host has a
    /// CPU slot free (else a thread here).
    Remote(remote::Hosts),
}

impl Board {
    /// How reports name it: "sim", "alveo <device>" or "f1 slot <n> (<agfi>)".
    pub fn describe(&self) -> String {
        match self {
            Board::Sim => "sim".into(),
            Board::Model(_) => "model".into(),
            #[cfg(feature = "xrt")]
            Board::Alveo(c) => format!("alveo {}", c.device),
            #[cfg(feature = "f1")]
            Board::F1(c) => format!("f1 slot {} ({})", c.slot, c.agfi),
            Board::Remote(h) => format!("remote ({} FPGA slots up)", h.capacity()),
        }
    }

    /// A real board or slot holds one FPGA worker at a time; the simulated and emulated boards any
    /// number.
    pub fn fpga_limit(&self) -> Option<u32> {
        (!matches!(self, Board::Sim | Board::Model(_) | Board::Remote(_))).then_some(1)
    }

    /// Whether its boards can hold `n` compute units: the simulated and emulated boards run a
    /// backend per CU (a Verilated core each, or the board's timeline each); a real board's CUs are
    /// instances in its xclbin or AFI, which its driver here addresses as one, and a worker host
    /// leases one slot per worker.
    pub fn check_compute_units(&self, n: u32) -> Result<(), String> {
        if n <= 1 || matches!(self, Board::Sim | Board::Model(_)) {
            return Ok(());
        }
        Err(format!(
            "fpga.compute_units = {n} is not supported on the {} board: its driver runs one kernel \
             instance per board (use --board sim or model to study compute units, or set \
             compute_units = 1)",
            self.describe()
        ))
    }
}

/// The backend of a new worker of `kind`: a CPU thread running the reference, or a slot of `board`
/// at `calibration`'s clock; `delay` is the configured part of its spin-up (a VM's boot, a board's
/// reconfiguration beyond what the simulated board measures), and `fail_configure` injects a
/// configuration failure (simulated board).
pub fn spawn(
    kind: Kind,
    board: &Board,
    platform: &Platform,
    calibration: &Calibration,
    image: &KernelImage,
    delay: Duration,
    fail_configure: bool,
) -> Box<dyn Backend> {
    let clock_hz = calibration.clock_hz;
    match (kind, board) {
        (Kind::Cpu, Board::Remote(hosts)) => {
            let slot = remote::RemoteSlot::new(kind, hosts.clone(), calibration, delay);
            match placement::cpu_site(slot.is_reserved()) {
                CpuSite::Remote => Box::new(slot),
                CpuSite::Local => Box::new(CpuWorker::new(platform.cpu, delay, Instant::now())),
            }
        }
        (Kind::Cpu, _) => Box::new(CpuWorker::new(platform.cpu, delay, Instant::now())),
        (Kind::Fpga, Board::Sim) => {
            Box::new(SimBoardSlot::new(clock_hz, delay, platform.fpga, fail_configure))
        }
        (Kind::Fpga, Board::Model(check)) => {
            let checker = check
                .as_ref()
                .and_then(|c| Checker::start(image, calibration.clock_hz, platform.fpga, c.clone()));
            Box::new(
                ModelBoardSlot::new(calibration, delay, platform.fpga, fail_configure).checked_by(checker),
            )
        }
        #[cfg(feature = "xrt")]
        (Kind::Fpga, Board::Alveo(c)) => Box::new(AlveoBoard::new(c.clone(), platform.fpga)),
        #[cfg(feature = "f1")]
        (Kind::Fpga, Board::F1(c)) => Box::new(F1Slot::new(c.clone(), platform.fpga)),
        (Kind::Fpga, Board::Remote(hosts)) => {
            Box::new(remote::RemoteSlot::new(kind, hosts.clone(), calibration, delay))
        }
    }
}

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
    /// The worker is gone (its host went down or stopped answering): its requests re-run elsewhere.
    #[error("the worker was lost: {0}")]
    Lost(String),
    /// The worker answered what its job cannot have produced (a remote host's output of the wrong
    /// kind or length, an impossible board time, or values that differ from the reference): the
    /// answer is dropped, the worker failed and the request re-run elsewhere.
    #[error("the worker's answer was refused: {0}")]
    BadAnswer(String),
}

/// What configuring took.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Configured {
    /// Measured on this machine: thread start (CPU) or model load, instantiate and on-chip state
    /// load (simulated board).
    pub measured: Duration,
    /// The profile's configured delay, slept on top (a real board's reconfiguration, a VM's boot).
    pub configured_delay: Duration,
    /// A real board: one invocation of its smallest job, timed end to end after the load (launch,
    /// transfers, completion), the cost the link model books per invocation.
    pub invocation: Option<Duration>,
}

/// A finished job.
#[derive(Clone, Debug, PartialEq)]
pub struct Executed {
    /// The result.
    pub output: Output,
    /// FPGA: clock cycles the RTL took, and that at the board's clock.
    pub device: Option<(u64, Duration)>,
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
    /// Whether it is an emulated board: its answers are the software reference's own (not checked
    /// against it again) and its worker releases each when the board's timeline says it is done.
    fn is_reference(&self) -> bool {
        false
    }
    /// Whether it holds each of its answers to the reference itself before returning it (a remote
    /// slot: every board answer, whatever its host claims), so its worker does not check it again.
    fn checks_answers(&self) -> bool {
        false
    }
    /// Whether its device times leave out the host link (an emulated or simulated board): the
    /// worker runner then adds the modelled link's cost to each job. A real board's times include
    /// its own.
    fn models_link(&self) -> bool {
        false
    }
    /// Whom to tell if the worker is lost while it waits for work (a remote host going down); a
    /// local worker never is.
    fn on_lost(&mut self, _notify: remote::LostNotify) {}
}
