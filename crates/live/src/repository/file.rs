//! `model.toml` as written (format 1): serde types that refuse unknown keys, with spans kept where a
//! later check must point at a line. [`super::spec`] turns this into a checked [`super::ModelSpec`].

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

/// The format this Spork reads.
pub const FORMAT: u32 = 1;

/// The whole file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelFile {
    pub format: Spanned<u32>,
    #[serde(default)]
    pub description: String,
    pub deadline_factor: Option<Spanned<f64>>,
    #[serde(default)]
    pub dims: BTreeMap<String, Spanned<DimFile>>,
    #[serde(rename = "input", default)]
    pub inputs: Vec<TensorFile>,
    #[serde(rename = "output", default)]
    pub outputs: Vec<TensorFile>,
    pub items: Option<Spanned<Vec<String>>>,
    pub optional: Option<Spanned<OptionalFile>>,
    pub cpu: Option<Spanned<CpuFile>>,
    #[serde(default)]
    pub fpga: FpgaFile,
    pub batching: Option<Spanned<BatchingFile>>,
}

/// `[batching]`: dynamic batching along a dimension every tensor leads with.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchingFile {
    pub dim: String,
    pub max_batch_size: u32,
    #[serde(default)]
    pub preferred_batch_size: Vec<u32>,
    #[serde(default = "default_queue_delay_us")]
    pub max_queue_delay_us: u64,
    #[serde(default)]
    pub halo: u64,
}

/// Triton's usual delay: 100 microseconds.
fn default_queue_delay_us() -> u64 {
    100
}

/// A variable dimension's bounds.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DimFile {
    pub min: u64,
    pub max: u64,
}

/// One `[[input]]` or `[[output]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TensorFile {
    pub name: Spanned<String>,
    pub datatype: Spanned<String>,
    pub shape: Spanned<Vec<Spanned<DimEntry>>>,
}

/// A shape entry: a fixed size or a dimension expression (`"N"`, `"N-2"`).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum DimEntry {
    Fixed(i64),
    Named(String),
}

/// `[optional]`: the brownout part's tensor names.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OptionalFile {
    pub inputs: BTreeMap<String, String>,
    pub outputs: BTreeMap<String, String>,
}

/// `[cpu]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpuFile {
    pub sources: Option<Vec<Spanned<String>>>,
    pub library: Option<Spanned<String>>,
    #[serde(default)]
    pub headers: Vec<Spanned<String>>,
    #[serde(default)]
    pub config: String,
    pub isolation: Option<Spanned<String>>,
    pub timeout: Option<Spanned<String>>,
    pub memory_mib: Option<Spanned<u64>>,
}

/// `[fpga]`: one table per board kind.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FpgaFile {
    pub sim: Option<Spanned<SimFile>>,
    pub model: Option<Spanned<TimingFile>>,
    pub alveo: Option<Spanned<AlveoFile>>,
    pub f1: Option<Spanned<F1File>>,
}

/// `[fpga.sim]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimFile {
    pub sources: Vec<Spanned<String>>,
    pub top: String,
    pub clock: Option<String>,
    pub reset: Option<String>,
    pub reset_active: Option<Spanned<String>>,
    pub input: Option<String>,
    pub output: Option<String>,
    pub last: Option<Spanned<String>>,
    pub scalars: Option<Spanned<BTreeMap<String, String>>>,
    pub lanes: Option<Spanned<u64>>,
}

/// `[fpga.model]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimingFile {
    pub manifest: Option<Spanned<String>>,
    pub clock_mhz: Option<f64>,
    pub items_per_cycle: Option<f64>,
    pub latency_cycles: Option<u64>,
}

/// `[fpga.alveo]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AlveoFile {
    pub xclbin: Spanned<String>,
}

/// `[fpga.f1]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct F1File {
    pub agfi: Spanned<String>,
    pub xclbin: Spanned<String>,
}
