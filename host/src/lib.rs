//! Spork: hybrid FPGA + CPU scheduling for latency-sensitive, bursty requests.
//!
//! - [`model`]: time, requests, worker specs (the paper's Table 6), the worker pool and its ledger.
//! - [`policy`]: the pure scheduling policy: Spork's allocator (Algorithms 1 and 2), the baselines,
//!   and the dispatchers (Algorithm 3, round robin, index packing).
//! - [`trace`]: the b-model, request sizes, Poisson arrivals and the trace file.
//! - [`engine`]: the timed state machine every driver runs: the pool, the policy objects, timers and
//!   interval ticks; each call reports its effects.
//! - [`evaluate`]: the engine in virtual time (the discrete-event evaluator) and the paper's metrics.
//! - [`config`]: platform profiles from TOML.
//! - [`runtime`]: the engine in wall time on CPU threads, the simulated board and real boards.
//! - [`load`]: `spork load`, an open-loop load generator for a server (HTTP or gRPC).
//! - [`serve`]: the engine behind the Open Inference Protocol (HTTP and gRPC): `spork serve`.
//! - [`worker_host`]: `spork worker`, a host's boards and CPU threads behind the worker API.
//! - [`optimal`]: the MILP optimum of section 3; [`reproduce`]: every experiment of the paper.
//! - [`power`]: power meters (RAPL, Alveo sysfs and xbutil, modelled).
//! - [`xrt`]: pre-flight checks and (feature `xrt`) the XRT C API binding; `f1` (feature): AWS F1 management.
//! - [`bitstream`]: manifests of what a worker can be configured with, and the RTL tool steps.
#![warn(missing_docs)]

pub mod backend;
pub mod config;
pub mod datapath;
pub mod engine;
pub mod evaluate;
pub mod input;
pub mod live;
pub mod load;
pub mod model;
pub mod oip;
pub mod optimal;
pub mod policy;
pub mod priority;
pub mod repository;
pub mod reproduce;
pub mod run;
pub mod serve;
pub mod trace;
pub mod worker_api;
pub mod worker_host;
