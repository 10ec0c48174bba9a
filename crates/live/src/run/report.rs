//! The report at the end of `spork run`: the pool's own, with the trace's size, this machine's
//! power sensors over the run and the evaluator's prediction beside it.

use std::ops::Deref;

use serde::Serialize;

use super::prediction::Prediction;
use crate::live::PoolReport;
use spork_core::policy::objective::NeverPays;

/// One power sensor's energy over the run.
#[derive(Clone, Debug, Serialize)]
pub struct MeterReading {
    /// The sensor.
    pub name: String,
    /// Measured (sensor) or modelled.
    pub measured: bool,
    /// Joules over the run, or why it could not be read.
    pub energy_j: Result<f64, String>,
}

/// The report at the end of a live run.
#[derive(Clone, Debug, Serialize)]
pub struct RunReport {
    /// Requests in the trace.
    pub trace_requests: u64,
    /// The pool's report (flattened into the report's JSON).
    #[serde(flatten)]
    pub pool: PoolReport,
    /// Power sensors found on this machine and their energy over the run (whole-machine or whole-board
    /// figures, beside the per-type model).
    pub meters: Vec<MeterReading>,
    /// The same trace, profile, constructor and seed in virtual time: what the policy predicted
    /// (absent with `--no-compare`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evaluator: Option<Prediction>,
    /// Its scheduler would hold boards, but none pays at the measured speedup: it held none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fpga_never_pays: Option<NeverPays>,
}

/// A run's report reads as its pool's, which is most of it.
impl Deref for RunReport {
    type Target = PoolReport;
    fn deref(&self) -> &PoolReport {
        &self.pool
    }
}
