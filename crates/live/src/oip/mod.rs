//! The Open Inference Protocol's gRPC messages, its HTTP binary extension's header, (`proto/inference.proto`, written from the
//! protocol's spec) and the codec that bounds a request's counts on the wire before decoding it, in
//! one place: the server (`serve`) and the load generator's client (`load`) both import them.

pub mod codec;

/// The generated protocol types.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod proto {
    tonic::include_proto!("inference");
}

/// Most inputs or outputs one request may name (a model has at most three inputs and two outputs).
pub const MAX_TENSORS: usize = 16;
/// Most dimensions of a tensor's shape.
pub const MAX_DIMS: usize = 8;
/// The HTTP binary extension's header: the length of the JSON part of a body.
pub const HEADER_LENGTH: &str = "inference-header-content-length";

/// The model property (metadata `properties`, both protocols) in which `spork serve` states its
/// model's CPU code's measured speed, items per second: what a load generator sizes requests by.
pub const CPU_ITEMS_PER_SEC: &str = "cpu_items_per_sec";
