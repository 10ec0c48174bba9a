//! Spork: hybrid FPGA + CPU scheduling for latency-sensitive, bursty requests.
//!
//! - [`model`]: time, requests, worker specs (the paper's Table 6), the worker pool and its ledger.
//! - [`policy`]: the pure scheduling policy: Spork's allocator (Algorithms 1 and 2), the baselines,
//!   and the dispatchers (Algorithm 3, round robin, index packing).
//! - [`trace`]: the b-model, request sizes, Poisson arrivals and the trace file.
//! - [`evaluate`]: the discrete-event evaluator and its report.
//! - [`config`]: platform profiles from TOML.
//! - [`runtime`]: the live runtime: the same policy in wall time on CPU threads and the simulated board.
//! - [`power`]: power meters (RAPL, Alveo sysfs and xbutil, modelled).
//! - [`xrt`]: pre-flight checks and (feature `xrt`) the XRT C API binding; `f1` (feature): AWS F1 management.
//! - [`bitstream`]: manifests of what a worker can be configured with, and the RTL tool steps.
#![warn(missing_docs)]

pub mod bitstream;
pub mod config;
pub mod evaluate;
#[cfg(feature = "f1")]
pub mod f1;
pub mod input;
pub mod model;
pub mod optimal;
pub mod policy;
pub mod power;
pub mod reproduce;
pub mod runtime;
pub mod trace;
pub mod xrt;
