//! Spork's live side: the engine in wall time on real workers, and everything an operator runs.
//!
//! - [`live`]: a pool in wall time (the dispatcher loop), its workers and its report; [`run`]: `spork
//!   run`, a trace replayed live.
//! - [`backend`]: CPU threads, the emulated, simulated (Verilator) and real (XRT, F1) boards, remote
//!   worker hosts, power meters and the bitstream manifests.
//! - [`datapath`]: a request's work, its batching and the board's stream words.
//! - [`repository`]: model folders (`model.toml`), their CPU code behind the C ABI (isolated in
//!   kernel processes) and their RTL.
//! - [`serve`]: the Open Inference Protocol over HTTP and gRPC (`spork serve`); [`oip`]: its
//!   messages; [`load`]: `spork load`, an open-loop load generator.
//! - [`worker_api`], [`worker_host`]: the worker API and `spork worker`, a host's boards and CPUs.
//! - [`priority`]: real-time scheduling of the threads that need it.
//!
//! The policy and the engine it drives are `spork-core`; nothing here solves a MILP.
#![warn(missing_docs)]

pub mod backend;
pub mod datapath;
pub mod live;
pub mod load;
pub mod oip;
pub mod priority;
pub mod repository;
pub mod run;
pub mod serve;
pub mod worker_api;
pub mod worker_host;

/// With feature `xrt`: the folder of the tests' loopback XRT (tests/xrt_loopback, built by this
/// crate's build script), for the tests to put on `LD_LIBRARY_PATH`.
#[cfg(feature = "xrt")]
pub const XRT_LOOPBACK: &str = env!("SPORK_XRT_LOOPBACK");
