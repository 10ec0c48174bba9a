//! The simulated FPGA board: Verilator models of Spork's RTL, each a shared library loaded and
//! unloaded at run time (the simulated reconfiguration), driven from Rust through a safe API.
//!
//! [`Model`] is one loaded design with its port table; [`Instance`] is one running copy with its
//! own Verilator context (instances may live on different threads). Any design with AXI4-Stream ports
//! runs on the generic driver in [`axis`]: a model repository's RTL (verilated at run time by
//! [`cache`]; Spork's own models too) and Spork's kernels inside their Vitis wrappers
//! (`<kernel>_axis`). The built-in kernels' requests on the simulated board take the core-level
//! drivers in [`cores`], which drive a bare core's ports: the wrapper simulates at about half their
//! speed (4.6 against 8.2 Mcycles/s for Sobel), and a live board that lags its clock more loses
//! its work to the CPUs. [`dispatch`] drives the dispatch engine.

pub mod axis;
pub mod beats;
pub mod bloom8;
pub mod bounded;
pub mod cache;
pub mod cores;
pub mod dense32;
pub mod dispatch;
pub mod measure;
mod model;
pub mod sobel8;
mod state;
pub mod verilate;

pub use model::{
    Instance, Model, Moved, Port, PortInfo, StreamPorts, built_models_dir, model_path, model_source,
};

use std::path::PathBuf;

/// What can go wrong loading or driving a model.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error(
        "no simulated-board model at {path}: build spork-sim (it verilates bitstreams/sim/*.v) or point \
         SPORK_SIM_MODELS at the folder holding libspork_model_<name>.so"
    )]
    Missing { path: PathBuf },
    #[error("cannot load the model {path}: {source}")]
    Load { path: PathBuf, source: libloading::Error },
    #[error("{path} is not a spork-sim model (missing symbol {symbol}): {source}")]
    Symbol { path: PathBuf, symbol: &'static str, source: libloading::Error },
    #[error("model {model} has no {direction} port `{port}` (its ports: {known})")]
    NoPort { model: String, port: String, direction: &'static str, known: String },
    #[error("model {model} is `{found}`, expected `{expected}`")]
    WrongModel { model: String, found: String, expected: String },
    #[error(transparent)]
    Shape(#[from] spork_golden::ShapeError),
    #[error("the {model} model produced {got} outputs for {expected} expected after {cycles} cycles")]
    Stalled { model: String, got: usize, expected: usize, cycles: u64 },
    #[error(
        "the {model} design took {sent} of {offered} input beats and gave {got} of {expected} output beats \
         in {cycles} cycles, then stopped (check its TREADY/TVALID handshake and TLAST{hint})"
    )]
    Stream {
        model: String,
        sent: usize,
        offered: usize,
        got: usize,
        expected: usize,
        cycles: u64,
        hint: String,
    },
    #[error(
        "the {model} design stopped: {why}\n  fix: the design ran $stop or $fatal (its message is on the \
         server's stderr), or the simulator failed; this run fails, the next gets a fresh instance"
    )]
    Stopped { model: String, why: String },
    #[error(
        "the {model} design's output beat {beat} keeps lanes {got:#b}, its row leaves it {want:#b}\n  fix: set \
         m_axis_tkeep to the lanes a beat fills (a row's last beat keeps only those its row reaches)"
    )]
    Keep { model: String, beat: usize, got: u64, want: u64 },
    #[error("beats of {got} words were offered to {model}'s TDATA of {want} words")]
    BeatWords { model: String, got: usize, want: usize },
    #[error(transparent)]
    Verilate(#[from] verilate::VerilateError),
}
