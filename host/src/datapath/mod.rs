//! The kernels' data path: what a request carries to a worker and back ([`work`]: the kernel image,
//! a payload's inputs, the reference answer), the AXI4-Stream framing a board sees ([`stream`]), and
//! the aligned tensors a repository model's kernel takes ([`tensor`]).
//! It sits below both the backends, which run payloads, and the worker API, which carries them
//! between hosts, so neither imports the other to name a payload.

pub mod stream;
pub mod tensor;
pub mod work;
