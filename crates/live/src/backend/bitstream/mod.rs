//! What a worker can be configured with: one manifest per image under `bitstreams/<target>/`,
//! recording the design, its source, clock and synthesised resources, and (once measured) its load
//! latency; plus the RTL toolchain steps (Verilator lint, yosys synthesis, iCE40 place and route)
//! that fill them in.

mod manifest;
pub mod timing;
mod tools;

pub use manifest::{
    Manifest, ManifestLink, Measured, Resources, Role, Target, default_dir, manifest_path, sha256_hex,
};
pub use tools::{LintOutcome, Synthesis, ToolError, lint, synthesize, tool_version};
