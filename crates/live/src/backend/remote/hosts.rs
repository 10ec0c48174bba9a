//! The worker hosts a scheduler knows: found from its sources (re-resolved every `resolve_every`),
//! health-checked every `health_every`, with the slots leased on each ([`super::leases`] books them,
//! reconciled here with each health answer). A host that stops
//! answering (`misses` checks in a row, or at once when a job's connection breaks and a check fails)
//! or leaves DNS goes down: every lease on it is reported lost (its pool fails the worker through
//! the engine and re-runs its requests) and its slots leave the capacity. When it answers again its
//! slots come back as idle capacity, and what it still held for us is released. A host that
//! answers health checks but not a job, or answers one with what the job cannot produce, is
//! quarantined: down like a dead one, and kept down for [`QUARANTINE`] however it answers. A host
//! of another worker API version is refused (never up) until it runs this scheduler's version.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use tokio::runtime::{Handle, Runtime};
use tokio::sync::{Semaphore, watch};
use tonic::transport::{Channel, ClientTlsConfig, Endpoint};

use super::leases::{Lease, lose};
use super::source::Source;
use crate::worker_api::tls::{TlsError, TlsFiles, plaintext_allowed};
use crate::worker_api::wire::pb::worker_client::WorkerClient;
use crate::worker_api::wire::{self, pb};
use spork_core::model::{Kind, PerKind};

/// A remote job's fixed allowance beyond its expected time (see [`RemoteConfig::job_timeout`]): the
/// serving runtime's kernel timeout, so a remote job is never given up sooner than a local board's.
pub const JOB_TIMEOUT: Duration = Duration::from_secs(10);

/// One remote answer in this many is held to the reference here (see [`RemoteConfig::audit_one_in`]):
/// about 3% more reference work on this machine for the slots whose answers nothing else checks.
pub const AUDIT_ONE_IN: u32 = 32;

/// The most answer bytes one worker host may have in flight to this scheduler at once, over all
/// the slots leased on it (see [`RemoteConfig::decode_per_host`]).
pub const DECODE_PER_HOST: u64 = 256 << 20;

/// How long a quarantined host (a job unanswered, or an answer its job cannot have) stays down
/// whatever it answers: long enough that it does not take a slot, hang or spoil a job and come back
/// every health check, short enough that a host that recovered rejoins without a restart here.
pub const QUARANTINE: Duration = Duration::from_secs(30);

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
    /// A remote job waits at most this plus four times its expected time (at the scheduler's
    /// measured speed) for its answer; past that its host is quarantined as stuck and the job is
    /// lost (re-run elsewhere). A job's reported board time is bounded the same way.
    pub job_timeout: Duration,
    /// One answer in this many from a CPU slot or an emulated board (whose answers nothing else
    /// checks) is compared with the reference here; a difference quarantines the host. 0: none.
    pub audit_one_in: u32,
    /// The most bytes of answers one host may have in flight at once, however many slots it
    /// claims: each job holds its stream's decode bound (at least its answer's largest encoding,
    /// [`crate::datapath::work::Payload::answer_wire_max`]) from this budget until answered, and a
    /// message past its stream's bound is refused before it is read.
    pub decode_per_host: u64,
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
            job_timeout: JOB_TIMEOUT,
            audit_one_in: AUDIT_ONE_IN,
            decode_per_host: DECODE_PER_HOST,
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

/// Told the FPGA slots of the hosts that are up.
pub type CapacityNotify = Box<dyn Fn(u32) + Send>;

/// One worker host.
pub(super) struct Host {
    pub(super) client: WorkerClient<Channel>,
    pub(super) info: Option<pb::HostInfo>,
    pub(super) up: bool,
    pub(super) misses: u32,
    /// Slots leased or being leased, per kind.
    pub(super) claimed: PerKind<u32>,
    pub(super) leases: HashMap<u64, Lease>,
    /// Counts the times it went down: a slot being configured there gives up when it moves.
    pub(super) downs: watch::Sender<u64>,
    /// Quarantined until then: answering health checks does not bring it up.
    pub(super) held_until: Option<Instant>,
    /// Why it is refused (a worker API version skew), as last logged.
    pub(super) refused: Option<String>,
    /// Its answers' decode budget in KiB ([`RemoteConfig::decode_per_host`]).
    pub(super) decode: Arc<Semaphore>,
}

impl Host {
    fn slots(&self, kind: Kind) -> u32 {
        self.info.as_ref().map_or(0, |i| match kind {
            Kind::Cpu => i.cpu_slots,
            Kind::Fpga => i.fpga_slots,
        })
    }

    pub(super) fn free(&self, kind: Kind) -> u32 {
        if self.up { self.slots(kind).saturating_sub(self.claimed[kind]) } else { 0 }
    }

