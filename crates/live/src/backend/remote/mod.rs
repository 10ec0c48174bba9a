//! Workers on other hosts: the scheduler's side of the worker API (`proto/worker.proto`), served by
//! `spork worker`. [`Hosts`] finds, health-checks and quarantines the hosts (`hosts.rs`) and books the
//! slots leased on them (`leases.rs`); a [`RemoteSlot`] is one leased slot behind the
//! [`super::Backend`] trait, so a remote worker is a worker of the engine like any other (its thread,
//! queue, generation and failure path are the runtime's own).

mod hosts;
mod leases;
mod slot;
pub mod source;

pub use crate::worker_api::tls::{DEFAULT_WORKER_NAME, TlsFiles};
pub use hosts::{AUDIT_ONE_IN, HostView, Hosts, HostsError, JOB_TIMEOUT, QUARANTINE, RemoteConfig};
pub use leases::LostNotify;
pub use slot::{MAX_JOB_TIME, RemoteSlot};
pub use source::Source;
