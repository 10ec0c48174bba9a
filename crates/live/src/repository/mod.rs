//! The model repository: models from folders (`model.toml` with tensor specs, a CPU implementation
//! behind a C ABI, FPGA implementations per board kind), checked at load with errors that name the
//! file, the line and the fix. See docs/model-repository.md.
//!
//! - [`spec`]: `model.toml` read and checked ([`file`] is the raw format); [`shape`]: named
//!   dimensions; [`request`]: a request's inputs bound and its outputs sized.
//! - [`cpu`]: the C ABI (sources compiled into the cache, or a library) with one state per worker.
//! - [`rtl`]: the RTL verilated at load (cached) on the generic AXI4-Stream driver; [`stream`]: the
//!   tensors-to-beats packing.
//! - [`isolate`]: a model's CPU code in kernel processes of its own (the default), so its crash or
//!   hang fails its own requests only.
//! - [`digest`]: a model folder's identity across worker hosts.
//! - [`check`]: `spork kernel check`, the RTL co-simulated against the CPU code.
//! - [`kernel`]: a model ready to serve ([`kernel::RepoKernel`]); [`tensor`]: aligned tensors.
//! - [`own`]: Spork's own repository (sobel, bloom, dense), embedded, the default; [`vitis`]: a
//!   model's RTL as a Vitis kernel (`spork kernel package`).

pub mod arena;
mod batch;
pub mod check;
pub mod cpu;
pub mod digest;
mod file;
pub mod isolate;
pub mod kernel;
pub mod own;
mod request;
pub mod rtl;
pub mod shape;
pub mod shm;
pub mod spec;
pub mod stream;
pub mod tensor;
pub mod vitis;

use std::path::{Path, PathBuf};

pub use spec::ModelSpec;

use spork_core::input::InputError;

/// A model folder and what loading it gave.
pub type Scanned = (PathBuf, Result<ModelSpec, InputError>);

/// A repository folder's model folders (each holding a `model.toml`), sorted by name.
pub fn folders(dir: &Path) -> Result<Vec<PathBuf>, InputError> {
    let entries = std::fs::read_dir(dir).map_err(|source| InputError::Io {
        action: "list",
        path: dir.to_path_buf(),
        source,
    })?;
    let mut folders: Vec<PathBuf> =
        entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.join("model.toml").is_file()).collect();
    folders.sort();
    Ok(folders)
}

/// A repository folder's models: each folder holding a `model.toml`, loaded or refused on its own
/// (one bad model does not keep the others out), sorted by name.
pub fn scan(dir: &Path) -> Result<Vec<Scanned>, InputError> {
    Ok(folders(dir)?.into_iter().map(|f| (f.clone(), spec::load(&f))).collect())
}
