//! The worker API between a scheduler and its worker hosts (`proto/worker.proto`): the generated
//! messages and their checked conversions ([`wire`]) and mutual TLS ([`tls`]). Both sides import it
//! from here: the client (`backend::remote`) and the server (`worker_host`).

pub mod tls;
pub mod wire;
