//! The worker hosts a scheduler knows: found from its sources (re-resolved every `resolve_every`),
//! health-checked every `health_every`, and the slots it has leased on each. A host that stops
//! answering (`misses` checks in a row, or at once when a job's connection breaks and a check fails)
//! or leaves DNS goes down: every lease on it is reported lost (its pool fails the worker through
//! the engine and re-runs its requests) and its slots leave the capacity. When it answers again its
//! slots come back as idle capacity, and what it still held for us is released.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use tokio::runtime::{Handle, Runtime};
use tokio::sync::watch;
use tonic::transport::{Channel, ClientTlsConfig, Endpoint};

use super::source::Source;
use super::tls::{TlsError, TlsFiles, plaintext_allowed};
use super::wire::pb;
use super::wire::pb::worker_client::WorkerClient;
use crate::model::{Kind, PerKind};

/// How a scheduler reaches its worker hosts.
#[derive(Clone, Debug)]
pub struct RemoteConfig {
    /// Where hosts are found.
    pub sources: Vec<Source>,
    /// Mutual TLS (the scheduler's files) and the name workers' certificates carry; `None`:
    /// plaintext, refused for a host outside loopback unless `insecure`.
    pub tls: Option<(TlsFiles, String)>,
    /// Plaintext allowed outside loopback.
    pub insecure: bool,
    /// Health checks, each with `health_timeout`; a host is down after `misses` failed in a row.
    pub health_every: Duration,
    /// See `health_every`.
    pub health_timeout: Duration,
    /// See `health_every`.
    pub misses: u32,
    /// Sources are resolved again this often.
    pub resolve_every: Duration,
}

impl RemoteConfig {
    /// `sources` over `tls`, checked every 250 ms (down after 4 misses of 500 ms) and resolved every
    /// 5 s.
    pub fn new(sources: Vec<Source>, tls: Option<(TlsFiles, String)>, insecure: bool) -> RemoteConfig {
        RemoteConfig {
            sources,
            tls,
            insecure,
            health_every: Duration::from_millis(250),
            health_timeout: Duration::from_millis(500),
            misses: 4,
            resolve_every: Duration::from_secs(5),
        }
    }
}

/// Why the hosts cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum HostsError {
    /// A TLS file, or plaintext where TLS is required.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// The client's runtime.
    #[error("cannot start the worker client's threads: {0}")]
    Runtime(std::io::Error),
    /// Nothing to find hosts from.
    #[error("no worker host given (fix: --worker HOST:PORT, repeatable, or --workers dns:NAME:PORT)")]
    NoSource,
}

/// Called once when a lease is lost, with why.
pub type LostNotify = Box<dyn FnOnce(String) + Send>;

/// Told the FPGA slots of the hosts that are up.
pub type CapacityNotify = Box<dyn Fn(u32) + Send>;

/// A leased slot as the hosts book it.
struct Lease {
    kind: Kind,
    lost: Option<LostNotify>,
    /// Set when the lease is lost: wakes a job waiting on it.
    cancel: watch::Sender<bool>,
}

/// One worker host.
struct Host {
    client: WorkerClient<Channel>,
    info: Option<pb::HostInfo>,
    up: bool,
    misses: u32,
    /// Slots leased or being leased, per kind.
    claimed: PerKind<u32>,
    leases: HashMap<u64, Lease>,
    /// Counts the times it went down: a slot being configured there gives up when it moves.
    downs: watch::Sender<u64>,
}

/// A slot reserved on a host for a lease being configured.
pub(super) struct Reserved {
    pub addr: SocketAddr,
    pub client: WorkerClient<Channel>,
    /// Changes if the host goes down meanwhile.
    pub downs: watch::Receiver<u64>,
}

impl Host {
    fn slots(&self, kind: Kind) -> u32 {
        self.info.as_ref().map_or(0, |i| match kind {
            Kind::Cpu => i.cpu_slots,
            Kind::Fpga => i.fpga_slots,
        })
    }

    fn free(&self, kind: Kind) -> u32 {
        if self.up { self.slots(kind).saturating_sub(self.claimed[kind]) } else { 0 }
    }
}

/// A host as the server's metrics show it.
#[derive(Clone, Debug, PartialEq)]
pub struct HostView {
    /// Its address.
    pub addr: SocketAddr,
    /// Answering health checks.
    pub up: bool,
    /// Its slots per kind (0 until it first answered).
    pub slots: PerKind<u32>,
    /// Slots leased per kind.
    pub leased: PerKind<u32>,
}