    /// Whether it may be up: described, and not quarantined.
    fn admissible(&self, now: Instant) -> bool {
        self.info.is_some() && self.held_until.is_none_or(|t| now >= t)
    }
}

/// What the remote slots made of their hosts' answers, for the server's metrics.
#[derive(Default)]
pub(super) struct Counts {
    /// Answers compared with the reference.
    pub audited: AtomicU64,
    /// Of those, answers that differed.
    pub mismatched: AtomicU64,
    /// Answers refused unchecked: wrong kind or length, impossible board time, malformed.
    pub refused: AtomicU64,
    /// Jobs a host did not answer in time.
    pub timed_out: AtomicU64,
}

impl Counts {
    /// Adds one to `c`.
    pub fn add(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
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
pub(super) struct State {
    pub(super) hosts: BTreeMap<SocketAddr, Host>,
    /// Per source, what it last resolved to.
    pub(super) resolved: Vec<BTreeSet<SocketAddr>>,
    /// Hosts that went down so far (the leases lost with them are counted by their pools).
    pub(super) hosts_lost: u64,
}

pub(super) struct Inner {
    handle: Handle,
    runtime: Option<Runtime>,
    pub(super) cfg: RemoteConfig,
    tls: Option<ClientTlsConfig>,
    /// This scheduler process, as hosts know its leases: random, so another scheduler cannot guess it.
    pub(super) session: u64,
    /// What the slots made of the answers.
    pub(super) counts: Counts,
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
        // From the thread's CSPRNG: a host takes jobs only for the session that took their lease.
        let session = rand::random::<u64>() | 1;
        let state = State { resolved: vec![BTreeSet::new(); cfg.sources.len()], ..State::default() };
        let inner = Arc::new(Inner {
            handle: runtime.handle().clone(),
            runtime: Some(runtime),
            cfg,
            tls,
            session,
            counts: Counts::default(),
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

    /// Remote answers compared with the reference here (one in `audit_one_in`).
    pub fn answers_audited(&self) -> u64 {
        self.inner.counts.audited.load(Ordering::Relaxed)
    }

    /// Audited remote answers that differed from the reference (each quarantined its host).
    pub fn answer_mismatches(&self) -> u64 {
        self.inner.counts.mismatched.load(Ordering::Relaxed)
    }

    /// Remote answers refused without a reference: of the wrong kind or length for their job, with an
    /// impossible board time, or malformed (each quarantined its host).
    pub fn bad_answers(&self) -> u64 {
        self.inner.counts.refused.load(Ordering::Relaxed)
    }

    /// Remote jobs not answered within their bound (each quarantined its host as stuck).
    pub fn job_timeouts(&self) -> u64 {
        self.inner.counts.timed_out.load(Ordering::Relaxed)
    }

    /// Why `addr` is refused (it speaks another worker API version), if it is.
    pub fn refusal(&self, addr: SocketAddr) -> Option<String> {
        self.lock().hosts.get(&addr).and_then(|h| h.refused.clone())
    }

    /// The bound on a remote job's wait and board time: see [`RemoteConfig::job_timeout`].
    pub(super) fn job_timeout(&self) -> Duration {
        self.inner.cfg.job_timeout
    }

    /// See [`RemoteConfig::decode_per_host`].
    pub(super) fn decode_per_host(&self) -> u64 {
        self.inner.cfg.decode_per_host
    }

    /// See [`RemoteConfig::audit_one_in`].
    pub(super) fn audit_one_in(&self) -> u32 {
        self.inner.cfg.audit_one_in
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

    /// Takes `addr` down and keeps it down for [`QUARANTINE`]: it answers health checks but left a
    /// job unanswered, or answered one with what the job cannot have. Its leases are lost like a
    /// dead host's (their pools fail the workers through the engine and re-run their requests), and
    /// it is not handed new slots to hang or spoil meanwhile. The `spared` lease, whose job fails
    /// with the reason itself (a refused answer goes through the engine as such), is not told.
    pub(super) fn quarantine(&self, addr: SocketAddr, why: &str, spared: Option<u64>) {
        if let Some(h) = self.lock().hosts.get_mut(&addr) {
            h.held_until = Some(Instant::now() + QUARANTINE);
            if let Some(id) = spared
                && let Some(l) = h.leases.get_mut(&id)
            {
                l.lost = None;
            }
        }
        tracing::warn!("worker host {addr} is quarantined for {QUARANTINE:?}: {why}");
        self.down(addr, &format!("quarantined: {why}"));
    }

    /// Books why `addr` is refused, logging each new reason once.
    fn refuse(&self, addr: SocketAddr, why: &str) {
        let mut st = self.lock();
        let Some(h) = st.hosts.get_mut(&addr) else { return };
        if h.refused.as_deref() != Some(why) {
            tracing::error!("{why}");
            h.refused = Some(why.to_string());
        }
    }

    /// A health answer from a host that restarted with another worker API version: refused, down,
    /// and described again (and so refused again) until it runs ours.
    fn skewed(&self, addr: SocketAddr, reply: &pb::HealthReply) -> bool {
        let peer = format!("worker host {addr}");
        let Some(why) = wire::version_skew(&peer, reply.api_version, "", "scheduler") else { return false };
        self.refuse(addr, &why);
        if let Some(h) = self.lock().hosts.get_mut(&addr) {
            h.info = None;
        }
        self.down(addr, &why);
        true
    }

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, State> {
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
            Ok(r) if self.skewed(addr, &r) => return,
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
            // Leases the host holds for us that we do not (lost while it was away): freed. Not while
            // a slot is being configured there: its lease may be the host's before its reply is
            // booked here (releasing it lost the job sent next: the hostile-worker tests caught it).
            let claimed: u32 = Kind::ALL.iter().map(|&k| h.claimed[k]).sum();
            let configuring = claimed as usize > h.leases.len();
            let stale: Vec<u64> = match configuring {
                true => Vec::new(),
                false => held.iter().filter(|l| !h.leases.contains_key(l)).copied().collect(),
            };
            let admissible = h.admissible(Instant::now());
            let joined = !h.up && admissible;
            h.up |= admissible;
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
                held_until: None,
                refused: None,
                decode: Arc::new(Semaphore::new(kib(self.inner.cfg.decode_per_host) as usize)),
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
        // Health and configure replies are small; a job stream sets its own bound (see `slot.rs`).
        Ok(WorkerClient::new(endpoint.connect_lazy()).max_decoding_message_size(1 << 20))
    }

    /// One health check of every host, at once; a host answering for the first time is described.
    async fn check_all(&self) {
        let targets: Vec<(SocketAddr, WorkerClient<Channel>, bool)> =
            self.lock().hosts.iter().map(|(&a, h)| (a, h.client.clone(), h.info.is_none())).collect();
        let mut checks = tokio::task::JoinSet::new();
        let (session, timeout) = (self.inner.session, self.inner.cfg.health_timeout);
        for (addr, client, describe) in targets {
            checks.spawn(async move {
                let info =
                    if describe { Some(describe_host(addr, client.clone(), timeout).await) } else { None };
                (addr, info, health(client, session, timeout).await)
            });
        }
        while let Some(Ok((addr, info, answer))) = checks.join_next().await {
            match info {
                Some(Ok(info)) => {
                    if let Some(h) = self.lock().hosts.get_mut(&addr) {
                        h.info = Some(info);
                        h.refused = None;
                    }
                }
                Some(Err(Undescribed::Skew(why))) => {
                    self.refuse(addr, &why);
                    self.on_health(addr, Err(why));
                    continue;
                }
                Some(Err(Undescribed::Unreachable(e))) => {
                    self.on_health(addr, Err(e));
                    continue;
                }
                None => {}
            }
            self.on_health(addr, answer);
        }
    }
}

/// `bytes` in whole KiB, rounded up: the unit of a host's decode budget (a semaphore's permits).
pub(super) fn kib(bytes: u64) -> u32 {
    u32::try_from(bytes.div_ceil(1024)).unwrap_or(u32::MAX)
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

/// Why a host could not be described.
enum Undescribed {
    /// It did not answer: a failed health check.
    Unreachable(String),
    /// It speaks another worker API version, or refused ours: it stays down until upgraded.
    Skew(String),
}

/// What the host at `addr` offers, once both sides' API versions agree.
async fn describe_host(
    addr: SocketAddr,
    mut c: WorkerClient<Channel>,
    timeout: Duration,
) -> Result<pb::HostInfo, Undescribed> {
    match tokio::time::timeout(timeout, c.describe(wire::describe_request())).await {
        Ok(Ok(r)) => {
            let info = r.into_inner();
            let peer = format!("worker host {addr}");
            match wire::version_skew(&peer, info.api_version, &info.version, "scheduler") {
                Some(why) => Err(Undescribed::Skew(why)),
                None => Ok(info),
            }
        }
        Ok(Err(status)) if status.code() == tonic::Code::FailedPrecondition => {
            Err(Undescribed::Skew(format!("worker host {addr} refused this scheduler: {}", status.message())))
        }
        Ok(Err(status)) => Err(Undescribed::Unreachable(format!("{}: {}", status.code(), status.message()))),
        Err(_) => Err(Undescribed::Unreachable(format!("no answer within {timeout:?}"))),
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
