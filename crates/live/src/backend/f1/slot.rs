//! An AWS F1 slot as a worker (feature `f1`): reconfiguration loads the AFI through `libfpga_mgmt`,
//! timed; jobs run through the Vitis data path over XRT (the slot's `.awsxclbin`, feature `xrt`).
//! Power: the SDK's metrics, whole watts updated once a minute (measured, and coarse: say so).

use std::path::PathBuf;
use std::time::Duration;

use super::FpgaMgmt;
use crate::backend::{Backend, BackendError, Configured, Executed, Power};
use crate::datapath::work::{KernelImage, Payload};
use spork_core::model::{Kind, WorkerSpec};

/// Which slot and image.
#[derive(Clone, Debug)]
pub struct F1Config {
    /// FPGA slot (0-7 on f1.16xlarge).
    pub slot: u32,
    /// The AFI's global id (`agfi-...`).
    pub agfi: String,
    /// The matching `.awsxclbin` for the data path (feature `xrt`).
    pub xclbin: Option<PathBuf>,
    /// The sysfs root (pre-flight checks).
    pub sys: PathBuf,
    /// Load and run timeout.
    pub timeout: Duration,
}

/// One F1 slot.
pub struct F1Slot {
    cfg: F1Config,
    spec: WorkerSpec,
    mgmt: Option<FpgaMgmt>,
    #[cfg(feature = "xrt")]
    data: Option<crate::backend::AlveoBoard>,
}

impl F1Slot {
    /// A slot worker; nothing is opened until `configure`.
    pub fn new(cfg: F1Config, spec: WorkerSpec) -> F1Slot {
        F1Slot {
            cfg,
            spec,
            mgmt: None,
            #[cfg(feature = "xrt")]
            data: None,
        }
    }
}

impl Backend for F1Slot {
    fn kind(&self) -> Kind {
        Kind::Fpga
    }

    fn configure(&mut self, image: &KernelImage) -> Result<Configured, BackendError> {
        let err = |e: String| BackendError::Configure { what: self.cfg.agfi.clone(), reason: e };
        let mgmt = FpgaMgmt::open(&self.cfg.sys).map_err(|e| err(e.to_string()))?;
        let took =
            mgmt.load(self.cfg.slot, &self.cfg.agfi, self.cfg.timeout).map_err(|e| err(e.to_string()))?;
        self.mgmt = Some(mgmt);
        let mut invocation = None;
        #[cfg(feature = "xrt")]
        if let Some(x) = &self.cfg.xclbin {
            let mut data = crate::backend::AlveoBoard::new(
                crate::backend::AlveoConfig {
                    device: self.cfg.slot.to_string(),
                    xclbin: x.clone(),
                    alternate: None,
                    sys: self.cfg.sys.clone(),
                    timeout: self.cfg.timeout,
                },
                self.spec,
            );
            invocation = data.configure(image)?.invocation;
            self.data = Some(data);
        }
        let _ = image;
        Ok(Configured { measured: took, configured_delay: Duration::ZERO, invocation })
    }

    fn submit(&mut self, payload: &Payload) -> Result<Executed, BackendError> {
        #[cfg(feature = "xrt")]
        if let Some(d) = self.data.as_mut() {
            return d.submit(payload);
        }
        let _ = payload;
        Err(BackendError::Kernel(
            "F1 jobs run through the Vitis data path: build with features f1 and xrt and give --xclbin <the .awsxclbin>"
                .into(),
        ))
    }

    fn power(&self) -> Power {
        match self.mgmt.as_ref().and_then(|m| m.power(self.cfg.slot).ok()) {
            Some((_, now)) => Power { watts: now as f64, measured: true },
            None => Power { watts: self.spec.idle_power_w, measured: false },
        }
    }
}
