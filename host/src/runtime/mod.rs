//! The live runtime: the evaluator's policy objects driven in wall time on real workers.
//!
//! A load-generator thread replays the trace, building each request's real input data; the
//! dispatcher (one tokio task on the calling thread) feeds arrivals, interval ticks and worker
//! timers to the same [`Engine`] the evaluator uses and carries out what it decides on worker
//! threads: CPU workers run the software reference, simulated-board slots run the Verilated RTL
//! (every FPGA result checked against the reference). FPGA latency is taken on the board's own
//! timeline (queueing + cycles / clock), because the Verilated model runs slower than the board
//! would; that simulation lag is measured and reported beside it.

pub mod backend;
mod driver;
pub mod report;
pub mod stream;
pub mod trace;
pub mod work;
pub mod worker;

pub use driver::{Board, FaultPlan, RunConfig, run};
pub use report::RunReport;
