//! Workers on other hosts: the scheduler's side of the worker API (`proto/worker.proto`), served by
//! `spork worker`. [`Hosts`] finds and health-checks the hosts and books the slots leased on them;
//! a [`RemoteSlot`] is one leased slot behind the [`super::Backend`] trait, so a remote worker is a
//! worker of the engine like any other (its thread, queue, generation and failure path are the
//! runtime's own).

mod hosts;
mod slot;
pub mod source;

pub use crate::worker_api::tls::{DEFAULT_WORKER_NAME, TlsFiles};
pub use hosts::{
    AUDIT_ONE_IN, HostView, Hosts, HostsError, JOB_TIMEOUT, LostNotify, QUARANTINE, RemoteConfig,
};
pub use slot::{MAX_JOB_TIME, RemoteSlot};
pub use source::Source;
