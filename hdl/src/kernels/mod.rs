//! The streaming kernels, checked bit-exact against `spork_golden`: one item per cycle each, and
//! Sobel at eight pixels, Bloom at eight terms and the dense layer at 32 elements per cycle too.

pub mod bloom;
pub mod bloom8;
pub mod dense;
pub mod dense32;
pub mod sobel;
pub mod sobel8;

pub use bloom::Bloom;
pub use bloom8::Bloom8;
pub use dense::Dense;
pub use dense32::{Dense32, Neuron32};
pub use sobel::Sobel;
pub use sobel8::Sobel8;