#[derive(Default)]
struct State {
    hosts: BTreeMap<SocketAddr, Host>,
    /// Per source, what it last resolved to.
    resolved: Vec<BTreeSet<SocketAddr>>,
    /// Hosts that went down so far (the leases lost with them are counted by their pools).
    hosts_lost: u64,
}

pub(super) struct Inner {
    handle: Handle,
    runtime: Option<Runtime>,
    cfg: RemoteConfig,
    tls: Option<ClientTlsConfig>,
    /// This scheduler process, as hosts know its leases.
    pub(super) session: u64,
    state: Mutex<State>,
    /// Told the FPGA slots of the hosts that are up whenever that changes.
    capacity: Mutex<Option<CapacityNotify>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Dropped from anywhere (a pool's thread, inside a runtime): never block on the client's.
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

/// The scheduler's worker hosts: cheap to clone, shared by every pool and remote slot.
#[derive(Clone)]
pub struct Hosts {
    pub(super) inner: Arc<Inner>,
}

impl std::fmt::Debug for Hosts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Hosts({} sources)", self.inner.cfg.sources.len())
    }
}

impl Hosts {
    /// Starts finding and checking the hosts of `cfg`; returns after the first round, so the hosts
    /// that answer at once are up.
    pub fn start(cfg: RemoteConfig) -> Result<Hosts, HostsError> {
        if cfg.sources.is_empty() {
            return Err(HostsError::NoSource);
        }
        let tls = match &cfg.tls {
            Some((files, name)) => Some(files.client(name)?),
            None => None,
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("spork-remote")
            .enable_all()
            .build()
            .map_err(HostsError::Runtime)?;
        let session = rand::random::<u64>() | 1;
        let state = State { resolved: vec![BTreeSet::new(); cfg.sources.len()], ..State::default() };
        let inner = Arc::new(Inner {
            handle: runtime.handle().clone(),
            runtime: Some(runtime),
            cfg,
            tls,
            session,
            state: Mutex::new(state),
            capacity: Mutex::new(None),
        });
        let hosts = Hosts { inner };
        hosts.block_on(hosts.resolve())?;
        hosts.block_on(hosts.check_all());
        let weak = Arc::downgrade(&hosts.inner);
        hosts.inner.handle.spawn(maintain(weak));
        Ok(hosts)
    }

    /// Runs `f` to completion on the client's threads (from a worker's own thread).
    pub(super) fn block_on<F: Future>(&self, f: F) -> F::Output {
        self.inner.handle.block_on(f)
    }

    /// Spawns `f` on the client's threads.
    pub(super) fn spawn<F: Future<Output = ()> + Send + 'static>(&self, f: F) {
        self.inner.handle.spawn(f);
    }

    /// Tells `f` the FPGA slots of the hosts that are up, now and whenever it changes.
    pub fn on_capacity(&self, f: CapacityNotify) {
        let n = self.capacity();
        f(n);
        *self.inner.capacity.lock().unwrap_or_else(PoisonError::into_inner) = Some(f);
    }

    /// FPGA slots on the hosts that are up.
    pub fn capacity(&self) -> u32 {
        self.lock().hosts.values().filter(|h| h.up).map(|h| h.slots(Kind::Fpga)).sum()
    }

    /// Every host, and how many times one went down.
    pub fn snapshot(&self) -> (Vec<HostView>, u64) {
        let st = self.lock();
        let views = st
            .hosts
            .iter()
            .map(|(&addr, h)| HostView {
                addr,
                up: h.up,
                slots: PerKind::new(h.slots(Kind::Cpu), h.slots(Kind::Fpga)),
                leased: h.claimed,
            })
            .collect();
        (views, st.hosts_lost)
    }

