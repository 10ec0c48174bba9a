//! A board emulated in real time: the golden reference computes each answer, and the worker releases
//! it when the board's own timeline says it is done (its items over items per cycle times the clock,
//! from the kernel's manifest; see `is_reference`). A served request's wall-clock latency is then what a board of
//! that clock would give, with no Verilator lag; configuring takes the profile's reconfiguration delay.
//! Its answers are the reference's, so the worker does not check them again; with a [`Checker`] each is
//! also run on the Verilated RTL in the background and compared.

use std::time::{Duration, Instant};

use super::crosscheck::Checker;
use super::{Backend, BackendError, Configured, Executed, Power};
use crate::backend::calibrate::Calibration;
use crate::datapath::work::{KernelImage, Payload};
use spork_core::model::{Kind, WorkerSpec};

/// One slot of the emulated board.
pub struct ModelBoardSlot {
    clock_hz: f64,
    items_per_cycle: f64,
    delay: Duration,
    spec: WorkerSpec,
    fail: bool,
    image: Option<KernelImage>,
    busy: bool,
    checker: Option<Checker>,
}

impl ModelBoardSlot {
    /// A slot streaming at `calibration`'s clock times items per cycle, whose reconfiguration takes
    /// `delay`; `fail` injects a configuration failure.
    pub fn new(calibration: &Calibration, delay: Duration, spec: WorkerSpec, fail: bool) -> Self {
        let (clock_hz, items_per_cycle) = (calibration.clock_hz, calibration.items_per_cycle);
        ModelBoardSlot {
            clock_hz,
            items_per_cycle,
            delay,
            spec,
            fail,
            image: None,
            busy: false,
            checker: None,
        }
    }

    /// The same, its answers also checked on the Verilated RTL by `checker`.
    pub fn checked_by(mut self, checker: Option<Checker>) -> Self {
        self.checker = checker;
        self
    }

    /// The board's cycles for `items`, and their time at its clock.
    fn device(&self, items: u64) -> (u64, Duration) {
        let cycles = (items as f64 / self.items_per_cycle).ceil() as u64;
        (cycles, Duration::from_secs_f64(cycles as f64 / self.clock_hz))
    }
}

impl Backend for ModelBoardSlot {
    fn models_link(&self) -> bool {
        true
    }

    fn kind(&self) -> Kind {
        Kind::Fpga
    }

    fn configure(&mut self, image: &KernelImage) -> Result<Configured, BackendError> {
        std::thread::sleep(self.delay);
        let start = Instant::now();
        if self.fail {
            let reason = "injected fault: the board rejected the image".to_string();
            return Err(BackendError::Configure { what: image.kernel.name().to_string(), reason });
        }
        self.image = Some(image.clone());
        Ok(Configured { measured: start.elapsed(), configured_delay: self.delay, invocation: None })
    }

    fn submit(&mut self, payload: &Payload) -> Result<Executed, BackendError> {
        let image = self.image.as_ref().ok_or(BackendError::NotConfigured)?;
        self.busy = true;
        let output = image.reference(payload).map_err(|e| BackendError::Kernel(e.to_string()));
        let (cycles, device) = self.device(payload.items());
        if let (Some(c), Ok(out)) = (&self.checker, &output) {
            c.check(payload, out);
        }
        self.busy = false;
        Ok(Executed { output: output?, device: Some((cycles, device)) })
    }

    fn power(&self) -> Power {
        Power {
            watts: if self.busy { self.spec.busy_power_w } else { self.spec.idle_power_w },
            measured: false,
        }
    }

    fn is_reference(&self) -> bool {
        true
    }
}
