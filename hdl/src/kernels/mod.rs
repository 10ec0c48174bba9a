//! The streaming kernels: one item per cycle each, checked bit-exact against `spork_golden`.

pub mod bloom;
pub mod dense;
pub mod sobel;

pub use bloom::Bloom;
pub use dense::Dense;
pub use sobel::Sobel;
