//! A CPU worker: an OS thread running the software reference.

use std::time::{Duration, Instant};

use super::{Backend, BackendError, Configured, Executed, Power};
use crate::datapath::work::{KernelImage, Payload};
use spork_core::model::{Kind, WorkerSpec};

/// A CPU worker thread's backend.
pub struct CpuWorker {
    image: Option<KernelImage>,
    spec: WorkerSpec,
    delay: Duration,
    busy: bool,
    started: Instant,
}

impl CpuWorker {
    /// A worker drawing power as `spec` says, sleeping `delay` when configured (a VM's boot).
    pub fn new(spec: WorkerSpec, delay: Duration, started: Instant) -> CpuWorker {
        CpuWorker { image: None, spec, delay, busy: false, started }
    }
}

impl Backend for CpuWorker {
    fn kind(&self) -> Kind {
        Kind::Cpu
    }

    fn configure(&mut self, image: &KernelImage) -> Result<Configured, BackendError> {
        // The thread is already running: its measured spin-up is from the spawn request until here.
        let measured = self.started.elapsed();
        std::thread::sleep(self.delay);
        self.image = Some(image.clone());
        Ok(Configured { measured, configured_delay: self.delay, invocation: None })
    }

    fn submit(&mut self, payload: &Payload) -> Result<Executed, BackendError> {
        let image = self.image.as_ref().ok_or(BackendError::NotConfigured)?;
        self.busy = true;
        let out = image.reference(payload).map_err(|e| BackendError::Kernel(e.to_string()));
        self.busy = false;
        Ok(Executed { output: out?, device: None })
    }

    fn power(&self) -> Power {
        Power {
            watts: if self.busy { self.spec.busy_power_w } else { self.spec.idle_power_w },
            measured: false,
        }
    }
}
