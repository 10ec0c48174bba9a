//! AMD/Xilinx XRT: pre-flight checks (always built) and, with feature `xrt`, bindings to the XRT C
//! API (bindgen) under a safe wrapper: open a device by index or BDF, load an xclbin (timed), open
//! kernels, allocate, write, sync and read buffers, start runs and wait with a timeout. Every XRT
//! error becomes a typed error naming the call that failed.

pub mod preflight;

#[cfg(feature = "xrt")]
mod device;
#[cfg(feature = "xrt")]
mod sys;

#[cfg(feature = "xrt")]
pub use device::{Bo, Device, Kernel, Run, SyncDirection, XrtError};
