//! The software references of Spork's RTL: one golden model per kernel and one for the hardware
//! dispatch engine.
//!
//! This crate is the single definition of what each kernel computes. CPU workers run it for real
//! requests, the RTL in `spork-hdl` is checked bit-exact against it under rust-hdl's simulator and
//! under Verilator (`spork-sim`), and the host uses it without pulling rust-hdl into its build.

#![warn(missing_docs)]

pub mod bloom;
pub mod dense;
pub mod dispatch;
pub mod inputs;
pub mod sobel;

use std::fmt;

/// The benchmark kernels (the paper's Table 2 families) that a worker can be configured with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kernel {
    /// Image processing: 3x3 Sobel gradient magnitude over 8-bit grayscale.
    Sobel,
    /// Document filtering: Bloom-filter matching of 32-bit term hashes against a profile.
    Bloom,
    /// Inference: a dense int16 layer with ReLU.
    Dense,
}

impl Kernel {
    /// Every kernel, in code order.
    pub const ALL: [Kernel; 3] = [Kernel::Sobel, Kernel::Bloom, Kernel::Dense];

    /// The name used for the RTL module, its Verilog file and its manifest.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Sobel => "sobel",
            Kernel::Bloom => "bloom",
            Kernel::Dense => "dense",
        }
    }

    /// What one streamed item is, for throughput figures.
    pub fn item(self) -> &'static str {
        match self {
            Kernel::Sobel => "pixel",
            Kernel::Bloom => "term",
            Kernel::Dense => "input element",
        }
    }

    /// The 2-bit code the dispatch engine uses for this kernel.
    pub fn code(self) -> u8 {
        match self {
            Kernel::Sobel => 0,
            Kernel::Bloom => 1,
            Kernel::Dense => 2,
        }
    }

    /// The kernel with this [`name`](Kernel::name), if any.
    pub fn from_name(name: &str) -> Option<Kernel> {
        Kernel::ALL.into_iter().find(|k| k.name() == name)
    }
}

impl fmt::Display for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A kernel input that does not fit the hardware's fixed shape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShapeError {
    /// A Sobel image width outside 3..=`max`.
    #[error("image width {width} is outside 3..={max} (the line buffers hold {max} pixels)")]
    Width {
        /// The width asked for.
        width: usize,
        /// The widest image the line buffers hold (`sobel::MAX_WIDTH`).
        max: usize,
    },
    /// A Sobel image that is not at least 3 whole rows.
    #[error("image of {len} pixels is not a whole number of rows of {width} with at least 3 rows")]
    Rows {
        /// Pixels given.
        len: usize,
        /// The image width.
        width: usize,
    },
    /// A dense input vector that is empty or longer than the weight memories.
    #[error("input vector of {len} elements is outside 1..={max} (the weight memories hold {max})")]
    Inputs {
        /// Elements given.
        len: usize,
        /// The most inputs per neuron (`dense::MAX_INPUTS`).
        max: usize,
    },
}
