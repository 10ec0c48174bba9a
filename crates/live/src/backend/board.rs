//! A processing-element slot of the simulated board: a model's Verilated RTL on the generic
//! AXI4-Stream driver. Configuring it instantiates and resets the RTL (verilated when the model
//! loaded; measured), after the board profile's configured reconfiguration delay. Device time is
//! cycles / clock.

use std::time::{Duration, Instant};

use std::sync::Arc;

use spork_sim::Model;
use spork_sim::axis::Axis;

use super::{Backend, BackendError, Configured, Executed, Power};
use crate::datapath::work::{KernelImage, Output, Payload};
use crate::repository::kernel::RepoKernel;
use spork_core::model::{Kind, WorkerSpec};

/// A model's RTL instance on the generic AXI4-Stream driver.
struct Loaded(Axis, Arc<RepoKernel>);

/// One slot of the simulated board.
pub struct SimBoardSlot {
    clock_hz: f64,
    delay: Duration,
    spec: WorkerSpec,
    /// Fail this slot's configuration (fault injection).
    fail: bool,
    // The driver holds an instance of the model; the model (library) is kept after it.
    loaded: Option<Loaded>,
    model: Option<Model>,
    busy: bool,
}

impl SimBoardSlot {
    /// A slot clocked at `clock_hz`, whose reconfiguration also takes `delay`; `fail` injects a
    /// configuration failure.
    pub fn new(clock_hz: f64, delay: Duration, spec: WorkerSpec, fail: bool) -> SimBoardSlot {
        SimBoardSlot { clock_hz, delay, spec, fail, loaded: None, model: None, busy: false }
    }

    /// The model's RTL: verilated when the model was loaded, instantiated and reset here (what was
    /// there first unloaded: reconfiguration replaces the image).
    fn load(&mut self, kernel: &Arc<RepoKernel>) -> Result<(), BackendError> {
        self.loaded = None;
        self.model = None;
        let configure = |reason: String| BackendError::Configure { what: kernel.name().into(), reason };
        let rtl =
            kernel.rtl.as_ref().ok_or_else(|| configure("the model was loaded without its RTL".into()))?;
        let axis = rtl.instance().map_err(|e| configure(e.to_string()))?;
        self.model = Some(rtl.model.clone());
        self.loaded = Some(Loaded(axis, kernel.clone()));
        Ok(())
    }
}

impl Backend for SimBoardSlot {
    fn models_link(&self) -> bool {
        true
    }

    fn kind(&self) -> Kind {
        Kind::Fpga
    }

    fn configure(&mut self, image: &KernelImage) -> Result<Configured, BackendError> {
        // The Verilated model stands in for a separate device: its simulation must not take CPU time
        // from the CPU workers, whose latency is real wall time (the board's latency is taken on its
        // own timeline, whatever Verilator's speed). So this slot's thread runs at a lower priority.
        crate::priority::lower(10);
        std::thread::sleep(self.delay);
        let start = Instant::now();
        if self.fail {
            let reason = "injected fault: the board rejected the image".to_string();
            return Err(BackendError::Configure { what: image.kernel.name().to_string(), reason });
        }
        self.load(&image.kernel)?;
        Ok(Configured { measured: start.elapsed(), configured_delay: self.delay, invocation: None })
    }

    fn submit(&mut self, payload: &Payload) -> Result<Executed, BackendError> {
        let kernel_err = |e: spork_sim::SimError| BackendError::Kernel(e.to_string());
        self.busy = true;
        let result = match (self.loaded.as_mut(), payload) {
            (Some(Loaded(axis, kernel)), Payload::Tensors(t)) => {
                let t = kernel.bound(t).map_err(BackendError::Kernel)?;
                let mut outputs = kernel.outputs(&t);
                let rtl = kernel.rtl.as_ref().ok_or(BackendError::NotConfigured)?;
                let ran = rtl.run(axis, &t.inputs, &t.dims, &mut outputs, &[]);
                if matches!(ran, Err(spork_sim::SimError::Stopped { .. }))
                    && let Ok(fresh) = rtl.instance()
                {
                    // A $stop or $fatal ended the instance: the next request gets a fresh one.
                    *axis = fresh;
                }
                ran.map(|c| (Output::Tensors(outputs), c)).map_err(kernel_err)
            }
            (None, _) => Err(BackendError::NotConfigured),
        };
        self.busy = false;
        let (output, cycles) = result?;
        let device = Duration::from_secs_f64(cycles as f64 / self.clock_hz);
        Ok(Executed { output, device: Some((cycles, device)) })
    }

    fn power(&self) -> Power {
        Power {
            watts: if self.busy { self.spec.busy_power_w } else { self.spec.idle_power_w },
            measured: false,
        }
    }
}
