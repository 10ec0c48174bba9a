//! Spork: hybrid FPGA + CPU scheduling for latency-sensitive, bursty requests. This crate is the
//! `spork` command; its library re-exports the three crates' modules under one name:
//!
//! - `spork-core` ([`model`], [`policy`], [`engine`], [`trace`], [`config`], [`input`]): the pure
//!   policy and the engine every driver runs;
//! - `spork-lab` ([`evaluate`], [`optimal`], [`reproduce`]): the evaluator, the MILP optimum and the
//!   paper's experiments (what a researcher embeds; feature `lab`, on by default);
//! - `spork-live` ([`live`], [`run`], [`backend`], [`datapath`], [`repository`], [`serve`], [`oip`],
//!   [`load`], [`worker_api`], [`worker_host`], [`priority`]): pools in wall time, boards, the server
//!   and worker hosts (what an operator runs; it builds without HiGHS).
#![warn(missing_docs)]

pub use spork_core::{config, engine, input, model, policy, trace};
#[cfg(feature = "lab")]
pub use spork_lab::{evaluate, optimal, reproduce};
#[cfg(feature = "xrt")]
pub use spork_live::XRT_LOOPBACK;
pub use spork_live::{
    backend, datapath, live, load, oip, priority, repository, run, serve, worker_api, worker_host,
};
