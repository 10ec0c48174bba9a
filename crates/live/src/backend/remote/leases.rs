//! The leases on the worker hosts: a slot reserved on the host with the most free, booked once its
//! host configured it, released (the host told without waiting), and lost, once, when its host goes
//! down, restarts without it or is quarantined. The hosts' membership (discovery, health,
//! quarantine) is [`super::hosts`]; it reconciles these books with each health answer.

use std::net::SocketAddr;
use std::sync::Arc;

use spork_core::model::Kind;
use spork_core::policy::placement::{self, HostSlots};
use tokio::sync::{Semaphore, watch};
use tonic::transport::Channel;

use super::hosts::Hosts;
use crate::worker_api::wire::pb;
use crate::worker_api::wire::pb::worker_client::WorkerClient;

/// Called once when a lease is lost, with why.
pub type LostNotify = Box<dyn FnOnce(String) + Send>;

/// A leased slot as the hosts book it.
pub(super) struct Lease {
    pub(super) kind: Kind,
    pub(super) lost: Option<LostNotify>,
    /// Set when the lease is lost: wakes a job waiting on it.
    pub(super) cancel: watch::Sender<bool>,
}

/// A slot reserved on a host for a lease being configured.
pub(super) struct Reserved {
    pub addr: SocketAddr,
    pub client: WorkerClient<Channel>,
    /// Changes if the host goes down meanwhile.
    pub downs: watch::Receiver<u64>,
    /// The host's answer budget in KiB, shared by its slots.
    pub decode: Arc<Semaphore>,
}

impl Hosts {
    /// Reserves a free `kind` slot on the host with the most free, for a lease being configured.
    pub(super) fn reserve(&self, kind: Kind) -> Option<Reserved> {
        let mut st = self.lock();
        let free = st.hosts.iter().map(|(&addr, h)| HostSlots { addr, free: h.free(kind) });
        let addr = placement::pick_host(free)?;
        let host = st.hosts.get_mut(&addr)?;
        host.claimed[kind] += 1;
        Some(Reserved {
            addr,
            client: host.client.clone(),
            downs: host.downs.subscribe(),
            decode: host.decode.clone(),
        })
    }

    /// Undoes [`Hosts::reserve`] for a lease that was not configured.
    pub(super) fn unreserve(&self, addr: SocketAddr, kind: Kind) {
        if let Some(h) = self.lock().hosts.get_mut(&addr) {
            h.claimed[kind] = h.claimed[kind].saturating_sub(1);
        }
    }

    /// Books `lease` of `kind` on `addr` (reserved before); `lost` is told if the host goes down.
    /// Returns the watch a job waits on (true once lost), already true if the host went down meanwhile.
    pub(super) fn register(
        &self,
        addr: SocketAddr,
        lease: u64,
        kind: Kind,
        lost: LostNotify,
    ) -> watch::Receiver<bool> {
        let (cancel, rx) = watch::channel(false);
        let mut st = self.lock();
        match st.hosts.get_mut(&addr).filter(|h| h.up) {
            Some(h) => {
                h.leases.insert(lease, Lease { kind, lost: Some(lost), cancel });
            }
            None => {
                drop(st);
                let _ = cancel.send(true);
                lost(format!("worker host {addr} went down while the slot was being configured"));
            }
        }
        rx
    }

    /// Frees `lease` on `addr` (the worker was released): its slot is free again, and the host is
    /// told, without waiting.
    pub(super) fn release(&self, addr: SocketAddr, lease: u64) {
        let client = {
            let mut st = self.lock();
            let Some(h) = st.hosts.get_mut(&addr) else { return };
            let Some(l) = h.leases.remove(&lease) else { return };
            h.claimed[l.kind] = h.claimed[l.kind].saturating_sub(1);
            h.client.clone()
        };
        self.send_release(client, lease);
    }

    /// Frees a lease the host holds for us that we do not.
    pub(super) fn release_stale(&self, addr: SocketAddr, lease: u64) {
        let Some(client) = self.lock().hosts.get(&addr).map(|h| h.client.clone()) else { return };
        self.send_release(client, lease);
    }

    /// Tells a host to free `lease`, without waiting for its answer.
    fn send_release(&self, mut client: WorkerClient<Channel>, lease: u64) {
        let session = self.inner.session;
        let timeout = self.inner.cfg.health_timeout;
        self.spawn(async move {
            let _ =
                tokio::time::timeout(timeout, client.release(pb::ReleaseRequest { session, lease })).await;
        });
    }
}

/// Reports a lease lost, once.
pub(super) fn lose(mut l: Lease, why: String) {
    let _ = l.cancel.send(true);
    if let Some(f) = l.lost.take() {
        f(why);
    }
}