    /// Reserves a free `kind` slot on the host with the most free, for a lease being configured.
    pub(super) fn reserve(&self, kind: Kind) -> Option<Reserved> {
        let mut st = self.lock();
        let (&addr, host) = st
            .hosts
            .iter_mut()
            .filter(|(_, h)| h.free(kind) > 0)
            .max_by_key(|(a, h)| (h.free(kind), std::cmp::Reverse(**a)))?;
        host.claimed[kind] += 1;
        Some(Reserved { addr, client: host.client.clone(), downs: host.downs.subscribe() })
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

    /// Checks `addr` now (a job's connection broke); true if it answered, else it is down now.
    pub(super) fn check_now(&self, addr: SocketAddr, why: &str) -> bool {
        let Some(client) = self.lock().hosts.get(&addr).map(|h| h.client.clone()) else { return false };
        let answer = self.block_on(health(client, self.inner.session, self.inner.cfg.health_timeout));
        match answer {
            Ok(reply) => {
                self.on_health(addr, Ok(reply));
                true
            }
            Err(e) => {
                self.down(addr, &format!("{why}; a health check failed: {e}"));
                false
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic mid-update leaves whole values behind: the books stay usable.
        self.inner.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn capacity_changed(&self) {
        let n = self.capacity();
        if let Some(f) = self.inner.capacity.lock().unwrap_or_else(PoisonError::into_inner).as_ref() {
            f(n);
        }
    }

    /// Takes `addr` down: every lease on it is lost.
    fn down(&self, addr: SocketAddr, why: &str) {
        let lost: Vec<Lease> = {
            let mut st = self.lock();
            let Some(h) = st.hosts.get_mut(&addr) else { return };
            let was_up = std::mem::replace(&mut h.up, false);
            h.downs.send_modify(|n| *n += 1);
            h.claimed = PerKind::new(0, 0);
            let lost: Vec<Lease> = h.leases.drain().map(|(_, l)| l).collect();
            st.hosts_lost += u64::from(was_up);
            lost
        };
        if !lost.is_empty() {
            tracing::warn!("worker host {addr} is down ({why}): {} slots lost", lost.len());
        }
        for l in lost {
            lose(l, format!("worker host {addr} is down: {why}"));
        }
        self.capacity_changed();
    }

    /// A health check's answer (or its failure).
    fn on_health(&self, addr: SocketAddr, answer: Result<pb::HealthReply, String>) {
        let reply = match answer {
            Ok(r) => r,
            Err(e) => {
                let down = {
                    let mut st = self.lock();
                    let Some(h) = st.hosts.get_mut(&addr) else { return };
                    h.misses += 1;
                    h.up && h.misses >= self.inner.cfg.misses
                };
                if down {
                    self.down(
                        addr,
                        &format!("{} health checks failed, the last: {e}", self.inner.cfg.misses),
                    );
                }
                return;
            }
        };
        let (gone, stale, joined) = {
            let mut st = self.lock();
            let Some(h) = st.hosts.get_mut(&addr) else { return };
            h.misses = 0;
            let held: BTreeSet<u64> = reply.leases.iter().copied().collect();
            // A lease we hold that the host no longer does (it restarted between two checks).
            let gone: Vec<u64> = h.leases.keys().filter(|l| !held.contains(l)).copied().collect();
            let gone: Vec<Lease> = gone.iter().filter_map(|l| h.leases.remove(l)).collect();
            for l in &gone {
                h.claimed[l.kind] = h.claimed[l.kind].saturating_sub(1);
            }
            // Leases the host holds for us that we do not (lost while it was away): freed.
            let stale: Vec<u64> = held.iter().filter(|l| !h.leases.contains_key(l)).copied().collect();
            let joined = !h.up && h.info.is_some();
            h.up |= h.info.is_some();
            (gone, stale, joined)
        };
        for l in gone {
            lose(l, format!("worker host {addr} no longer holds the slot (it restarted)"));
        }
        for lease in stale {
            self.release_stale(addr, lease);
        }
        if joined {
            tracing::info!("worker host {addr} is up");
            self.capacity_changed();
        }
    }

    fn release_stale(&self, addr: SocketAddr, lease: u64) {
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

    /// Resolves every source: new addresses become hosts (down until described), addresses no
    /// source gives any more leave (DNS sources only).
    async fn resolve(&self) -> Result<(), HostsError> {
        let mut found = Vec::new();
        for s in &self.inner.cfg.sources {
            found.push(s.resolve().await.map_err(|e| (s.to_string(), e)));
        }
        let mut added = Vec::new();
        let mut left = Vec::new();
        {
            let mut st = self.lock();
            for (i, f) in found.into_iter().enumerate() {
                match f {
                    Ok(addrs) => st.resolved[i] = addrs,
                    Err((s, e)) => tracing::warn!("worker source {s} does not resolve: {e}"),
                }
            }
            let wanted: BTreeSet<SocketAddr> = st.resolved.iter().flatten().copied().collect();
            for &addr in &wanted {
                if !st.hosts.contains_key(&addr) {
                    added.push(addr);
                }
            }
            let kept: BTreeSet<SocketAddr> = self
                .inner
                .cfg
                .sources
                .iter()
                .zip(&st.resolved)
                .filter(|(s, _)| s.is_static())
                .flat_map(|(_, r)| r.iter().copied())
                .collect();
            left.extend(st.hosts.keys().filter(|a| !wanted.contains(a) && !kept.contains(a)).copied());
        }
        for addr in added {
            let client = self.client(addr)?;
            let host = Host {
                client,
                info: None,
                up: false,
                misses: 0,
                claimed: PerKind::new(0, 0),
                leases: HashMap::new(),
                downs: watch::channel(0).0,
            };
            self.lock().hosts.insert(addr, host);
        }
        for addr in left {
            self.down(addr, "it left DNS");
            self.lock().hosts.remove(&addr);
        }
        Ok(())
    }

    fn client(&self, addr: SocketAddr) -> Result<WorkerClient<Channel>, HostsError> {
        let scheme = if self.inner.tls.is_some() { "https" } else { "http" };
        let mut endpoint = Endpoint::from_shared(format!("{scheme}://{addr}"))
            .map_err(|e| HostsError::Runtime(std::io::Error::other(e)))?
            .connect_timeout(self.inner.cfg.health_timeout)
            .tcp_nodelay(true)
            .http2_keep_alive_interval(self.inner.cfg.health_every)
            .keep_alive_timeout(self.inner.cfg.health_timeout)
            .keep_alive_while_idle(true);
        match &self.inner.tls {
            Some(tls) => {
                endpoint = endpoint
                    .tls_config(tls.clone())
                    .map_err(|e| HostsError::Runtime(std::io::Error::other(e)))?;
            }
            None => plaintext_allowed(addr, self.inner.cfg.insecure)?,
        }
        Ok(WorkerClient::new(endpoint.connect_lazy()).max_decoding_message_size(256 << 20))
    }

    /// One health check of every host, at once; a host answering for the first time is described.
    async fn check_all(&self) {
        let targets: Vec<(SocketAddr, WorkerClient<Channel>, bool)> =
            self.lock().hosts.iter().map(|(&a, h)| (a, h.client.clone(), h.info.is_none())).collect();
        let mut checks = tokio::task::JoinSet::new();
        let (session, timeout) = (self.inner.session, self.inner.cfg.health_timeout);
        for (addr, client, describe) in targets {
            checks.spawn(async move {
                let info = if describe { Some(describe_host(client.clone(), timeout).await) } else { None };
                (addr, info, health(client, session, timeout).await)
            });
        }
        while let Some(Ok((addr, info, answer))) = checks.join_next().await {
            match info {
                Some(Ok(info)) => {
                    if let Some(h) = self.lock().hosts.get_mut(&addr) {
                        h.info = Some(info);
                    }
                }
                Some(Err(e)) => {
                    self.on_health(addr, Err(e));
                    continue;
                }
                None => {}
            }
            self.on_health(addr, answer);
        }
    }
}

/// Reports a lease lost, once.
fn lose(mut l: Lease, why: String) {
    let _ = l.cancel.send(true);
    if let Some(f) = l.lost.take() {
        f(why);
    }
}

async fn health(
    mut c: WorkerClient<Channel>,
    session: u64,
    timeout: Duration,
) -> Result<pb::HealthReply, String> {
    match tokio::time::timeout(timeout, c.health(pb::HealthRequest { session })).await {
        Ok(Ok(r)) => Ok(r.into_inner()),
        Ok(Err(status)) => Err(format!("{}: {}", status.code(), status.message())),
        Err(_) => Err(format!("no answer within {timeout:?}")),
    }
}

async fn describe_host(mut c: WorkerClient<Channel>, timeout: Duration) -> Result<pb::HostInfo, String> {
    match tokio::time::timeout(timeout, c.describe(pb::DescribeRequest {})).await {
        Ok(Ok(r)) => Ok(r.into_inner()),
        Ok(Err(status)) => Err(format!("{}: {}", status.code(), status.message())),
        Err(_) => Err(format!("no answer within {timeout:?}")),
    }
}

/// Health checks and re-resolution until the hosts are dropped.
async fn maintain(weak: Weak<Inner>) {
    let Some(cfg) = weak.upgrade().map(|i| i.cfg.clone()) else { return };
    let mut health = tokio::time::interval(cfg.health_every);
    let mut resolve = tokio::time::interval(cfg.resolve_every);
    health.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = health.tick() => {
                let Some(inner) = weak.upgrade() else { return };
                Hosts { inner }.check_all().await;
            }
            _ = resolve.tick() => {
                let Some(inner) = weak.upgrade() else { return };
                if let Err(e) = (Hosts { inner }).resolve().await {
                    tracing::warn!("worker hosts: {e}");
                }
            }
        }
    }
}
