//! Workloads: the b-model generator, size buckets, rate traces replayed as Poisson arrivals, and the
//! compact trace file.

pub mod bmodel;
pub mod file;
pub mod production;
pub mod rates;
pub mod size;
pub mod synthetic;

pub use rates::RateTrace;
pub use size::SizeSpec;
pub use synthetic::Synthetic;
