//! Spork's core: what every driver shares, with no sockets, threads or clock of its own.
//!
//! - [`model`]: time, requests, worker specs (the paper's Table 6), the worker pool and its ledger.
//! - [`policy`]: the pure scheduling policy: Spork's allocator (Algorithms 1 and 2), the baselines,
//!   the dispatchers (Algorithm 3, round robin, index packing), brownout's controllers, batching and
//!   the speed and size estimators.
//! - [`engine`]: the timed state machine every driver runs: the pool, the policy objects, timers and
//!   interval ticks; each call reports its effects.
//! - [`trace`]: the b-model, request sizes, Poisson arrivals, production traces and the trace file.
//! - [`config`]: platform profiles from TOML; [`input`]: reading a user's files within bounds.
//!
//! The evaluator and the paper's experiments are `spork-lab`; the live pools, backends, server and
//! worker hosts `spork-live`.
#![warn(missing_docs)]

pub mod config;
pub mod engine;
pub mod input;
pub mod model;
pub mod policy;
pub mod trace;
