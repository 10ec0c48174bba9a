//! The kernels' data path: what a request carries to a worker and back ([`work`]: the kernel image,
//! a payload's inputs, the reference answer) and the AXI4-Stream framing a board sees ([`stream`]).
//! A repository model's payload is tensors, run by its own kernel (`crate::repository`).
//! It sits below both the backends, which run payloads, and the worker API, which carries them
//! between hosts, so neither imports the other to name a payload.

pub mod batch;
pub mod stream;
pub mod work;
