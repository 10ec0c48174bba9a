//! Spork's lab: the engine in virtual time and the paper's experiments, for researchers.
//!
//! - [`evaluate`]: the discrete-event evaluator (the engine in virtual time) and the paper's metrics,
//!   and brownout's reference scenario.
//! - [`optimal`]: the MILP optimum of section 3 (HiGHS).
//! - [`reproduce`]: every experiment of the paper, its checks, tables and plots.
#![warn(missing_docs)]

pub mod evaluate;
pub mod optimal;
pub mod reproduce;
